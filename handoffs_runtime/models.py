"""Model selection: the built-in offline model, any OpenAI-compatible endpoint, scripted models for tests.

Every model is an autogen-core ``ChatCompletionClient``, so anything autogen can talk to works here too.
While an agent calls its model, :func:`current_model_call` tells the model which agent and session it is
serving and which of the offered tools are handoffs; local models use that, remote ones ignore it.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

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

from .errors import ModelConfigError, ScriptError


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Who is calling the model right now."""

    agent: str
    session_id: str
    handoff_tools: frozenset[str]
    description: str = ""
    """What the calling agent is for (its ``AgentSpec.description``)."""
    irreversible_tools: frozenset[str] = frozenset()
    """The offered tools marked :func:`~handoffs_runtime.tools.effects.irreversible`."""


_current_call: ContextVar[ModelCall | None] = ContextVar("handoffs_model_call", default=None)


def current_model_call() -> ModelCall | None:
    """The agent, session and handoff tool names of the model call in progress, if any."""
    return _current_call.get()


Reply = str | list[FunctionCall]
"""What a local model answers: text for the person, or tool calls."""

_ids = itertools.count(1)


def tool_call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, call_id: str | None = None
) -> FunctionCall:
    """A ``FunctionCall`` for scripts: ``tool_call("look_up_item", {"search_query": "shoes"})``.

    Pass ``arguments`` as a string to script malformed JSON.
    """
    import json

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

    async def create_stream(  # type: ignore[override]
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        result = await self.create(messages, tools=tools, cancellation_token=cancellation_token)
        if isinstance(result.content, str):
            yield result.content
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
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return ModelCapabilities(vision=False, function_calling=True, json_output=False)  # type: ignore[typeddict-item]

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False,
            function_calling=True,
            json_output=False,
            family=ModelFamily.UNKNOWN,
            structured_output=False,
            multiple_system_messages=True,
        )


Responder = Callable[[Sequence[LLMMessage], Sequence[ToolSchema]], Reply]


class FunctionModel(LocalModel):
    """A model whose answers come from a function of the messages and tools (see :func:`current_model_call`).

    Good for many concurrent sessions in tests and benchmarks, where a fixed queue cannot know which
    session calls next.
    """

    label = "function"

    def __init__(self, responder: Responder, *, latency: float = 0.0) -> None:
        super().__init__(latency=latency)
        self._responder = responder

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        return self._responder(messages, tools)


Step = Reply | BaseException | Responder


class ScriptedModel(LocalModel):
    """Answers from a fixed queue of steps and fails loudly when the queue runs out.

    A step is text, a list of tool calls, an exception to raise (a model error), or a function of the
    messages and tools. Call :meth:`assert_done` at the end of a test to fail on unconsumed steps.
    """

    label = "scripted"

    def __init__(self, steps: Iterable[Step], *, latency: float = 0.0) -> None:
        super().__init__(latency=latency)
        self._steps = list(steps)

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        if not self._steps:
            raise ScriptError(
                f"scripted model called {len(self.calls)} times but scripted for fewer; "
                f"last message: {messages[-1] if messages else None!r}"
            )
        step = self._steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step(messages, tools)
        return step

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def assert_done(self) -> None:
        if self._steps:
            raise ScriptError(f"scripted model has {len(self._steps)} unused step(s): {self._steps!r}")


# --- OpenAI-compatible endpoints ---------------------------------------------------------------------


def _generic_model_info() -> ModelInfo:
    return ModelInfo(
        vision=False,
        function_calling=True,
        json_output=True,
        family=ModelFamily.UNKNOWN,
        structured_output=False,
        multiple_system_messages=False,
    )


def openai_model(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    parallel_tool_calls: bool | None = False,
    timeout: float = 30.0,
    max_retries: int = 2,
    model_info: ModelInfo | None = None,
) -> ChatCompletionClient:
    """A client for any OpenAI-compatible endpoint (OpenAI, Azure's v1 API, Ollama, vLLM, llama.cpp).

    Models that autogen does not know by name get a generic ``model_info`` (function calling on, one system
    message). ``parallel_tool_calls=None`` leaves the setting out for servers that reject it.
    ``timeout`` is the total deadline of one call in seconds: connecting, the whole answer (streamed or
    not) and the client's ``max_retries`` retries; a slow or trickling endpoint ends the call there.
    """
    from .deadline import DeadlineOpenAIClient

    if not model:
        raise ModelConfigError("no model name: pass --model NAME or set HANDOFFS_MODEL")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if base_url is None:
            raise ModelConfigError(
                f"model {model!r} needs an API key: set OPENAI_API_KEY, or give --base-url for a local "
                "server that needs none"
            )
        key = "not-needed"  # local servers (Ollama, llama.cpp) accept any key
    if not (isinstance(timeout, int | float) and 0 < timeout < math.inf):
        raise ModelConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    kwargs: dict[str, Any] = {"model": model, "api_key": key, "timeout": timeout, "max_retries": max_retries}
    if base_url:
        kwargs["base_url"] = base_url
    if parallel_tool_calls is not None:
        kwargs["parallel_tool_calls"] = parallel_tool_calls
    if model_info is not None:
        kwargs["model_info"] = model_info
    try:
        return DeadlineOpenAIClient(deadline=timeout, **kwargs)
    except ValueError:
        if model_info is not None:
            raise
        kwargs["model_info"] = _generic_model_info()
        return DeadlineOpenAIClient(deadline=timeout, **kwargs)


def model_from_options(
    model: str | None = None, *, base_url: str | None = None, api_key: str | None = None
) -> ChatCompletionClient:
    """The model the CLI asked for: ``--model``/``HANDOFFS_MODEL``, else the built-in offline model."""
    from .offline import OfflineModel

    name = model or os.environ.get("HANDOFFS_MODEL") or "offline"
    if name == "offline":
        return OfflineModel()
    return openai_model(name, base_url=base_url or os.environ.get("OPENAI_BASE_URL"), api_key=api_key)


def model_label(client: ChatCompletionClient) -> str:
    """A short name of the model for the chat banner."""
    label = getattr(client, "label", None)
    if isinstance(label, str):
        return label
    info = getattr(client, "_raw_config", None)
    name = info.get("model") if isinstance(info, dict) else None
    return str(name or type(client).__name__)


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
