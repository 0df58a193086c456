"""``AIAgent``: a specialist that answers with a model, runs its tools, and hands the conversation on.

One turn, as an explicit loop::

    model(system + context, tools + enabled handoffs)
      text            -> AgentResponse to the User topic (the person's next message comes back here)
      tool calls      -> run the regular ones (errors become tool results), then
                         one handoff call -> UserTask to the target's topic, same session; done
                         no handoff       -> ask the model again (at most ``max_tool_rounds`` times)

The loop itself is :class:`~handoffs_runtime.agents.toolloop.ToolLoop`, shared with ``WorkerAgent``.
Everything the model may get wrong (a malformed response, unknown tool, bad JSON, bad arguments, a tool
that raises, several handoffs, an empty reply, a model error or timeout) becomes a tool result or a clear
message; anything else that fails in a turn is logged and apologised for in ``handle_task``, so the
session goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_core import CancellationToken, FunctionCall, MessageContext, message_handler
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResult,
    LLMMessage,
    SystemMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel, ValidationError

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.agents.toolloop import (
    Step,
    ToolCalls,
    ToolLoop,
    describe_validation,
    error_result,
    parse_arguments,
)
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.handoffs.filters import nesting_filter
from handoffs_runtime.handoffs.handoff import (
    Handoff,
    HandoffContext,
    HandoffInputData,
    SessionContext,
    call_maybe_async,
)
from handoffs_runtime.handoffs.policy import LOOP_MESSAGE, TeamPolicy, loop_reason
from handoffs_runtime.messages import HandoffEvent, HandoffOutcome, UserTask, agent_response, user_task
from handoffs_runtime.models.failures import ModelProblem, explain_model_error
from handoffs_runtime.tools.context import ToolContext, set_tool_context
from handoffs_runtime.tools.effects import irreversible_names
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic
from handoffs_runtime.usage import BUDGET_REPLY, copy

logger = logging.getLogger("handoffs_runtime")

MODEL_ERROR_REPLY = "Sorry, I'm having trouble answering right now. Please try again in a moment."
EMPTY_REPLY = "Sorry, I don't have an answer to that. Could you put it another way?"
TOO_MANY_ROUNDS_REPLY = "Sorry, I couldn't finish that. Could you tell me again what you need?"


@dataclass(frozen=True)
class AIAgentConfig:
    """Everything an ``AIAgent`` of one type needs, built once per team and shared by all sessions."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    tools: Mapping[str, Tool] = field(default_factory=dict)
    handoffs: Mapping[str, Handoff] = field(default_factory=dict)
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    channel: Channel | None = None
    human_agent: str | None = None
    user_topic: str = USER
    description: str = ""
    tool_schemas: tuple[ToolSchema, ...] = field(init=False)
    handoff_names: frozenset[str] = field(init=False)
    loop: ToolLoop = field(init=False)
    """The model, its per-call timeout and the loop's rules (shared with ``WorkerAgent``)."""
    static_schemas: tuple[ToolSchema, ...] | None = field(init=False)
    """Every schema, when no handoff is enabled by a function: then nothing is computed per call."""

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # the documented way to derive fields of a frozen dataclass
        tool_schemas = tuple(t.schema for t in self.tools.values())
        set_field(self, "tool_schemas", tool_schemas)
        set_field(self, "handoff_names", frozenset(self.handoffs))
        loop = ToolLoop(
            self.name,
            self.system_message,
            self.model,
            self.policy,
            self.description,
            irreversible_names(self.tools.values()),  # the loop tells the model which ones they are
            shows_progress=True,
        )
        set_field(self, "loop", loop)
        static = all(h.always_enabled for h in self.handoffs.values())
        handoff_schemas = tuple(h.schema for h in self.handoffs.values())
        set_field(self, "static_schemas", tool_schemas + handoff_schemas if static else None)


@dataclass(slots=True)
class _Handoff:
    """A response's one handoff that will be carried out."""

    handoff: Handoff
    call: FunctionCall
    data: BaseModel | None
    said: str | None
    """What the model wrote next to the call: forwarded in the context and shown to the person."""


@dataclass(slots=True)
class _LoopStop:
    """A response's handoff that the loop guard refused: the turn ends with the team's fallback."""

    handoff: Handoff
    call: FunctionCall
    reason: str


class AIAgent(SessionAgent):
    """A model-backed specialist subscribed to its own topic type. See the module docstring."""

    def __init__(self, config: AIAgentConfig) -> None:
        super().__init__(config.description or config.name)
        self._config = config
        self._told: ModelProblem | None = None  # the model problem this session was last told about
        self._usage: dict[str, list[int]] = {}  # the session's token usage, this turn's included

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        """One turn. The one guard of the turn: whatever fails in it is logged and apologised for."""
        try:
            await self._turn(message, ctx)
        except Exception:
            logger.exception("turn of %s in session %s failed; apologising", self._config.name, self.id.key)
            await self._reply(message.context, MODEL_ERROR_REPLY)

    async def _turn(self, message: UserTask, ctx: MessageContext) -> None:
        config = self._config
        session = self.id.key
        history = message.context
        path = message.turn_path or [config.name]
        set_tool_context(
            ToolContext(session, config.name, config.channel, runtime=self.runtime, agent_id=self.id)
        )

        async def offer(conversation: list[LLMMessage]) -> tuple[Sequence[ToolSchema], frozenset[str]]:
            return await self._offer(session, conversation)

        async def run_calls(
            calls: ToolCalls, conversation: list[LLMMessage], enabled: frozenset[str]
        ) -> Step:
            return await self._run_calls(calls, session, conversation, enabled, path, ctx.cancellation_token)

        self._usage = copy(message.usage)
        end = await config.loop.run(history, session, offer, run_calls, ctx.cancellation_token, self._usage)
        new = end.new
        if end.kind == "text":
            if not end.text:
                logger.warning("empty model reply from %s in session %s", config.name, session)
            await self._reply(history + new, end.text or EMPTY_REPLY)
        elif isinstance(end.outcome, _Handoff):
            await self._hand_off(message, path, new, end.outcome)
        elif isinstance(end.outcome, _LoopStop):
            stop = end.outcome
            await self._stop_loop(message, path, new, stop.handoff, stop.call, stop.reason)
        elif end.kind == "over_budget":
            await self._reply(history + new, BUDGET_REPLY)
        elif end.kind == "model_failed":
            await self._reply(history + new, self._model_error_reply(end.exception))
        else:
            await self._reply(history + new, TOO_MANY_ROUNDS_REPLY)

    # --- the model ---------------------------------------------------------------------------------

    async def _offer(
        self, session: str, conversation: Sequence[LLMMessage]
    ) -> tuple[Sequence[ToolSchema], frozenset[str]]:
        """The tool schemas offered to the model now, and the names of the handoffs among them."""
        config = self._config
        if config.static_schemas is not None:
            return config.static_schemas, config.handoff_names
        ctx = SessionContext(session_id=session, agent=config.name, conversation=conversation)
        enabled = [h for h in config.handoffs.values() if await _is_enabled(h, ctx)]
        return config.tool_schemas + tuple(h.schema for h in enabled), frozenset(h.tool_name for h in enabled)

    def _model_error_reply(self, exc: BaseException | None) -> str:
        """What is wrong with the model, said once in full; the generic apology for transient failures."""
        problem = explain_model_error(exc) if exc is not None else None
        if problem is None:
            return MODEL_ERROR_REPLY
        if problem == self._told:
            return problem.again
        self._told = problem
        return problem.first

    # --- tool calls --------------------------------------------------------------------------------

    async def _run_calls(
        self,
        response: ToolCalls,
        session: str,
        conversation: list[LLMMessage],
        enabled: frozenset[str],
        path: list[str],
        cancellation_token: CancellationToken,
    ) -> Step:
        """Run the regular tools first, then decide on at most one handoff; every call gets a result."""
        config = self._config
        calls = response.calls
        results = await config.loop.run_tools(
            calls,
            config.tools,
            cancellation_token,
            handoffs=config.handoffs,
            also_offered=enabled,
        )
        handoff_calls = [i for i, result in enumerate(results) if result is None]
        step = Step(results=[])
        for rank, i in enumerate(handoff_calls):
            call = calls[i]
            if rank > 0:
                ignored = "ignored: only one handoff per response is carried out"
                handoff = config.handoffs[call.name]
                await self._publish_event(session, handoff, call, "refused", 0, ignored, kind=ignored)
                results[i] = error_result(call, ignored)
                continue
            decision = await self._check_handoff(call, session, conversation, enabled)
            if isinstance(decision, str):
                results[i] = error_result(call, decision)
                continue
            handoff, data = decision
            reason = loop_reason(path, handoff.target, config.policy.handoff_budget)
            if reason is not None:
                step.outcome = _LoopStop(handoff, call, reason)
                results[i] = error_result(call, f"handoff refused: {reason}")
                continue
            step.outcome = _Handoff(handoff, call, data, response.thought)
            results[i] = FunctionExecutionResult(
                call_id=call.id,
                name=call.name,
                content=f"Transferred to {handoff.target}. Adopt persona immediately.",
            )
        step.results = [r for r in results if r is not None]
        return step

    async def _check_handoff(
        self, call: FunctionCall, session: str, conversation: list[LLMMessage], enabled: frozenset[str]
    ) -> tuple[Handoff, BaseModel | None] | str:
        """The handoff and its validated input, or the reason it is refused (sent back as a tool result)."""
        handoff = self._config.handoffs[call.name]
        if call.name not in enabled:
            disabled = "handoff is disabled"
            await self._publish_event(session, handoff, call, "refused", 0, disabled, kind=disabled)
            return f"{call.name} is not available right now; do not call it"
        args = parse_arguments(call)
        if isinstance(args, str):
            kind = "arguments are not valid JSON" if "not valid JSON" in args else "arguments not an object"
            await self._publish_event(session, handoff, call, "refused", 0, args, kind=kind)
            return args
        try:
            data = handoff.validate_input(call.arguments)
        except ValidationError as exc:
            reason = f"invalid arguments for {call.name}: {describe_validation(exc)}"
            kind = f"validation failed: {_fields(exc, handoff)}"
            await self._publish_event(session, handoff, call, "refused", 0, reason, kind=kind)
            return reason
        return handoff, data

    # --- outcomes ----------------------------------------------------------------------------------

    async def _hand_off(
        self, message: UserTask, path: list[str], new: list[LLMMessage], decided: _Handoff
    ) -> None:
        config = self._config
        session = self.id.key
        handoff, call, data = decided.handoff, decided.call, decided.data
        payload = _model_dump(data)
        stage = "on_handoff"  # the user code that runs before the conversation moves: it may fail
        try:
            if handoff.on_handoff is not None:
                hctx = HandoffContext(session, config.name, handoff.target, [*message.context, *new])
                await call_maybe_async(handoff.on_handoff, *((hctx,) if data is None else (hctx, data)))
            stage = "input filter"
            context = await self._filtered(message.context, new, handoff, session)
        except Exception as exc:
            logger.exception("%s of %s failed", stage, handoff.tool_name)
            reason = f"{stage} failed: {type(exc).__name__}: {exc}"
            kind = f"{stage} failed: {type(exc).__name__}"
            await self._publish_event(session, handoff, call, "refused", len(path), reason, kind=kind)
            await self._reply([*message.context, *new], MODEL_ERROR_REPLY)
            return
        await self._publish_event(session, handoff, call, "handoff", len(path), "", payload, decided.said)
        task = user_task(context, [*path, handoff.target], self._usage)
        await self.publish_message(task, topic_id=session_topic(handoff.target, session))

    async def _filtered(
        self, history: list[LLMMessage], new: list[LLMMessage], handoff: Handoff, session: str
    ) -> list[LLMMessage]:
        """What the target receives: the handoff's filter (else the team's), then nesting if asked for.

        As in the OpenAI Agents SDK, a filter replaces the team-wide nesting; a handoff that asks for
        nesting itself (``nest_handoff_history=True``) gets it after its filter.
        """
        policy = self._config.policy
        input_filter = handoff.input_filter if handoff.input_filter is not None else policy.input_filter
        nest = (
            policy.nest_handoff_history and input_filter is None
            if handoff.nest_handoff_history is None
            else handoff.nest_handoff_history
        )
        if input_filter is None and not nest:
            return history + new
        data = HandoffInputData(tuple(history), tuple(new), self._config.name, handoff.target, session)
        if input_filter is not None:
            data = await call_maybe_async(input_filter, data)
            if not isinstance(data, HandoffInputData):
                raise TypeError(f"the input filter returned {type(data).__name__}, not HandoffInputData")
        if nest:
            data = nesting_filter()(data)
        return data.all_items

    async def _stop_loop(
        self,
        message: UserTask,
        path: list[str],
        new: list[LLMMessage],
        handoff: Handoff,
        call: FunctionCall,
        reason: str,
    ) -> None:
        config = self._config
        session = self.id.key
        hop = len(path)
        logger.warning("loop guard in session %s: %s", session, reason)
        human = config.human_agent
        escalate = config.policy.on_loop == "escalate" and human is not None and human != config.name
        said = reason if not escalate else f"{reason}; escalated to {human}"  # agent names and numbers only
        await self._publish_event(session, handoff, call, "loop_stopped", hop, said, kind=said)
        if escalate and human is not None:
            task = user_task([*message.context, *new], [*path, human], self._usage)
            await self.publish_message(task, topic_id=session_topic(human, session))
            return
        await self._reply([*message.context, *new], LOOP_MESSAGE)

    async def _reply(self, conversation: list[LLMMessage], text: str) -> None:
        config = self._config
        context = [*conversation, AssistantMessage(content=text, source=config.name)]
        response = agent_response(context, config.name, self._usage)
        await self.publish_message(response, topic_id=session_topic(config.user_topic, self.id.key))

    async def _publish_event(
        self,
        session: str,
        handoff: Handoff,
        call: FunctionCall,
        outcome: HandoffOutcome,
        hop: int,
        reason: str,
        arguments: dict[str, Any] | None = None,
        said: str | None = None,
        *,
        kind: str = "",
    ) -> None:
        event = HandoffEvent(
            session_id=session,
            source=self._config.name,
            target=handoff.target,
            tool=call.name,
            outcome=outcome,
            arguments=arguments,
            hop=hop,
            reason=reason,
            kind=kind,
            said=said or "",
        )
        await self.publish_message(event, topic_id=session_topic(HANDOFF_EVENTS, session))


async def _is_enabled(handoff: Handoff, ctx: SessionContext) -> bool:
    """Whether ``handoff`` is offered now; a callable that fails counts as disabled (and is logged)."""
    if handoff.is_enabled is True or handoff.is_enabled is False:
        return handoff.is_enabled
    try:
        return bool(await call_maybe_async(handoff.is_enabled, ctx))
    except Exception:
        logger.exception("is_enabled of %s failed; not offering it", handoff.tool_name)
        return False


def _fields(exc: ValidationError, handoff: Handoff) -> str:
    """The input type's fields that failed, without the values (another key the model sent is not named)."""
    declared = handoff.input_type.model_fields if handoff.input_type is not None else {}
    names = [str(e["loc"][0]) if e["loc"] and e["loc"][0] in declared else "other" for e in exc.errors()]
    return ", ".join(dict.fromkeys(names)) or "input"


def _model_dump(data: BaseModel | None) -> dict[str, Any] | None:
    return data.model_dump(mode="json") if data is not None else None
