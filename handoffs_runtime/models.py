"""Model selection: the built-in offline model, any OpenAI-compatible endpoint, scripted models for tests.

Every model is an autogen-core ``ChatCompletionClient``, so anything autogen can talk to works here too.
While an agent calls its model, :func:`current_model_call` tells the model which agent and session it is
serving and which of the offered tools are handoffs; local models use that, remote ones ignore it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from autogen_core.models import (
    ChatCompletionClient,
    LLMMessage,
    ModelFamily,
    ModelInfo,
)
from autogen_core.tools import ToolSchema

from .errors import ModelConfigError, ScriptError
from .local_model import LocalModel as LocalModel
from .local_model import ModelCall as ModelCall
from .local_model import Reply as Reply
from .local_model import current_model_call as current_model_call
from .local_model import model_call_scope as model_call_scope
from .local_model import tool_call as tool_call
from .offline import OfflineModel

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
