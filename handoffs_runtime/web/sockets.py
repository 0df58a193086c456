"""The WebSockets of ``handoffs serve``: a socket as a hub peer, and how a connection is refused.

A page's socket sends typed frames (``frames``), one at a time; it receives text only, within a deadline
while nothing has been said yet. A connection that breaks the protocol gets one error and is closed
(:class:`Closing`); a page from another origin never connects.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

from starlette.responses import PlainTextResponse
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from handoffs_runtime.web.frames import Frame, Problem, encode
from handoffs_runtime.web.protocol import BadMessage

Message = TypeVar("Message")

POLICY_VIOLATION = 1008
UNSUPPORTED_DATA = 1003
TRY_AGAIN_LATER = 1013
MALFORMED = "malformed message: expected one JSON object"


class SocketPeer:
    """A WebSocket as a hub peer: JSON out, one send at a time."""

    def __init__(self, socket: WebSocket) -> None:
        self._socket = socket
        self._lock = asyncio.Lock()

    async def send(self, frame: Frame) -> None:
        await self.send_json(encode(frame))

    async def send_json(self, text: str) -> None:
        async with self._lock:
            if self._socket.application_state == WebSocketState.CONNECTED:
                await self._socket.send_text(text)


class Closing(Exception):
    """Ends the connection: its text is sent as one error, then the socket closes with ``code``."""

    def __init__(self, message: str, code: int = POLICY_VIOLATION) -> None:
        super().__init__(message)
        self.code = code


async def receive_text(socket: WebSocket, timeout: float | None = None) -> str | None:
    """The next text frame; ``None`` when the page went away. ``Closing`` for a binary frame, or for
    no frame within ``timeout`` seconds."""
    try:
        message = await asyncio.wait_for(socket.receive(), timeout)
    except TimeoutError:
        raise Closing("nothing was said in time: connect again when ready") from None
    if message["type"] == "websocket.disconnect":
        return None
    text = message.get("text")
    if not isinstance(text, str):
        raise Closing(MALFORMED, UNSUPPORTED_DATA)
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


async def close(socket: WebSocket, peer: SocketPeer, closing: Closing) -> None:
    with contextlib.suppress(WebSocketDisconnect):  # the page may be gone already
        await peer.send(Problem(message=str(closing)))
        if socket.application_state == WebSocketState.CONNECTED:
            await socket.close(closing.code)
