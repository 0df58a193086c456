"""The WebSockets of ``handoffs serve``: a socket as a hub peer, and how a connection is refused.

A page's socket sends typed frames (``frames``), one at a time; it receives text only, within a deadline
while nothing has been said yet. A connection that breaks the protocol gets one error and is closed
(:class:`Closing`); a page from another origin never connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TypeVar

from starlette.responses import PlainTextResponse
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from handoffs_runtime.web.frames import Frame, Problem, encode
from handoffs_runtime.web.protocol import BadMessage

Message = TypeVar("Message")
logger = logging.getLogger("handoffs_runtime.web")

BACKLOG = 512
"""Frames that may wait for one page: a page that lets more pile up has stopped reading."""

POLICY_VIOLATION = 1008
UNSUPPORTED_DATA = 1003
TRY_AGAIN_LATER = 1013
INVALID_TEXT = 1007
NOT_UTF8 = "malformed message: text must be UTF-8"
MALFORMED = "malformed message: expected one JSON object"


class SocketPeer:
    """A WebSocket as a hub peer: JSON out, in order, without the sender ever waiting for the page.

    Frames wait in a bounded backlog that one writer drains; a page that stops reading fills it and is
    dropped (its frames are no longer queued, and the server closes its connection: ``web/connections``
    bounds each write), so a slow or stalled page never delays the operator or the session that sends
    to it.
    """

    def __init__(self, socket: WebSocket, *, backlog: int = BACKLOG) -> None:
        self._socket = socket
        self._out: asyncio.Queue[str | None] = asyncio.Queue(backlog)
        self._writer: asyncio.Task[None] | None = None
        self.dropped = False
        """Whether the page stopped reading (or went away): it gets nothing more."""

    async def send(self, frame: Frame) -> None:
        await self.send_json(encode(frame))

    async def send_json(self, text: str) -> None:
        self._queue(text)

    def _queue(self, text: str | None) -> None:
        if self.dropped:
            return
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write())
        try:
            self._out.put_nowait(text)
        except asyncio.QueueFull:
            self.dropped = True
            logger.info("dropped a page that stopped reading (%d frames waited for it)", self._out.qsize())

    async def _write(self) -> None:
        try:
            while not self.dropped and (text := await self._out.get()) is not None:
                if self._socket.application_state != WebSocketState.CONNECTED:
                    return
                await self._socket.send_text(text)
            if self.dropped:  # it stopped reading: closed, and its page comes back for a fresh start
                await self._socket.close(TRY_AGAIN_LATER)
        except (WebSocketDisconnect, OSError, RuntimeError):  # gone, or cut off for not reading
            self.dropped = True

    async def finish(self, last: Frame | None = None, code: int | None = None) -> None:
        """Send what is queued (and ``last``), then close with ``code`` if given; bounded, as every write."""
        if last is not None:
            await self.send(last)
        if not self.dropped:
            self._queue(None)
        if self._writer is not None:
            await asyncio.wait({self._writer})
        if code is not None and not self.dropped:
            with contextlib.suppress(WebSocketDisconnect, OSError, RuntimeError):
                if self._socket.application_state == WebSocketState.CONNECTED:
                    await self._socket.close(code)

    def stop(self) -> None:
        """The connection ended: nothing more is sent."""
        self.dropped = True
        if self._writer is not None:
            self._writer.cancel()


class Closing(Exception):
    """Ends the connection: its text is sent as one error, then the socket closes with ``code``."""

    def __init__(self, message: str, code: int = POLICY_VIOLATION) -> None:
        super().__init__(message)
        self.code = code


LATE = "nothing was said in time: connect again when ready"
QUIET = "this page was quiet for a while, so it reconnects"


async def receive_text(socket: WebSocket, timeout: float | None = None, late: str = LATE) -> str | None:
    """The next text frame; ``None`` when the page went away. ``Closing`` for a binary frame, or for
    no frame within ``timeout`` seconds (``late`` says why; the page may come back)."""
    try:
        message = await asyncio.wait_for(socket.receive(), timeout)
    except TimeoutError:
        raise Closing(late, POLICY_VIOLATION if late == LATE else TRY_AGAIN_LATER) from None
    if message["type"] == "websocket.disconnect":
        return None
    text = message.get("text")
    if not isinstance(text, str):
        raise Closing(MALFORMED, UNSUPPORTED_DATA)
    try:
        text.encode()
    except UnicodeEncodeError:  # bytes that were not UTF-8 (see ``connections``)
        raise Closing(NOT_UTF8, INVALID_TEXT) from None
    return text


def parsed(raw: str, parse: Callable[[str], Message]) -> Message:
    """A message the protocol allows; anything else ends the connection (a page never sends it)."""
    try:
        return parse(raw)
    except BadMessage as exc:
        raise Closing(str(exc)) from None


async def deny(socket: WebSocket, status: int, text: str) -> None:
    """Refuse a WebSocket before it opens, with an HTTP status the page's network log shows."""
    headers = {"Retry-After": "60"} if status == 429 else None
    await socket.send_denial_response(PlainTextResponse(text, status_code=status, headers=headers))


def same_origin(socket: WebSocket) -> bool:
    """Browsers send ``Origin`` with every WebSocket: only pages served from here may connect."""
    origin = socket.headers.get("origin")
    if origin is None:  # not a browser (a script, a test): it has to authenticate like anyone else
        return True
    host = socket.headers.get("host", "")
    return origin.split("://", 1)[-1] == host


async def close(peer: SocketPeer, closing: Closing) -> None:
    """Tell the page why, then close its connection (the page may be gone already)."""
    await peer.finish(Problem(message=str(closing)), closing.code)
