"""``AIAgent``: a specialist that answers with a model, runs its tools, and hands the conversation on.

One turn, as an explicit loop::

    model(system + context, tools + enabled handoffs)
      text            -> AgentResponse to the User topic (the person's next message comes back here)
      tool calls      -> run the regular ones (errors become tool results), then
                         one handoff call -> UserTask to the target's topic, same session; done
                         no handoff       -> ask the model again (at most ``max_tool_rounds`` times)

Everything the model may get wrong (unknown tool, bad JSON, bad arguments, a tool that raises, several
handoffs, an empty reply, a model error) becomes a tool result or a clear message; the session goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_core import CancellationToken, FunctionCall, MessageContext, message_handler
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel, ValidationError

from ..channels import Channel
from ..context import ToolContext, set_tool_context
from ..messages import HandoffEvent, HandoffOutcome, UserTask, agent_response, user_task
from ..models import ModelCall, model_call_scope
from ..policy import LOOP_MESSAGE, TeamPolicy, loop_reason
from ..tools.filters import nesting_filter
from ..tools.handoff import (
    Handoff,
    HandoffContext,
    HandoffInputData,
    SessionContext,
    call_maybe_async,
)
from ..topics import HANDOFF_EVENTS, USER, session_topic
from ..usage import BUDGET_REPLY, add, copy, merge, over_budget, take_tool_usage
from .routing import SessionAgent

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
    model_timeout: float | None = field(init=False)
    """The policy's per-call timeout, or ``None`` for a model that answers promptly (in-process)."""
    static_schemas: tuple[ToolSchema, ...] | None = field(init=False)
    """Every schema, when no handoff is enabled by a function: then nothing is computed per call."""

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # the documented way to derive fields of a frozen dataclass
        tool_schemas = tuple(t.schema for t in self.tools.values())
        set_field(self, "tool_schemas", tool_schemas)
        set_field(self, "handoff_names", frozenset(self.handoffs))
        prompt = getattr(self.model, "answers_promptly", False) is True
        set_field(self, "model_timeout", None if prompt else self.policy.model_timeout)
        static = all(h.always_enabled for h in self.handoffs.values())
        handoff_schemas = tuple(h.schema for h in self.handoffs.values())
        set_field(self, "static_schemas", tool_schemas + handoff_schemas if static else None)


@dataclass(slots=True)
class _Step:
    """The outcome of running one response's tool calls."""

    results: list[FunctionExecutionResult]
    handoff: tuple[Handoff, FunctionCall, BaseModel | None] | None = None
    loop: tuple[Handoff, FunctionCall, str] | None = None


class AIAgent(SessionAgent):
    """A model-backed specialist subscribed to its own topic type. See the module docstring."""

    def __init__(self, config: AIAgentConfig) -> None:
        super().__init__(config.description or config.name)
        self._config = config
        self._usage: dict[str, list[int]] = {}  # the session's token usage, this turn's included

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        config = self._config
        session = self.id.key
        history = message.context
        new: list[LLMMessage] = []
        path = message.turn_path or [config.name]
        tool_context = ToolContext(
            session, config.name, config.channel, runtime=self.runtime, agent_id=self.id
        )
        set_tool_context(tool_context)
        self._usage = copy(message.usage)
        for _ in range(config.policy.max_tool_rounds):
            conversation = history + new
            if over_budget(config.policy.token_budget, self._usage):
                await self._reply(conversation, BUDGET_REPLY)
                return
            offered, enabled = await self._offer(session, conversation)
            try:
                result = await self._call_model(
                    session, conversation, offered, enabled, ctx.cancellation_token
                )
            except Exception:
                logger.exception("model call failed for %s in session %s", config.name, session)
                await self._reply(conversation, MODEL_ERROR_REPLY)
                return
            add(self._usage, config.name, result.usage)
            content = result.content
            if isinstance(content, str) or not content:
                text = content.strip() if isinstance(content, str) else ""
                if not text:
                    logger.warning("empty model reply from %s in session %s", config.name, session)
                await self._reply(conversation, text or EMPTY_REPLY)
                return
            calls = [c for c in content if isinstance(c, FunctionCall)]
            step = await self._run_calls(calls, session, conversation, enabled, path, ctx.cancellation_token)
            merge(self._usage, take_tool_usage(tool_context.turn))  # what its workers spent
            new.append(AssistantMessage(content=calls, source=config.name))
            new.append(FunctionExecutionResultMessage(content=step.results))
            if step.handoff is not None:
                await self._hand_off(message, path, new, *step.handoff)
                return
            if step.loop is not None:
                await self._stop_loop(message, path, new, *step.loop)
                return
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

    async def _call_model(
        self,
        session: str,
        conversation: list[LLMMessage],
        tools: Sequence[ToolSchema],
        handoffs: frozenset[str],
        cancellation_token: CancellationToken,
    ) -> CreateResult:
        config = self._config
        messages = [config.system_message, *conversation]
        with model_call_scope(ModelCall(config.name, session, handoffs)):
            if config.model_timeout is None:
                return await self._create(messages, tools, cancellation_token)
            async with asyncio.timeout(config.model_timeout):
                return await self._create(messages, tools, cancellation_token)

    async def _create(
        self, messages: list[LLMMessage], tools: Sequence[ToolSchema], cancellation_token: CancellationToken
    ) -> CreateResult:
        config = self._config
        if not config.policy.stream:
            return await config.model.create(messages, tools=tools, cancellation_token=cancellation_token)
        final: CreateResult | None = None
        async for chunk in config.model.create_stream(
            messages, tools=tools, cancellation_token=cancellation_token
        ):
            if isinstance(chunk, CreateResult):
                final = chunk
        if final is None:
            raise RuntimeError("the model's stream ended without a final result")
        return final

    # --- tool calls --------------------------------------------------------------------------------

    async def _run_calls(
        self,
        calls: list[FunctionCall],
        session: str,
        conversation: list[LLMMessage],
        enabled: frozenset[str],
        path: list[str],
        cancellation_token: CancellationToken,
    ) -> _Step:
        """Run the regular tools first, then decide on at most one handoff; every call gets a result."""
        config = self._config
        # By position, not by call id: some servers repeat ids or leave them empty.
        results: list[FunctionExecutionResult | None] = [None] * len(calls)
        handoff_calls: list[int] = []
        for i, call in enumerate(calls):
            if call.name in config.tools:
                results[i] = await self._run_tool(call, cancellation_token)
            elif call.name in config.handoffs:
                handoff_calls.append(i)
            else:
                results[i] = unknown_tool_result(call, [*config.tools, *enabled])
        step = _Step(results=[])
        for rank, i in enumerate(handoff_calls):
            call = calls[i]
            if rank > 0:
                ignored = "ignored: only one handoff per response is carried out"
                await self._publish_event(session, config.handoffs[call.name], call, "refused", 0, ignored)
                results[i] = _error(call, ignored)
                continue
            decision = await self._check_handoff(call, session, conversation, enabled)
            if isinstance(decision, str):
                results[i] = _error(call, decision)
                continue
            handoff, data = decision
            reason = loop_reason(path, handoff.target, config.policy.handoff_budget)
            if reason is not None:
                step.loop = (handoff, call, reason)
                results[i] = _error(call, f"handoff refused: {reason}")
                continue
            step.handoff = (handoff, call, data)
            results[i] = FunctionExecutionResult(
                call_id=call.id,
                name=call.name,
                content=f"Transferred to {handoff.target}. Adopt persona immediately.",
            )
        step.results = [r for r in results if r is not None]
        return step

    async def _run_tool(
        self, call: FunctionCall, cancellation_token: CancellationToken
    ) -> FunctionExecutionResult:
        return await run_tool_call(self._config.tools[call.name], call, cancellation_token)

    async def _check_handoff(
        self, call: FunctionCall, session: str, conversation: list[LLMMessage], enabled: frozenset[str]
    ) -> tuple[Handoff, BaseModel | None] | str:
        """The handoff and its validated input, or the reason it is refused (sent back as a tool result)."""
        handoff = self._config.handoffs[call.name]
        if call.name not in enabled:
            await self._publish_event(session, handoff, call, "refused", 0, "handoff is disabled")
            return f"{call.name} is not available right now; do not call it"
        args = _parse_arguments(call)
        if isinstance(args, str):
            await self._publish_event(session, handoff, call, "refused", 0, args)
            return args
        data: BaseModel | None = None
        if handoff.input_type is not None:
            try:
                data = handoff.input_type.model_validate(args)
            except ValidationError as exc:
                reason = f"invalid arguments for {call.name}: {_describe_validation(exc)}"
                await self._publish_event(session, handoff, call, "refused", 0, reason)
                return reason
        return handoff, data

    # --- outcomes ----------------------------------------------------------------------------------

    async def _hand_off(
        self,
        message: UserTask,
        path: list[str],
        new: list[LLMMessage],
        handoff: Handoff,
        call: FunctionCall,
        data: BaseModel | None,
    ) -> None:
        config = self._config
        session = self.id.key
        payload = _model_dump(data)
        stage = "on_handoff"  # the user code that runs before the conversation moves: it may fail
        try:
            if handoff.on_handoff is not None:
                hctx = HandoffContext(session, config.name, handoff.target, [*message.context, *new])
                await call_maybe_async(handoff.on_handoff, *((hctx,) if data is None else (hctx, data)))
            stage = "input filter"
            context = self._filtered(message.context, new, handoff, session)
        except Exception as exc:
            logger.exception("%s of %s failed", stage, handoff.tool_name)
            reason = f"{stage} failed: {type(exc).__name__}: {exc}"
            await self._publish_event(session, handoff, call, "refused", len(path), reason)
            await self._reply([*message.context, *new], MODEL_ERROR_REPLY)
            return
        await self._publish_event(session, handoff, call, "handoff", len(path), "", payload)
        task = user_task(context, [*path, handoff.target])
        task.usage = self._usage
        await self.publish_message(task, topic_id=session_topic(handoff.target, session))

    def _filtered(
        self, history: list[LLMMessage], new: list[LLMMessage], handoff: Handoff, session: str
    ) -> list[LLMMessage]:
        policy = self._config.policy
        input_filter = handoff.input_filter or policy.input_filter
        nest = (
            policy.nest_handoff_history
            if handoff.nest_handoff_history is None
            else handoff.nest_handoff_history
        )
        if input_filter is None and not nest:
            return history + new
        data = HandoffInputData(tuple(history), tuple(new), self._config.name, handoff.target, session)
        if input_filter is not None:
            data = input_filter(data)
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
        await self._publish_event(
            session,
            handoff,
            call,
            "loop_stopped",
            hop,
            reason if not escalate else f"{reason}; escalated to {human}",
        )
        if escalate and human is not None:
            task = user_task([*message.context, *new], [*path, human])
            task.usage = self._usage
            await self.publish_message(task, topic_id=session_topic(human, session))
            return
        await self._reply([*message.context, *new], LOOP_MESSAGE)

    async def _reply(self, conversation: list[LLMMessage], text: str) -> None:
        config = self._config
        context = [*conversation, AssistantMessage(content=text, source=config.name)]
        response = agent_response(context, config.name)
        response.usage = self._usage
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
        )
        await self.publish_message(event, topic_id=session_topic(HANDOFF_EVENTS, session))


async def run_tool_call(
    tool: Tool, call: FunctionCall, cancellation_token: CancellationToken
) -> FunctionExecutionResult:
    """Run one regular tool call; bad arguments and a tool that raises become error results."""
    args = _parse_arguments(call)
    if isinstance(args, str):
        return _error(call, args)
    try:
        value = await tool.run_json(args, cancellation_token, call_id=call.id)
    except ValidationError as exc:
        return _error(call, f"invalid arguments for {call.name}: {_describe_validation(exc)}")
    except Exception as exc:
        logger.warning("tool %s raised %s: %s", call.name, type(exc).__name__, exc)
        return _error(call, f"tool {call.name} failed: {type(exc).__name__}: {exc}")
    content = tool.return_value_as_string(value)
    return FunctionExecutionResult(call_id=call.id, name=call.name, content=content)


async def _is_enabled(handoff: Handoff, ctx: SessionContext) -> bool:
    """Whether ``handoff`` is offered now; a callable that fails counts as disabled (and is logged)."""
    if handoff.is_enabled is True or handoff.is_enabled is False:
        return handoff.is_enabled
    try:
        return bool(await call_maybe_async(handoff.is_enabled, ctx))
    except Exception:
        logger.exception("is_enabled of %s failed; not offering it", handoff.tool_name)
        return False


def unknown_tool_result(call: FunctionCall, available: Iterable[str]) -> FunctionExecutionResult:
    """The error result for a call to a tool that was not offered, naming the ones that were."""
    offered = ", ".join(available) or "none"
    return _error(call, f"there is no tool named {call.name!r}; available: {offered}")


def _error(call: FunctionCall, text: str) -> FunctionExecutionResult:
    return FunctionExecutionResult(call_id=call.id, name=call.name, content=f"Error: {text}", is_error=True)


def _parse_arguments(call: FunctionCall) -> dict[str, Any] | str:
    """The call's arguments as a dict, or an error text for the model."""
    try:
        args = json.loads(call.arguments) if call.arguments and call.arguments.strip() else {}
    except ValueError as exc:
        return f"arguments of {call.name} are not valid JSON ({exc}); send a JSON object"
    if not isinstance(args, dict):
        return f"arguments of {call.name} must be a JSON object, got {type(args).__name__}"
    return args


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _model_dump(data: BaseModel | None) -> dict[str, Any] | None:
    return data.model_dump(mode="json") if data is not None else None
