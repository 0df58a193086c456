"""Topic-to-recipient lookup by topic type, for runtimes that open a new topic per agent per session.

autogen-core's ``SubscriptionManager`` matches each new topic id against every subscription and caches
the answer per topic id. A handoffs runtime creates a new topic id for every agent type in every session,
so that cache costs a full scan per topic and grows by one entry per topic, forever. Here the candidate
subscriptions are cached per topic *type* (a handful) and matched against the topic on each lookup; the
recipients and their order are the same as the stock manager's.
"""

from __future__ import annotations

from autogen_core import AgentId, Subscription, TopicId, TypeSubscription
from autogen_core._runtime_impl_helpers import SubscriptionManager


class TypeIndexedSubscriptions(SubscriptionManager):
    """A ``SubscriptionManager`` whose memory does not grow with the number of sessions."""

    def __init__(self) -> None:
        super().__init__()
        self._candidates: dict[str, list[Subscription]] = {}

    async def add_subscription(self, subscription: Subscription) -> None:
        await super().add_subscription(subscription)
        self._candidates.clear()

    async def remove_subscription(self, id: str) -> None:
        await super().remove_subscription(id)
        self._candidates.clear()

    def _candidates_for(self, topic_type: str) -> list[Subscription]:
        """The subscriptions that can match a topic of this type, in subscription order."""
        found = self._candidates.get(topic_type)
        if found is None:
            found = self._candidates[topic_type] = [
                s for s in self._subscriptions if (only := _topic_type(s)) is None or only == topic_type
            ]
        return found

    async def get_subscribed_recipients(self, topic: TopicId) -> list[AgentId]:
        recipients: list[AgentId] = []
        for subscription in self._candidates_for(topic.type):
            if type(subscription) is TypeSubscription:
                recipients.append(AgentId(subscription.agent_type, topic.source))
            elif subscription.is_match(topic):
                recipients.append(subscription.map_to_agent(topic))
        return recipients


def _topic_type(subscription: Subscription) -> str | None:
    """The one topic type a subscription can match, if it has one; a wrapper (``inner``) counts as its
    subscription. ``None``: it is checked against every topic, as is a ``TypeSubscription``
    subclass that overrides ``is_match``."""
    inner = getattr(subscription, "inner", subscription)
    if isinstance(inner, TypeSubscription) and type(inner).is_match is TypeSubscription.is_match:
        return inner.topic_type
    return None  # a subclass with its own is_match may match any topic type
