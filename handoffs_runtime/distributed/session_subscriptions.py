"""Subscriptions for long-running processes: session placement, and no per-session cache.

autogen-core's ``SubscriptionManager`` caches the recipients of every topic id it has seen, one per
(topic type, session), for ever, and rebuilds that whole cache whenever a subscription is added or
removed. A host with chat front ends adds and removes subscriptions with every session, so the cache
made each new session slower than the last. ``IndexedSubscriptions`` (the single-process runtime's
``TypeIndexedSubscriptions``) keeps no per-session state; ``SessionSubscription`` narrows a subscription
to the sessions its agent type serves.
"""

from __future__ import annotations

from autogen_core import AgentId, Subscription, TopicId

from handoffs_runtime.runtime.subscriptions import TypeIndexedSubscriptions
from handoffs_runtime.topics import accepts


class SessionSubscription:
    """A subscription that delivers only the sessions its agent type accepts (``topics.accepts``)."""

    def __init__(self, inner: Subscription) -> None:
        self.inner = inner

    @property
    def id(self) -> str:
        return self.inner.id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionSubscription) and other.inner == self.inner

    def __hash__(self) -> int:
        return hash(self.inner.id)

    def is_match(self, topic_id: TopicId) -> bool:
        if not self.inner.is_match(topic_id):
            return False
        return accepts(self.inner.map_to_agent(topic_id).type, topic_id.source)

    def map_to_agent(self, topic_id: TopicId) -> AgentId:
        return self.inner.map_to_agent(topic_id)


IndexedSubscriptions = TypeIndexedSubscriptions
"""The manager hosts and workers use: the single-process runtime's, which keeps nothing per session."""
