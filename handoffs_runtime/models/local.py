"""What every in-process model shares: the base class, and who is calling a model right now.

While an agent calls its model, :func:`current_model_call` tells the model which agent and session it is
serving and which of the offered tools are handoffs; local models (the offline one, scripted ones) use
that, remote ones ignore it. This module depends on no other model module, so the offline model and the
model selection in :mod:`handoffs_runtime.models` can both build on it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypedDict, Unpack, runtime_checkable

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Who is calling the model right now: what changes from call to call.

    What stays (the agent's description, examples, whom its handoffs reach) is the agent's profile,
    given once when the team is registered (see :mod:`handoffs_runtime.models.profile`).
    """

    agent: str
    session_id: str
    handoff_tools: frozenset[str]
    """The handoffs among the offered tools (only the enabled ones are offered)."""

    def __init__(self, agent: str, session_id: str, handoff_tools: frozenset[str]) -> None:
        """What the dataclass's ``__init__`` does, without looking up ``object.__setattr__`` for each field
        (frozen): one is built for every model call, and kept while the call is in flight, in slots."""
        _set(self, "agent", agent)
        _set(self, "session_id", session_id)
        _set(self, "handoff_tools", handoff_tools)


_set = object.__setattr__

_current_call: ContextVar[ModelCall | None] = ContextVar("handoffs_model_call", default=None)


def current_model_call() -> ModelCall | None:
    """The agent, session and handoff tool names of the model call in progress, if any."""
    return _current_call.get()


@runtime_checkable
class AnswersPromptly(Protocol):
    """A model that says whether it answers promptly: ``True`` (an in-process one) lets agents skip the
    policy's per-call timeout. Optional; a model without the attribute gets the timeout."""

    answers_promptly: bool


class CreateOptions(TypedDict, total=False):
    """The keyword arguments of a model client's ``create`` and ``create_stream``, for one that passes
    them on."""

    tools: Sequence[Tool | ToolSchema]
    tool_choice: Any
    json_output: Any
    extra_create_args: Mapping[str, Any]
    cancellation_token: CancellationToken | None


Reply = str | list[FunctionCall]
"""What a local model answers: text for the person, or tool calls."""

_ids = itertools.count(1)


def tool_call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, call_id: str | None = None
) -> FunctionCall:
    """A ``FunctionCall`` for scripts: ``tool_call("look_up_item", {"search_query": "shoes"})``.

    Pass ``arguments`` as a string to script malformed JSON.
    """
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    return FunctionCall(id=call_id or f"call_{next(_ids)}", name=name, arguments=args)


_ZERO = RequestUsage(prompt_tokens=0, completion_tokens=0)


class LocalModel(ChatCompletionClient):
    """Base of the in-process models: subclasses implement :meth:`respond`.

    ``latency`` (seconds) is awaited before each answer, to simulate a remote model in benchmarks.
    """

    label = "local"
    answers_promptly: ClassVar[bool] = True
    """In-process and never stuck on a network, so agents skip their per-call timeout (about 4 µs)."""
    delta_chars: ClassVar[int | None] = None
    """Streamed, a text answer comes in pieces of this many characters (as a server sends it); None: whole."""

    def __init__(self, *, latency: float = 0.0) -> None:
        self.latency = latency
        self.calls: list[tuple[list[LLMMessage], list[ToolSchema]]] = []
        self.record_calls = True

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        raise NotImplementedError

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        schemas = [t if isinstance(t, dict) else t.schema for t in tools]
        if self.record_calls:
            self.calls.append((list(messages), schemas))
        if self.latency:
            await asyncio.sleep(self.latency)
        reply = self.respond(messages, schemas)
        return CreateResult(
            finish_reason="stop" if isinstance(reply, str) else "function_calls",
            content=reply,
            usage=_ZERO,
            cached=False,
        )

    async def create_stream(
        self, messages: Sequence[LLMMessage], **options: Unpack[CreateOptions]
    ) -> AsyncGenerator[str | CreateResult, None]:
        result = await self.create(messages, **options)
        text = result.content
        if isinstance(text, str):
            step = self.delta_chars or len(text) or 1
            for start in range(0, max(len(text), 1), step):
                yield text[start : start + step]
        yield result

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return _ZERO

    def total_usage(self) -> RequestUsage:
        return _ZERO

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return sum(len(str(getattr(m, "content", ""))) // 4 for m in messages)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()
    ) -> int:
        return 1_000_000 - self.count_tokens(messages)

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(vision=False, function_calling=True, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return tool_calling_info(json_output=False, multiple_system_messages=True)


def tool_calling_info(*, json_output: bool, multiple_system_messages: bool) -> ModelInfo:
    """What autogen is told of a model we know only as one that calls tools (no images, no schemas)."""
    return ModelInfo(
        vision=False,
        function_calling=True,
        json_output=json_output,
        family=ModelFamily.UNKNOWN,
        structured_output=False,
        multiple_system_messages=multiple_system_messages,
    )


class model_call_scope:
    """Marks the model call in progress for :func:`current_model_call` (the agents use this)."""

    __slots__ = ("_call", "_token")

    def __init__(self, call: ModelCall) -> None:
        self._call = call

    def __enter__(self) -> ModelCall:
        self._token = _current_call.set(self._call)
        return self._call

    def __exit__(self, *exc: object) -> None:
        _current_call.reset(self._token)
