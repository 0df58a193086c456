"""What the SQLite and PostgreSQL stores share: checked settings, their holder, and encoding an append.

Each store subclasses :class:`SQLStore` and writes the encoded rows its own way (:meth:`_append`),
so both store exactly the same text for the same entries.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from typing import Any, NamedTuple, Unpack

from handoffs_runtime.errors import StoreConflictError, StoreError
from handoffs_runtime.sessions.held import HeldSessions, extends
from handoffs_runtime.sessions.leases import Holder
from handoffs_runtime.sessions.store import _MESSAGES, NewEntry, SessionUpdate

_ENCODER = json.JSONEncoder(ensure_ascii=False)
_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_one_shot = (
    _make_encoder(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
    if _make_encoder is not None
    else None
)


def _encode(body: dict[str, Any]) -> str:
    """``json.dumps(body, ensure_ascii=False)``, with one C encoder made once (``json.dumps``, and even
    ``JSONEncoder.encode``, make one for every call)."""
    if _one_shot is None:  # an interpreter without the C accelerator
        return _ENCODER.encode(body)
    return "".join(_one_shot(body, 0))


Row = tuple[str, str, str]
"""One entry to insert: its agent, its kind and its body as JSON."""


class EncodedAppend(NamedTuple):
    """One :meth:`SQLStore.append` as the database takes it: rows and the context as JSON (a named tuple:
    one is made for every append, and a tuple is made in one step)."""

    session_id: str
    rows: Sequence[Row]
    active_agent: str | None
    context_json: str | None
    expected_seq: int | None
    context_delta: bool = False
    """``context_json`` holds only the messages the stored context gained (``[]``: none), not all of it."""
    last_known: int | None = None
    """The session's last sequence number as this store last wrote it (see ``SQLStore.held``), when it
    holds the session: most likely still the last, so a store may try the write as if it were expected."""

    def check_expected(self, last: int) -> None:
        """Refuse the write when the session's last sequence number ``last`` is not ``expected_seq``."""
        if self.expected_seq is not None and last != self.expected_seq:
            raise StoreConflictError(
                f"session {self.session_id!r} gained entries {self.expected_seq + 1}..{last} since it was "
                "read; nothing was written"
            )


def context_after(placeholder: str) -> str:
    """The SQL of a stored context that gains the messages of a JSON array ``placeholder`` (a delta,
    see ``EncodedAppend.context_delta``), without the client sending or encoding what was stored."""
    p = placeholder
    return (
        f"CASE WHEN {p} = '[]' THEN context WHEN context = '[]' THEN {p} "
        f"ELSE substr(context, 1, length(context) - 1) || ',' || substr({p}, 2) END"
    )


class SQLStore(ABC):
    """The base of the SQL session stores: ``failure`` is the first error the store raised on a read or
    write (not counting unknown sessions or conflicts), so a caller whose session stopped on it can tell.
    """

    def __init__(self, *, read_only: bool, lease_seconds: float, **more_seconds: float) -> None:
        """Refuse a duration (``lease_seconds`` and each of ``more_seconds``) that is not a positive,
        finite number of seconds, before anything is opened."""
        for name, value in (("lease_seconds", lease_seconds), *more_seconds.items()):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive, finite number of seconds, got {value}")
        self.read_only = read_only
        self.failure: StoreError | None = None
        self._holder = Holder.here()
        self._lease_seconds = lease_seconds
        self._opened: set[str] = set()
        """Sessions this store opened (claimed): a write to one whose claim is gone was taken over."""
        self.held = HeldSessions()
        """What this store wrote to the sessions it holds (see :mod:`~handoffs_runtime.sessions.held`)."""

    async def append(
        self, session_id: str, entries: Sequence[NewEntry], **update: Unpack[SessionUpdate]
    ) -> int:
        if not update.keys() <= SessionUpdate.__optional_keys__:  # a typo must not pass unseen
            unknown = update.keys() - SessionUpdate.__optional_keys__
            raise TypeError(f"append() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
        context = update.get("context")
        expected = update.get("expected_seq")
        context_json, delta = None, False
        held = self.held.get(session_id)
        if context is not None:
            # Only the messages the context gained, when the compare-and-set proves the stored context
            # is the one this store holds.
            delta = held is not None and expected == held.last_seq and extends(held.context, context)
            sent = list(context)[len(held.context) :] if held is not None and delta else list(context)
            context_json = _MESSAGES.dump_json(sent).decode()
        rows = [(e.agent, e.kind, _encode(e.body)) for e in entries]
        known = held.last_seq if held is not None else None
        agent = update.get("active_agent")
        encoded = EncodedAppend(session_id, rows, agent, context_json, expected, delta, known)
        try:
            last = await self._append(encoded)
        except BaseException:
            self.held.forget(session_id)  # whatever happened, what this store knew may be wrong now
            raise
        self.held.appended(session_id, entries, context, last)
        return last

    @abstractmethod
    def _append(self, append: EncodedAppend) -> Awaitable[int]:
        """Store one :meth:`append`, in one transaction (see ``SessionStore.append``): a future, or a
        coroutine (a future spares every append a coroutine frame to pass through twice)."""
