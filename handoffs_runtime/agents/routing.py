"""``SessionAgent``: a ``RoutedAgent`` that is cheap to build, because a handoffs runtime builds many.

Every session gets its own instance of every agent type it touches. autogen-core's ``RoutedAgent``
finds its message handlers on each construction by walking ``dir(cls)`` (about 60 µs, a third of a
session's cost on the hot path); the handlers belong to the class, so they are found once per class and
the routing table is shared by all instances (``private.TableSharingRoutedAgent``). Routing itself is
unchanged.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from autogen_core import CancellationToken, MessageContext, TopicId

from handoffs_runtime.private import MESSAGE_HANDLER_CONTEXT, TableSharingRoutedAgent


class SessionAgent(TableSharingRoutedAgent):
    """Use like ``RoutedAgent``: decorate handlers with ``@message_handler``.

    Its constructor (``TableSharingRoutedAgent``) sets autogen's private routing state, so it lives in
    the fenced module."""

    def publish_message(
        self, message: Any, topic_id: TopicId, *, cancellation_token: CancellationToken | None = None
    ) -> Coroutine[Any, Any, None]:
        """``BaseAgent.publish_message``: the runtime's publish, as this agent, without a coroutine around
        it (an agent publishes several messages per turn)."""
        return self.runtime.publish_message(
            message, topic_id, sender=self.id, cancellation_token=cancellation_token
        )

    async def on_message_in_context(self, message: Any, ctx: MessageContext) -> Any:
        """``on_message_impl`` with ``MessageHandlerContext.agent_id()`` naming this agent while it handles
        the message. autogen's gRPC runtime leaves it unset, and a question relayed to the person must say
        which agent asks (the person's side accepts only the team's agents): ``WorkerRuntime`` routes its
        agents through this. The single-process runtimes set it themselves, at no extra cost."""
        acting = MESSAGE_HANDLER_CONTEXT.set(self.id)
        try:
            return await type(self).on_message_impl(self, message, ctx)
        finally:
            MESSAGE_HANDLER_CONTEXT.reset(acting)
