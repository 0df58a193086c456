"""``SessionAgent``: a ``RoutedAgent`` that is cheap to build, because a handoffs runtime builds many.

Every session gets its own instance of every agent type it touches. autogen-core's ``RoutedAgent``
finds its message handlers on each construction by walking ``dir(cls)`` (about 60 µs, a third of a
session's cost on the hot path); the handlers belong to the class, so here they are found once per class
and the routing table is shared by all instances. Routing itself is unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

from autogen_core import AgentInstantiationContext, MessageContext, MessageHandlerContext, RoutedAgent
from autogen_core._routed_agent import MessageHandler

_INSTANTIATING = AgentInstantiationContext._AGENT_INSTANTIATION_CONTEXT_VAR

HandlerTable = defaultdict[type[Any], list[MessageHandler[Any, Any, Any]]]


class SessionAgent(RoutedAgent):
    """Use like ``RoutedAgent``: decorate handlers with ``@message_handler``."""

    _handler_tables: ClassVar[dict[type[Any], HandlerTable]] = {}

    def __init__(self, description: str) -> None:
        cls = type(self)
        table = SessionAgent._handler_tables.get(cls)
        if table is None:
            table = defaultdict(list)
            for handler in cls._discover_handlers():
                for target_type in handler.target_types:
                    table[target_type].append(handler)
            SessionAgent._handler_tables[cls] = table
        self._handlers = table  # read only: RoutedAgent routes with .get()
        # What RoutedAgent.__init__ does after routing (BaseAgent.__init__), reading the instantiation
        # context once instead of three times.
        instantiating = _INSTANTIATING.get(None)
        if instantiating is not None:
            self._runtime, self._id = instantiating
        if not isinstance(description, str):
            raise ValueError("Agent description must be a string")
        self._description = description

    async def on_message_in_context(self, message: Any, ctx: MessageContext) -> Any:
        """``on_message_impl`` with ``MessageHandlerContext.agent_id()`` naming this agent while it handles
        the message. autogen's gRPC runtime leaves it unset, and a question relayed to the person must say
        which agent asks (the person's side accepts only the team's agents): ``WorkerRuntime`` routes its
        agents through this. The single-process runtimes set it themselves, at no extra cost."""
        acting = MessageHandlerContext._MESSAGE_HANDLER_CONTEXT.set(self.id)
        try:
            return await type(self).on_message_impl(self, message, ctx)
        finally:
            MessageHandlerContext._MESSAGE_HANDLER_CONTEXT.reset(acting)
