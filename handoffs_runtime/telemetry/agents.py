"""Traced variants of the team's agents: a span per agent's handling, a trace per turn.

Each variant only adds to ``on_message_impl`` (where a message arrives) and ``publish_message`` (where one
leaves), so the agents' own code is untouched:

- ``UserAgent``: publishing the person's message starts the turn (a new trace) and puts its context in the
  ``UserTask``; the reply (or an ``Undeliverable``) arriving ends it.
- ``AIAgent``, ``HumanAgent``, ``WorkerAgent``: handling a ``UserTask`` or ``WorkerTask`` is an
  ``invoke_agent <name>`` span under the context the message carries; what they publish in the turn
  carries the turn's context on, and each ``HandoffEvent`` they publish becomes a ``handoff`` span.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from autogen_core import Agent, AgentRuntime, MessageContext, TopicId
from opentelemetry.trace import Span

from handoffs_runtime.agents.ai import AIAgent
from handoffs_runtime.agents.human import HumanAgent
from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.agents.user import UserAgent
from handoffs_runtime.agents.worker import WorkerAgent
from handoffs_runtime.messages import (
    AgentResponse,
    HandoffEvent,
    Undeliverable,
    UserLogin,
    UserTask,
    WorkerTask,
)
from handoffs_runtime.telemetry.propagation import TraceCarrier, carrier_of, context_of, passed_on
from handoffs_runtime.usage import Usage

if TYPE_CHECKING:
    from autogen_core import CancellationToken

    from handoffs_runtime.telemetry.core import Telemetry

_turn_trace: ContextVar[TraceCarrier | None] = ContextVar("handoffs_turn_trace", default=None)
"""The context of the turn being handled in this task: what the messages it publishes carry on."""


class _Traced(SessionAgent):
    """Set by the factory right after construction."""

    telemetry: Telemetry
    trace_name: str
    trace_team: str


class _TracedTaskAgent(_Traced):
    async def on_message_impl(self, message: Any, ctx: MessageContext) -> Any:
        if isinstance(message, UserTask):
            session, hop = self.id.key, max(len(message.turn_path) - 1, 0)
        elif isinstance(message, WorkerTask):
            session, hop = message.session_id, 0
        else:
            return await super().on_message_impl(message, ctx)
        carrier = passed_on(message.trace)  # from another process, maybe: only a valid parent goes on
        token = _turn_trace.set(carrier)
        try:
            with self.telemetry.agent_span(
                self.trace_name, session, self.trace_team, context_of(carrier), hop
            ):
                return await super().on_message_impl(message, ctx)
        finally:
            _turn_trace.reset(token)

    async def publish_message(
        self,
        message: Any,
        topic_id: TopicId,
        *,
        cancellation_token: CancellationToken | None = None,
    ) -> None:
        if isinstance(message, (UserTask, AgentResponse)) and message.trace is None:
            message.trace = _turn_trace.get()
        elif isinstance(message, HandoffEvent):
            self.telemetry.record_handoff(message, self.trace_team)
        await super().publish_message(message, topic_id, cancellation_token=cancellation_token)


class TracedAIAgent(_TracedTaskAgent, AIAgent):
    pass


class TracedHumanAgent(_TracedTaskAgent, HumanAgent):
    pass


class TracedWorkerAgent(_TracedTaskAgent, WorkerAgent):
    pass


class TracedUserAgent(_Traced, UserAgent):
    _turn: tuple[Span, float, Usage] | None = None
    """The open turn: its span, when it started, and the session's token usage when it started."""

    async def on_message_impl(self, message: Any, ctx: MessageContext) -> Any:
        if isinstance(message, AgentResponse):
            self._end_turn(message.reply_to_topic_type, None, message.usage)
        elif isinstance(message, Undeliverable):
            reason = message.reason or f"{message.topic_type} is not available"
            self._end_turn(message.topic_type, reason, None)
        elif isinstance(message, UserLogin):
            self.telemetry.active_sessions.add(1, {"handoffs.team": self.trace_team})
        return await super().on_message_impl(message, ctx)

    async def publish_message(
        self,
        message: Any,
        topic_id: TopicId,
        *,
        cancellation_token: CancellationToken | None = None,
    ) -> None:
        if isinstance(message, UserTask):
            if self._turn is not None:  # the customer wrote again in a live conversation: a turn each
                self._end_turn(topic_id.type, None, None)
            last = message.context[-1].content if message.context else ""
            span = self.telemetry.start_turn(
                self.id.key, self.trace_team, topic_id.type, last if isinstance(last, str) else ""
            )
            self._turn = (span, time.monotonic(), message.usage)
            message.trace = carrier_of(span)
        await super().publish_message(message, topic_id, cancellation_token=cancellation_token)

    def _end_turn(self, replied_by: str, error: str | None, usage: Usage | None) -> None:
        """``usage`` is the session's count after the turn; ``None`` when the turn brought none back."""
        if self._turn is not None:
            span, started, before = self._turn
            self._turn = None
            tokens = usage - before if usage is not None else None
            self.telemetry.end_turn(span, self.trace_team, replied_by, error, started, tokens)


_TRACED: dict[type[Agent], type[_Traced]] = {
    AIAgent: TracedAIAgent,
    HumanAgent: TracedHumanAgent,
    WorkerAgent: TracedWorkerAgent,
    UserAgent: TracedUserAgent,
}


async def register_traced(
    runtime: AgentRuntime, telemetry: Telemetry, cls: type[Agent], agent_type: str, config: Any, team: str
) -> None:
    """Register the traced variant of ``cls``, built from ``config`` (an agent config with a ``name``).

    It is registered as itself: autogen-ext's gRPC runtime accepts only the exact class it was told.
    """
    traced = _TRACED.get(cls)
    if traced is None:
        known = ", ".join(c.__name__ for c in _TRACED)
        raise TypeError(f"no traced variant of {cls.__name__}; there is one of {known}")

    def build() -> _Traced:
        agent = traced(config)
        agent.telemetry = telemetry
        agent.trace_name = config.name
        agent.trace_team = team
        return agent

    await traced.register(runtime, agent_type, build)
