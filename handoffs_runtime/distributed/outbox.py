"""Events across a host restart: what a lost connection may not have delivered goes out again, once.

A host that dies is noticed a moment later, when the stream's read fails. An event published in that
moment goes to the dead connection: gRPC writes it into a socket nobody reads, or its write fails and
gRPC drops it, without a word either way (a person's message typed as the host restarts was lost so).
No message on the stream is acknowledged, so the sender cannot tell which of its last events the host
read before it died.

So each connection's :class:`Outbox` keeps what may not have arrived: the events it wrote in its last
``keep_for`` seconds and heard nothing back about (no event of the same session came from the host
since), the one being written, and those still queued. When the connection is lost they are sent first on
the next one. An event the host did pass on before dying then arrives twice, and :class:`SeenEvents` in
every process drops the second copy by its id: each event is handled once, however often it was sent.

Only published events are carried over: a request to the old host has failed already (its caller was
told), and a reply to one has nobody left to read it. An event older than ``keep_for`` at the loss is
taken as delivered; one that was not (a host machine that vanished without closing its connections is
noticed only by keepalive) is the turn in flight, which the front end's turn watch reports.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from autogen_ext.runtimes.grpc.protos import agent_worker_pb2

Message = agent_worker_pb2.Message

KEEP_AT_MOST = 1024
"""Written events an outbox keeps at most, whatever their age (they hold whole conversations)."""

REMEMBER_IDS = 16384
"""Received event ids a process remembers: far more than arrive within one ``keep_for``."""

_END = Message()
"""Put last by :meth:`Outbox.close`: the task that writes the queue ends instead of waiting on a queue
nobody fills (and being destroyed while pending)."""


def _is_event(message: Message) -> bool:
    return message.WhichOneof("message") == "cloudEvent"


class Outbox(asyncio.Queue[Message]):
    """The send queue of one host connection, read by its writing task; it keeps what may need sending
    again.

    The writer asks for the next message only after a write that went through, so the message it holds
    until then may not have been written at all.
    """

    def __init__(self, keep_for: float) -> None:
        super().__init__()
        self._keep_for = keep_for
        self._in_hand: Message | None = None
        self._written: deque[tuple[float, Message]] = deque(maxlen=KEEP_AT_MOST)
        """Events written and not yet answered, with when: the host may have died before reading them."""
        self._closed = False

    async def get(self) -> Message:
        """The next message to write; asking for it means the last one was written."""
        if self._in_hand is not None:
            if _is_event(self._in_hand):
                self._written.append((time.monotonic(), self._in_hand))
            self._in_hand = None
        message = await super().get()
        if message is _END:
            raise StopAsyncIteration
        self._in_hand = message
        return message

    def heard(self, message: Message) -> None:
        """The host sent ``message``: what this connection wrote in its session arrived, it seems."""
        if _is_event(message):
            session = message.cloudEvent.source
            kept = [(at, m) for at, m in self._written if m.cloudEvent.source != session]
            if len(kept) < len(self._written):
                self._written = deque(kept, maxlen=KEEP_AT_MOST)

    def close(self) -> list[Message]:
        """Stop the writing; return the events that may not have reached the host, oldest first."""
        since = time.monotonic() - self._keep_for
        unsent = [message for at, message in self._written if at >= since]
        self._written.clear()
        if self._in_hand is not None:
            unsent.append(self._in_hand)
            self._in_hand = None
        while not self.empty():
            unsent.append(self.get_nowait())
        if not self._closed:
            self._closed = True
            self.put_nowait(_END)
        return [m for m in unsent if m is not _END and _is_event(m)]


class SeenEvents:
    """The ids of the last events a process received, so that one sent again is handled only once."""

    def __init__(self, size: int = REMEMBER_IDS) -> None:
        self._ids: set[str] = set()
        self._order: deque[str] = deque()
        self._size = size

    def first_time(self, message: Message) -> bool:
        """Whether ``message`` is new here (always, for what is not an event); remembers it."""
        if not _is_event(message) or not message.cloudEvent.id:
            return True
        event_id = message.cloudEvent.id
        if event_id in self._ids:
            return False
        self._ids.add(event_id)
        self._order.append(event_id)
        if len(self._order) > self._size:
            self._ids.discard(self._order.popleft())
        return True
