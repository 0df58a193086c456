"""Subscriptions for long-running processes: session placement, and no per-session cache.

autogen-core's ``SubscriptionManager`` caches the recipients of every topic id it has seen, one per
(topic type, session), for ever, and rebuilds that whole cache whenever a subscription is added or
removed. A host with chat front ends adds and removes subscriptions with every session, so the cache
made each new session slower than the last. ``IndexedSubscriptions`` keeps no per-session state: it
indexes subscriptions by topic type and matches each message against the few of its type.
"""

from __future__ import annotations

from collections import defaultdict

from autogen_core import AgentId, Subscription, TopicId, TypeSubscription
from autogen_core._runtime_impl_helpers import SubscriptionManager

from ..topics import accepts


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


def _topic_type(subscription: Subscription) -> str | None:
    """The one topic type a subscription can match, if it has one (else it is checked for every topic)."""
    inner = subscription.inner if isinstance(subscription, SessionSubscription) else subscription
    return inner.topic_type if isinstance(inner, TypeSubscription) else None


class IndexedSubscriptions(SubscriptionManager):
    """A ``SubscriptionManager`` without the per-topic cache (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._by_type: defaultdict[str, list[Subscription]] = defaultdict(list)
        self._other: list[Subscription] = []

    async def add_subscription(self, subscription: Subscription) -> None:
        if any(sub == subscription for sub in self._subscriptions):
            raise ValueError("Subscription already exists")
        self._subscriptions.append(subscription)
        topic_type = _topic_type(subscription)
        (self._by_type[topic_type] if topic_type is not None else self._other).append(subscription)

    async def remove_subscription(self, id: str) -> None:
        if not any(sub.id == id for sub in self._subscriptions):
            raise ValueError("Subscription does not exist")
        self._subscriptions = [s for s in self._subscriptions if s.id != id]
        for bucket in (*self._by_type.values(), self._other):
            bucket[:] = [s for s in bucket if s.id != id]
        for topic_type in [t for t, subs in self._by_type.items() if not subs]:
            del self._by_type[topic_type]

    async def get_subscribed_recipients(self, topic: TopicId) -> list[AgentId]:
        candidates = [*self._by_type.get(topic.type, ()), *self._other]
        return [s.map_to_agent(topic) for s in candidates if s.is_match(topic)]
