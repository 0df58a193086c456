"""``TracedModel``: a model client that wraps another and traces every call as ``chat <model>``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema

from handoffs_runtime.models.local import CreateOptions

if TYPE_CHECKING:
    from handoffs_runtime.telemetry.core import Telemetry


def _model_name(client: ChatCompletionClient) -> tuple[str, str, bool]:
    """The model's name, its provider, and whether it is in-process (then it is also the response model)."""
    from handoffs_runtime.models.choice import model_label
    from handoffs_runtime.models.local import LocalModel

    local = isinstance(client, LocalModel)
    openai = any("openai" in kind.__module__ for kind in type(client).__mro__)  # subclasses, e.g. deadlines
    provider = "openai" if openai and not local else "handoffs_runtime"
    return model_label(client), provider, local


class TracedModel(ChatCompletionClient):
    """Delegates everything to ``inner``; ``create`` and ``create_stream`` are traced.

    Attributes the package reads from models (``label``, ``answers_promptly``) are the inner model's.
    """

    def __init__(self, inner: ChatCompletionClient, telemetry: Telemetry) -> None:
        self._inner = inner
        self._telemetry = telemetry
        self._name, self._provider, self._local = _model_name(inner)

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self._inner, name)

    @property
    def inner(self) -> ChatCompletionClient:
        return self._inner

    async def create(self, messages: Sequence[LLMMessage], **options: Unpack[CreateOptions]) -> CreateResult:
        call = self._telemetry.model_call(self._name, self._provider, messages)
        try:
            result = await self._inner.create(messages, **options)
        except BaseException as exc:
            call.failed(exc)
            raise
        call.succeeded(result, self._name if self._local else None)
        return result

    async def create_stream(
        self, messages: Sequence[LLMMessage], **options: Unpack[CreateOptions]
    ) -> AsyncGenerator[str | CreateResult, None]:
        call = self._telemetry.model_call(self._name, self._provider, messages)
        final: CreateResult | None = None
        try:
            async for chunk in self._inner.create_stream(messages, **options):
                if isinstance(chunk, CreateResult):
                    final = chunk
                yield chunk
        except BaseException as exc:
            call.failed(exc)
            raise
        if final is None:
            call.failed(RuntimeError("the model's stream ended without a final result"))
        else:
            call.succeeded(final, self._name if self._local else None)

    async def close(self) -> None:
        await self._inner.close()

    def actual_usage(self) -> RequestUsage:
        return self._inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self._inner.total_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return self._inner.count_tokens(messages, tools=tools)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()
    ) -> int:
        return self._inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        return self._inner.model_info
