"""A total deadline for every call of an OpenAI-compatible client.

The HTTP client's own timeout bounds each read, so an endpoint that trickles one byte a second never
trips it and holds a turn for as long as it likes. Here the whole call (connecting, the whole body or
every chunk of a stream, and the client's retries) must finish within ``deadline`` seconds; past it the
call raises ``TimeoutError`` and the request is dropped (its connection closed, so a server that notices
stops generating; ``max_tokens`` bounds one that does not), the person is told the model is slow
(:data:`~handoffs_runtime.models.failures.SLOW_MODEL_REPLY`), and the session goes on.

A streamed reply the deadline cuts after its first words is not disowned: the person has read them, so
the stream ends with a note that the reply was cut, and the words and the note are the reply, kept in
the conversation like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from autogen_core.models import CreateResult, RequestUsage

from handoffs_runtime.models.failures import SLOW_MODEL_REPLY as SLOW_MODEL_REPLY
from handoffs_runtime.models.failures import TURN_TIME_REPLY as TURN_TIME_REPLY
from handoffs_runtime.models.failures import cut_note
from handoffs_runtime.models.failures import missed_its_deadline as missed_its_deadline
from handoffs_runtime.models.stream_fallback import StreamFallbackClient


class DeadlineOpenAIClient(StreamFallbackClient):
    """``OpenAIChatCompletionClient`` whose ``create`` and ``create_stream`` end at a total deadline; a
    streamed reply cut by it is kept, marked as cut."""

    def __init__(self, *, deadline: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.deadline = deadline

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        scope = asyncio.timeout(self.deadline)
        try:
            async with scope:
                return await super().create(*args, **kwargs)
        except TimeoutError as exc:
            raise self._late(exc, scope) from exc

    async def create_stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[str | CreateResult, None]:
        # One deadline for the whole stream, checked around each chunk: a timeout must never span a
        # ``yield``, or it would cancel whatever the consumer does in between.
        end = asyncio.get_running_loop().time() + self.deadline
        stream = super().create_stream(*args, **kwargs)
        said: list[str] = []
        try:
            while True:
                scope = asyncio.timeout_at(end)
                try:
                    async with scope:
                        chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    if not (said and scope.expired()):
                        raise self._late(exc, scope) from exc
                    break
                if isinstance(chunk, str):
                    said.append(chunk)
                yield chunk
        finally:
            await stream.aclose()
        note = cut_note(self.deadline)
        yield note
        usage = RequestUsage(prompt_tokens=0, completion_tokens=0)  # the server reports it at the end
        yield CreateResult(finish_reason="length", content="".join(said) + note, usage=usage, cached=False)

    def _late(self, exc: TimeoutError, scope: asyncio.Timeout) -> TimeoutError:
        """The deadline's own error, or ``exc`` itself when something else timed out."""
        if not scope.expired():
            return exc
        return TimeoutError(f"no complete answer from the model within the {self.deadline:g} s deadline")
