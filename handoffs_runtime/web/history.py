"""The transcripts customers' pages are shown: each entry read and encoded once, sent in pages.

A page that connects gets the last ``page`` items of its session and asks for earlier ones when the
customer wants them. A live session's items are kept encoded as JSON, so a customer who reloads (or a
script that reconnects in a loop) costs one indexed read of what is new and the joining of a few
strings, not the reading, validating and encoding of the whole transcript on the event loop, where
every other customer waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from handoffs_runtime.errors import StoreError, UnknownSessionError
from handoffs_runtime.sessions.store import SessionStore, StoredEntry
from handoffs_runtime.web.frames import CustomerItem, encode, transcript_page

logger = logging.getLogger("handoffs_runtime.web")

ItemsOf = Callable[[StoredEntry], list[CustomerItem]]
"""How a stored entry is shown on a page: as no item, one, or several."""


@dataclass(eq=False)
class _Transcript:
    items: list[str] = field(default_factory=list)
    """Each shown entry, encoded."""
    seq: int = 0
    """The last entry read."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Transcripts:
    """The encoded transcripts of live sessions, read from ``store``; ``forget`` one when it ends."""

    def __init__(self, store: SessionStore, items_of: ItemsOf, *, page: int = 50) -> None:
        self._store = store
        self._items_of = items_of
        self.page_size = page
        self._live: dict[str, _Transcript] = {}

    async def latest(self, session_id: str) -> tuple[str, int]:
        """The ``history`` message with the last page of the session's items, and how many it has."""
        items = await self._items(session_id)
        start = max(0, len(items) - self.page_size)
        return transcript_page("history", start, items[start:]), len(items)

    async def earlier(self, session_id: str, before: int) -> str:
        """The ``earlier`` message: the page of items just before item number ``before``."""
        items = await self._items(session_id)
        end = min(before, len(items))
        start = max(0, end - self.page_size)
        return transcript_page("earlier", start, items[start:end])

    def forget(self, session_id: str) -> None:
        self._live.pop(session_id, None)

    async def _items(self, session_id: str) -> list[str]:
        transcript = self._live.setdefault(session_id, _Transcript())
        async with transcript.lock:  # two pages of one session connecting at once read it once
            try:
                entries = await self._store.entries(session_id, after=transcript.seq)
            except UnknownSessionError:  # a new session: nothing stored yet
                entries = []
            except StoreError as exc:  # the page still works; the session itself reports a broken store
                logger.warning("no history for session %s: %s", session_id, exc)
                entries = []
            if entries:
                transcript.seq = entries[-1].seq
                transcript.items += await asyncio.to_thread(self._encode, entries)
        return transcript.items

    def _encode(self, entries: list[StoredEntry]) -> list[str]:
        return [encode(item) for entry in entries for item in self._items_of(entry)]
