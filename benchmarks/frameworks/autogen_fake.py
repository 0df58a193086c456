"""A zero-latency scripted ``ChatCompletionClient`` for the frameworks built on autogen-core.

It always gives the same answer (text, or a call of one tool), so one instance can serve many sessions
at once; ``latency`` simulates a remote model. Written without handoffs_runtime, on purpose.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)

_ZERO = RequestUsage(prompt_tokens=0, completion_tokens=0)
_ids = itertools.count(1)


class ScriptedClient(ChatCompletionClient):
    """Answers ``text``, or calls ``tool`` with no arguments when ``tool`` is given."""

    def __init__(
        self,
        *,
        text: str = "",
        tool: str | None = None,
        latency: float = 0.0,
        on_call: Callable[[], None] | None = None,
    ) -> None:
        self._text = text
        self._tool = tool
        self._latency = latency
        self._on_call = on_call

    async def create(self, messages: Sequence[LLMMessage], **ignored: Any) -> CreateResult:
        """The scripted answer; the tools offered and every other option are ignored."""
        if self._on_call is not None:
            self._on_call()
        if self._latency:
            await asyncio.sleep(self._latency)
        if self._tool is None:
            return CreateResult(finish_reason="stop", content=self._text, usage=_ZERO, cached=False)
        call = FunctionCall(id=f"call_{next(_ids)}", name=self._tool, arguments="{}")
        return CreateResult(finish_reason="function_calls", content=[call], usage=_ZERO, cached=False)

    async def create_stream(
        self, messages: Sequence[LLMMessage], **ignored: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages)

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return _ZERO

    total_usage = actual_usage

    def count_tokens(self, messages: Sequence[LLMMessage], **ignored: Any) -> int:
        return 0

    def remaining_tokens(self, messages: Sequence[LLMMessage], **ignored: Any) -> int:
        return 1_000_000

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(vision=False, function_calling=True, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False,
            function_calling=True,
            json_output=False,
            family="unknown",
            structured_output=False,
            multiple_system_messages=True,
        )
