"""The tool loop that ``AIAgent`` and ``WorkerAgent`` share, and how a model's response is read.

One turn of either agent::

    model(system + conversation, tools)        (at most ``policy.max_tool_rounds`` times)
      text        -> LoopEnd("text")
      tool calls  -> the regular ones run (at once unless ``policy.concurrent_tool_calls`` is off);
                     the caller decides on the rest (every call gets a result, cut to the size cap)
                     -> LoopEnd("stopped") when the caller says the turn is over (a handoff), else again
      error       -> LoopEnd("model_failed"): the model raised or missed its deadline

A model's response is read by :func:`read_reply`, which accepts anything at all (content that is a number,
parts that are not calls, a call whose id, name or arguments are null or of the wrong type) and returns
text or well-formed calls, so nothing the model sends can break the code after it. The agents' message
handlers keep the last guarantee: whatever still goes wrong in a turn is logged and answered (an
apology, a failed ``WorkerResult``), never left to end the session silently.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    RequestUsage,
    SystemMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import ValidationError

from handoffs_runtime.channels.base import TextDelta, ToolActivity, report_progress
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.models.local import ModelCall, model_call_scope
from handoffs_runtime.tools.context import current_tool_context
from handoffs_runtime.usage import UsageByAgent, add, merge, over_budget, take_tool_usage

logger = logging.getLogger("handoffs_runtime")


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """A response's well-formed tool calls, with the text the model wrote next to them, if any.

    That text (``CreateResult.thought``, or text parts beside the calls) is often meant for the person
    ("Let me pass you to sales"); it travels in the conversation as the call message's ``thought``.
    """

    calls: list[FunctionCall]
    thought: str | None = None


Reply = str | ToolCalls
"""A response as the agents use it: text (stripped, possibly empty) or well-formed tool calls."""

MAX_NAME_CHARS = 256
"""Tool names and call ids longer than this are cut (OpenAI allows 64 characters for a name)."""

_call_ids = itertools.count(1)


# --- reading a response ----------------------------------------------------------------------------


def read_reply(result: object, max_chars: int) -> Reply:
    """The text or tool calls of ``result``, whatever it holds; text longer than ``max_chars`` is cut."""
    content = getattr(result, "content", None)
    if isinstance(content, str):
        return cut_text(content.strip(), max_chars, "reply was")
    if isinstance(content, list | tuple):
        return _read_parts(content, getattr(result, "thought", None), max_chars)
    if isinstance(content, int | float) and not isinstance(content, bool):
        return str(content)
    if content is not None:
        logger.warning("model content of type %s is neither text nor tool calls", type(content).__name__)
    return ""


def _read_parts(parts: Sequence[object], thought: object, max_chars: int) -> Reply:
    calls: list[FunctionCall] = []
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
            continue
        call = _read_call(part)
        if call is None:
            logger.warning("ignoring a model content part of type %s", type(part).__name__)
        else:
            calls.append(call)
    if not calls:
        return cut_text("".join(texts).strip(), max_chars, "reply was")
    if not texts and not thought:
        return ToolCalls(calls)
    said = "\n".join(t for t in (thought if isinstance(thought, str) else "", *texts) if t).strip()
    return ToolCalls(calls, cut_text(said, max_chars, "reply was") or None)


def _read_call(part: object) -> FunctionCall | None:
    """A well-formed ``FunctionCall`` from anything call-like, or ``None`` when ``part`` is not one.

    Arguments are never cut (a cut would only make them invalid JSON); the tools check them, and what a
    tool returns is capped.
    """
    if (
        isinstance(part, FunctionCall)
        and isinstance(part.id, str)
        and part.id
        and isinstance(part.name, str)
        and isinstance(part.arguments, str)
        and len(part.name) <= MAX_NAME_CHARS
        and len(part.id) <= MAX_NAME_CHARS
    ):
        return part  # the usual case: nothing to repair
    fields = part if isinstance(part, Mapping) else None

    def get(name: str) -> object:
        return fields.get(name) if fields is not None else getattr(part, name, None)

    name, arguments, call_id = get("name"), get("arguments"), get("id")
    if name is None and arguments is None:
        return None
    return FunctionCall(
        id=call_id[:MAX_NAME_CHARS] if isinstance(call_id, str) and call_id else f"call_{next(_call_ids)}",
        name=_text_of(name)[:MAX_NAME_CHARS],
        arguments=_arguments_of(arguments),
    )


def _text_of(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _arguments_of(value: object) -> str:
    """Arguments as the JSON text the tools expect: objects and numbers are encoded, null is empty."""
    if value is None or isinstance(value, str):
        return value or ""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def cut_text(text: str, max_chars: int, what: str) -> str:
    """``text``, or ``max_chars`` of its characters with a note in the middle saying what was left out.

    The start and the end are kept (three quarters and one quarter): a reply's question to the person
    and a tool's summary or error usually come last. ``what`` names the text with its verb: ``"reply
    was"``, ``"result was"``.
    """
    if len(text) <= max_chars:
        return text
    logger.warning("cutting text (the %s %d characters long) to %d", what, len(text), max_chars)
    tail = max_chars // 4
    head = max_chars - tail
    left_out = len(text) - max_chars
    note = (
        f"[cut: the {what} {len(text):,} characters long; {left_out:,} characters in the middle are left out]"
    )
    return f"{text[:head]}\n\n{note}\n\n{text[len(text) - tail :]}"


# --- tool calls -----------------------------------------------------------------------------------


async def run_tool_call(
    tool: Tool, call: FunctionCall, cancellation_token: CancellationToken, *, show_progress: bool = False
) -> FunctionExecutionResult:
    """Run one regular tool call; with ``show_progress``, a channel that shows progress is told when it
    starts and finishes."""
    ctx = current_tool_context() if show_progress else None
    if ctx is None or getattr(ctx.channel, "progress", None) is None:
        return await _run_tool_call(tool, call, cancellation_token)
    started = ToolActivity(ctx.agent, call.name, call.id, call.arguments)
    await report_progress(ctx.channel, ctx.session_id, started)
    result = await _run_tool_call(tool, call, cancellation_token)
    finished = replace(started, result=result.content, is_error=bool(result.is_error))
    await report_progress(ctx.channel, ctx.session_id, finished)
    return result


async def _run_tool_call(
    tool: Tool, call: FunctionCall, cancellation_token: CancellationToken
) -> FunctionExecutionResult:
    """Run one regular tool call; bad arguments and a tool that raises become error results."""
    args = parse_arguments(call)
    if isinstance(args, str):
        return error_result(call, args)
    try:
        value = await tool.run_json(args, cancellation_token, call_id=call.id)
    except ValidationError as exc:
        return error_result(call, f"invalid arguments for {call.name}: {describe_validation(exc)}")
    except Exception as exc:
        logger.warning("tool %s raised %s: %s", call.name, type(exc).__name__, exc)
        return error_result(call, f"tool {call.name} failed: {type(exc).__name__}: {exc}")
    content = tool.return_value_as_string(value)
    return FunctionExecutionResult(call_id=call.id, name=call.name, content=content)


def unknown_tool_result(call: FunctionCall, available: Iterable[str]) -> FunctionExecutionResult:
    """The error result for a call to a tool that was not offered, naming the ones that were."""
    offered = ", ".join(available) or "none"
    return error_result(call, f"there is no tool named {call.name!r}; available: {offered}")


def error_result(call: FunctionCall, text: str) -> FunctionExecutionResult:
    return FunctionExecutionResult(call_id=call.id, name=call.name, content=f"Error: {text}", is_error=True)


def parse_arguments(call: FunctionCall) -> dict[str, Any] | str:
    """The call's arguments as a dict, or an error text for the model."""
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError as exc:
        return f"arguments of {call.name} are not valid JSON ({exc}); send a JSON object"
    if not isinstance(args, dict):
        return f"arguments of {call.name} must be a JSON object, got {type(args).__name__}"
    return args


def describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _capped(result: FunctionExecutionResult, max_chars: int) -> FunctionExecutionResult:
    if len(result.content) <= max_chars:
        return result
    return result.model_copy(update={"content": cut_text(result.content, max_chars, "result was")})


# --- the loop -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Step:
    """What the caller made of one response's tool calls: a result per call, and whether the turn ends.

    ``outcome`` is the caller's own record of how it ends (``AIAgent``: the handoff or the loop stop).
    """

    results: list[FunctionExecutionResult]
    outcome: object | None = None


Offer = Callable[[list[LLMMessage]], Awaitable[tuple[Sequence[ToolSchema], frozenset[str]]]]
"""The tool schemas to offer for this conversation, and the names of the handoffs among them."""
RunCalls = Callable[[ToolCalls, list[LLMMessage], frozenset[str]], Awaitable[Step]]
"""Runs a response's calls for this conversation, given the handoffs that were offered."""

LoopEndKind = Literal["text", "stopped", "model_failed", "out_of_rounds", "over_budget"]


@dataclass(slots=True)
class LoopEnd:
    """How a turn's loop ended; ``new`` is what the turn added to the conversation (calls and results)."""

    kind: LoopEndKind
    new: list[LLMMessage]
    text: str = ""
    outcome: object | None = None
    error: str = ""
    """Why the model call failed (``model_failed``), for a caller that reports it, as a worker does."""
    exception: BaseException | None = None
    """The model call's exception (``model_failed``), for a caller that explains it to a person."""


@dataclass(frozen=True)
class ToolLoop:
    """One agent type's model and the rules of its loop; shared by all its instances."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    description: str = ""
    """What the agent is for; models that route by words (the offline one) read it."""
    irreversible: frozenset[str] = frozenset()
    """The agent's tools marked irreversible, for models that must not act on a guess."""
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Example requests, for models that route by words (``ModelCall.examples``)."""
    shows_progress: bool = False
    """Whether text deltas and tool activity go to the session's channel as they happen (an agent that
    talks to the person); a worker's do not."""
    model_timeout: float | None = field(init=False)
    """The policy's per-call timeout, or ``None`` for a model that answers promptly (in-process)."""

    def __post_init__(self) -> None:
        prompt = getattr(self.model, "answers_promptly", False) is True
        object.__setattr__(self, "model_timeout", None if prompt else self.policy.model_timeout)

    async def run(
        self,
        history: list[LLMMessage],
        session: str,
        offer: Offer,
        run_calls: RunCalls,
        cancellation_token: CancellationToken,
        usage: UsageByAgent | None = None,
    ) -> LoopEnd:
        """Ask the model, run its calls, repeat until it answers, the caller stops, or the rounds run out.

        ``usage`` counts the tokens of every model call, and of the workers its tools create; past the
        policy's ``token_budget`` the loop ends (``over_budget``) instead of calling the model again."""
        new: list[LLMMessage] = []
        max_chars = self.policy.max_reply_chars
        for _ in range(self.policy.max_tool_rounds):
            conversation = history + new
            if usage is not None and over_budget(self.policy.token_budget, usage):
                return LoopEnd("over_budget", new)
            tools, handoffs = await offer(conversation)
            try:
                result = await self._call_model(session, conversation, tools, handoffs, cancellation_token)
            except Exception as exc:
                logger.exception("model call failed for %s in session %s", self.name, session)
                return LoopEnd("model_failed", new, error=self._describe_failure(exc), exception=exc)
            reported = getattr(result, "usage", None)
            if usage is not None and isinstance(reported, RequestUsage):
                add(usage, self.name, reported)
            reply = read_reply(result, max_chars)
            if isinstance(reply, str):
                return LoopEnd("text", new, text=reply)
            step = await run_calls(reply, conversation, handoffs)
            tool_context = current_tool_context()
            if usage is not None and tool_context is not None:
                merge(usage, take_tool_usage(tool_context.turn))  # what the workers it created spent
            new.append(AssistantMessage(content=reply.calls, thought=reply.thought, source=self.name))
            new.append(FunctionExecutionResultMessage(content=[_capped(r, max_chars) for r in step.results]))
            if step.outcome is not None:
                return LoopEnd("stopped", new, outcome=step.outcome)
        return LoopEnd("out_of_rounds", new)

    async def run_tools(
        self,
        calls: Sequence[FunctionCall],
        tools: Mapping[str, Tool],
        cancellation_token: CancellationToken,
        *,
        handoffs: Container[str] = (),
        also_offered: Iterable[str] = (),
    ) -> list[FunctionExecutionResult | None]:
        """A result per call, in call order: the regular tools run, a call to a tool that was not
        offered gets an error naming the tools and ``also_offered`` (the handoffs), and handoff calls
        are left (``None``) to the caller.

        Several regular calls of one response run at once, as in the OpenAI Agents SDK (their results
        stay in call order); ``policy.concurrent_tool_calls=False`` runs them one at a time. Questions
        to the person are asked one at a time either way (see
        :func:`~handoffs_runtime.tools.context.ask_person`).
        """
        results: list[FunctionExecutionResult | None] = [None] * len(calls)
        runs: list[tuple[int, Tool, FunctionCall]] = []
        for i, call in enumerate(calls):  # by position, not by call id: some servers repeat ids
            tool = tools.get(call.name)
            if tool is not None:
                runs.append((i, tool, call))
            elif call.name not in handoffs:
                results[i] = unknown_tool_result(call, [*tools, *also_offered])
        progress = self.shows_progress
        if len(runs) > 1 and self.policy.concurrent_tool_calls:
            done = await asyncio.gather(
                *(run_tool_call(t, c, cancellation_token, show_progress=progress) for _, t, c in runs)
            )
            for (i, _, _), result in zip(runs, done, strict=True):
                results[i] = result
        else:
            for i, tool, call in runs:
                results[i] = await run_tool_call(tool, call, cancellation_token, show_progress=progress)
        return results

    def _describe_failure(self, exc: Exception) -> str:
        if isinstance(exc, TimeoutError) and not str(exc):
            return f"TimeoutError: no answer within {self.model_timeout:g} s"
        return f"{type(exc).__name__}: {exc}"

    async def _call_model(
        self,
        session: str,
        conversation: list[LLMMessage],
        tools: Sequence[ToolSchema],
        handoffs: frozenset[str],
        cancellation_token: CancellationToken,
    ) -> object:
        messages = [self.system_message, *conversation]
        call = ModelCall(self.name, session, handoffs, self.description, self.irreversible, self.examples)
        with model_call_scope(call):
            if self.model_timeout is None:
                return await self._create(messages, tools, cancellation_token)
            async with asyncio.timeout(self.model_timeout):
                return await self._create(messages, tools, cancellation_token)

    async def _create(
        self, messages: list[LLMMessage], tools: Sequence[ToolSchema], cancellation_token: CancellationToken
    ) -> object:
        if not self.policy.stream:
            return await self.model.create(messages, tools=tools, cancellation_token=cancellation_token)
        final: CreateResult | None = None
        async for chunk in self.model.create_stream(
            messages, tools=tools, cancellation_token=cancellation_token
        ):
            if isinstance(chunk, CreateResult):
                final = chunk
            elif chunk and self.shows_progress:  # a delta, shown as it arrives; the reply holds the whole
                ctx = current_tool_context()
                if ctx is not None:
                    await report_progress(ctx.channel, ctx.session_id, TextDelta(self.name, chunk))
        if final is None:
            raise RuntimeError("the model's stream ended without a final result")
        return final
