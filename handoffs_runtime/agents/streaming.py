"""A streamed reply read under the reply cap: deltas shown as they come, the stream closed at the cap.

A whole reply is cut to ``TeamPolicy.max_reply_chars`` once it has arrived (:func:`~.replies.cut_text`),
but a streamed one is shown while it is written. Without a cap here, a server that streams without end
would send every delta to the person's screen, across a gRPC host or a web socket, and the model client
would keep all of it in memory. :class:`StreamReader` shows the deltas up to the cap, then the note that
the reply was cut, and stops reading: the stream is closed (the HTTP connection with it), and the reply
is the text shown followed by the note, so what the person read and what is stored are the same. A reply
its deadline cuts is kept the same way (:meth:`StreamReader.kept`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable

from autogen_core.models import CreateResult, RequestUsage

from handoffs_runtime.agents.replies import stream_cut_note
from handoffs_runtime.models.failures import cut_note

Show = Callable[[str], Awaitable[None]]
"""Shows the person one piece of the reply (a ``Delta``)."""

_UNKNOWN_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
"""A stream closed early never gets to the usage servers report at its end."""


class StreamReader:
    """Reads one streamed reply (see the module docstring); ``show`` is ``None`` when nobody is shown
    the pieces, and the cap still holds."""

    __slots__ = ("_held", "_limit", "_max", "_note", "_pieces", "_show", "_shown")

    def __init__(self, max_chars: int, show: Show | None) -> None:
        self._max = max_chars
        self._note = stream_cut_note(max_chars)
        self._limit = max(0, max_chars - len(self._note))
        """Text past it is held back until the reply is known to end within the cap."""
        self._show = show
        self._pieces: list[str] = []
        self._shown = 0
        self._held = ""

    async def read(self, stream: AsyncGenerator[str | CreateResult, None]) -> CreateResult:
        """The model's result, or the text up to the cap and the note when the reply goes past it."""
        final: CreateResult | None = None
        try:
            async for chunk in stream:
                if isinstance(chunk, CreateResult):
                    final = chunk
                elif isinstance(chunk, str) and chunk and await self._take(chunk):
                    await self._emit(self._note)
                    return self._result("".join(self._pieces))
        finally:
            await stream.aclose()  # at the cap: the client stops reading and closes the connection
        if final is None:
            raise RuntimeError("the model's stream ended without a final result")
        if self._held:
            await self._emit(self._held)
        return final

    async def kept(self, note: str) -> CreateResult | None:
        """The reply so far followed by ``note`` (shown too), for a stream its deadline cut; ``None`` when
        nothing was said yet."""
        if not self._pieces and not self._held:
            return None
        if self._held:
            await self._emit(self._held)
        await self._emit(note)
        return self._result("".join(self._pieces))

    async def _take(self, chunk: str) -> bool:
        """Show ``chunk`` as far as the cap allows; whether the reply went past the cap."""
        room = self._limit - self._shown
        if room > 0:
            await self._emit(chunk[:room])
            chunk = chunk[room:]
        if not chunk:
            return False
        self._held = (self._held + chunk)[: self._max - self._shown + 1]
        return self._shown + len(self._held) > self._max

    async def _emit(self, text: str) -> None:
        self._pieces.append(text)
        self._shown += len(text)
        if self._show is not None:
            await self._show(text)

    @staticmethod
    def _result(text: str) -> CreateResult:
        return CreateResult(finish_reason="length", content=text, usage=_UNKNOWN_USAGE, cached=False)


async def read_within(
    reader: StreamReader, stream: AsyncGenerator[str | CreateResult, None], seconds: float | None
) -> CreateResult:
    """``reader``'s result of ``stream`` within ``seconds`` (``None``: no deadline); a reply the deadline
    cuts is kept, marked as cut, and one cut before a word was said raises :class:`TimeoutError`."""
    if seconds is None:
        return await reader.read(stream)
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            return await reader.read(stream)
    except TimeoutError:
        kept = await reader.kept(cut_note(seconds)) if scope.expired() else None
        if kept is None:
            raise
        return kept
