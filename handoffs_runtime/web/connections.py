"""uvicorn's HTTP and WebSocket protocols with a deadline per request and caps on open connections.

uvicorn has a keep-alive timeout but none for reading a request: a client that sends half a request
head, then a byte now and then (slowloris), holds its connection for ever, and a thousand of them use up
the server's file descriptors. Here each request must arrive whole (head and body) within
``Limits.request_seconds`` of the connection opening or of the previous response; a connection beyond
``max_connections``, or beyond one address's share of them (``Limits.share``), is answered 503 and
closed at once. A connection upgraded to a WebSocket keeps counting for its address until it closes, and one
whose page stops reading is cut off when a frame has waited ``Limits.send_seconds`` for room: nobody
waits on a page that does not read.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from handoffs_runtime.web.limits import Limits, RateWindow, client_key, groups, networks, within

logger = logging.getLogger("handoffs_runtime.web")

_BUSY_TEXT = b"the server is busy; please try again in a moment\n"
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_BUSY_TEXT), _BUSY_TEXT)
)
_READING = (h11.IDLE, h11.SEND_BODY)
"""The client's states while its request is not yet whole."""


def protocols(limits: Limits) -> tuple[type[H11Protocol], type[WebSocketsSansIOProtocol]]:
    """The HTTP and WebSocket protocol classes for one server (``uvicorn.Config(http=..., ws=...)``)."""
    proxies = networks(limits.trusted_proxies)
    open_by_client: Counter[str] = Counter()
    per_client = limits.share(limits.connections_per_client, limits.max_connections)
    opened = RateWindow(limits.connections_per_minute)
    told = RateWindow(1)  # a refused client is logged once a minute, not once per connection

    def refuse(client: str | None, why: str) -> None:
        if told.allow(client or "a trusted proxy"):
            logger.warning("refused connections from %s: %s", client or "a trusted proxy", why)

    def counted(peer: tuple[str, int] | None) -> str | None:
        """The client a connection counts for; ``None`` for a trusted proxy (it carries many clients)."""
        host = peer[0] if peer else None
        return None if within(host, proxies) else client_key(host)

    def full(client: str) -> bool:
        """Whether ``client`` (or its neighbourhood) holds its share of the connections already."""
        return any(open_by_client[key] >= worth * per_client for key, worth in groups(client))

    def release(client: str | None) -> None:
        for key, _ in groups(client) if client is not None else []:
            open_by_client[key] -= 1
            if open_by_client[key] <= 0:
                del open_by_client[key]

    class Http(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _client: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            client = counted(self.client)
            if client is not None and not opened.allow(client):
                refuse(client, "too many a minute")
                transport.close()  # the cheapest refusal: a client opening this many is not a page
                return
            if len(self.connections) > limits.max_connections or (client is not None and full(client)):
                refuse(client, "too many open")
                transport.write(BUSY)
                transport.close()
                return
            for key, _ in groups(client) if client is not None else []:
                open_by_client[key] += 1
            self._client = client
            self._follow()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            release(self._client)
            self._client = None
            super().connection_lost(exc)

        def _follow(self) -> None:
            """Keep a deadline while the client owes us a request; none once it is whole or upgraded."""
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                self._stop()  # upgraded: the WebSocket protocol has the connection (and its count) now
            elif self.conn.their_state in _READING:
                if self._deadline is None:
                    self._deadline = self.loop.call_later(limits.request_seconds, self._too_slow)
            else:
                self._stop()

        def _stop(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                logger.info("closed a connection from %s: no whole request in time", self._client)
                self.transport.close()

    class WebSocket(WebSocketsSansIOProtocol):
        _client: str | None = None

        async def send(self, message: Any) -> None:
            if not self.writable.is_set():  # the page stopped reading: its buffer is full
                try:
                    await asyncio.wait_for(self.writable.wait(), limits.send_seconds)
                except TimeoutError:
                    logger.info("dropped a WebSocket from %s: it stopped reading", self._client)
                    self.transport.abort()  # uvicorn then fails this send and tells the app it is gone
            await super().send(message)
            if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
                # A refusal (429, 400) was sent whole. uvicorn does not count that as the end of the
                # handshake and would log an error for each one; an attacker would fill the log.
                self.handshake_complete = True

        def send_receive_event_to_app(self) -> None:
            data = b"".join(self.frames)
            if self.curr_msg_data_type == "text" and not self.close_sent and not _utf8(data):
                # uvicorn would log a traceback and close with no word to the page: the app refuses it
                # instead (its undecodable bytes arrive as lone surrogates, see sockets.receive_text).
                self.frames = []
                text = data.decode(errors="surrogateescape")
                self.queue.put_nowait({"type": "websocket.receive", "text": text})
                if not self.read_paused:
                    self.read_paused = True
                    self.transport.pause_reading()
                return
            super().send_receive_event_to_app()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._client = counted(self.client)  # counted by the HTTP protocol it was upgraded from

        def connection_lost(self, exc: Exception | None) -> None:
            release(self._client)
            self._client = None
            super().connection_lost(exc)

    return Http, WebSocket


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
