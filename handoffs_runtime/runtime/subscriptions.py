"""Topic-to-recipient lookup by topic type, for runtimes that open a new topic per agent per session.

autogen-core's ``SubscriptionManager`` matches each new topic id against every subscription and caches
the answer per topic id. A handoffs runtime creates a new topic id for every agent type in every session,
so that cache costs a full scan per topic and grows by one entry per topic, forever. Here the candidate
subscriptions are cached per topic *type* (a handful); the recipients and their order are the same as the
stock manager's. A stock ``TypeSubscription`` or ``TypePrefixSubscription`` matches by topic type alone,
so it is decided once per topic type; any other subscription is matched against each topic.
"""

from __future__ import annotations

from autogen_core import AgentId, Subscription, TopicId, TypePrefixSubscription, TypeSubscription

from handoffs_runtime.private import SubscriptionManager, is_valid_agent_type
from handoffs_runtime.topics import known_agent_id

_Candidate = str | Subscription
"""An agent type whose subscription matches every topic of the type at hand (its recipient is that type
with the topic's source), or a subscription to match against each topic."""


class TypeIndexedSubscriptions(SubscriptionManager):
    """A ``SubscriptionManager`` whose memory does not grow with the number of sessions."""

    def __init__(self) -> None:
        super().__init__()
        self._candidates: dict[str, list[_Candidate]] = {}

    async def add_subscription(self, subscription: Subscription) -> None:
        await super().add_subscription(subscription)
        self._candidates.clear()

    async def remove_subscription(self, id: str) -> None:
        await super().remove_subscription(id)
        self._candidates.clear()

    def _candidates_for(self, topic_type: str) -> list[_Candidate]:
        """What can match a topic of this type, in subscription order."""
        found = self._candidates.get(topic_type)
        if found is None:
            found = self._candidates[topic_type] = []
            for subscription in self.subscriptions:
                candidate = _candidate(subscription, topic_type)
                if candidate is not None:
                    found.append(candidate)
        return found

    async def get_subscribed_recipients(self, topic: TopicId) -> list[AgentId]:
        return self.recipients(topic)

    def recipients(self, topic: TopicId) -> list[AgentId]:
        """``get_subscribed_recipients`` without a coroutine: nothing here waits."""
        recipients: list[AgentId] = []
        source = topic.source
        for candidate in self._candidates_for(topic.type):
            if isinstance(candidate, str):
                recipients.append(known_agent_id(candidate, source))
            elif candidate.is_match(topic):
                recipients.append(candidate.map_to_agent(topic))
        return recipients


def _candidate(subscription: Subscription, topic_type: str) -> _Candidate | None:
    """What ``subscription`` is for topics of ``topic_type``: ``None`` if it matches none of them; its agent
    type if it is a stock ``TypeSubscription`` or ``TypePrefixSubscription`` that matches them all (their
    ``is_match`` reads the topic type only) and names a valid agent type; else itself, matched against each
    topic (a wrapper with ``inner`` counts as its inner subscription for the topic type)."""
    inner = getattr(subscription, "inner", subscription)
    kind = type(inner)
    if isinstance(inner, TypeSubscription) and kind.is_match is TypeSubscription.is_match:
        matches = inner.topic_type == topic_type
    elif isinstance(inner, TypePrefixSubscription) and kind.is_match is TypePrefixSubscription.is_match:
        matches = topic_type.startswith(inner.topic_type_prefix)
    else:  # another kind, or a subclass with its own is_match: it may match any topic
        return subscription
    if not matches:
        return None
    if type(subscription) in (TypeSubscription, TypePrefixSubscription):
        agent_type: str = subscription.agent_type  # type: ignore[attr-defined]
        if is_valid_agent_type(agent_type):
            return agent_type
    return subscription
