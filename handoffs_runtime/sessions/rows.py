"""Stored rows back into values, checked: every store decodes what it reads the same way.

A row that a person or a bug scribbled over becomes a :class:`StoreError` naming it (an entry's body: a
:class:`CorruptEntryError`), never a value that fails later somewhere else; both the SQLite and the
PostgreSQL store read through here.
"""

from __future__ import annotations

import json
from typing import Any

from handoffs_runtime.errors import CorruptEntryError, StoreError
from handoffs_runtime.sessions.store import _MESSAGES, SessionState, StoredEntry

STATE_COLUMNS = "id, active_agent, context, context_seq, last_seq, status, team, created_at, updated_at"
"""The columns :func:`state_from_row` reads, in its order."""

ENTRY_COLUMNS = "seq, agent, kind, body, created_at"
"""The columns :func:`entry_from_row` reads, in its order."""


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def damaged(what: str, exc: Exception) -> StoreError:
    return StoreError(f"{what} is damaged in the store ({_first_line(exc)}); the store was left as is")


def state_from_row(row: tuple[Any, ...]) -> SessionState:
    """A ``sessions`` row (:data:`STATE_COLUMNS`) as a state; its context is JSON text."""
    try:
        context = _MESSAGES.validate_json(row[2])
    except ValueError as exc:
        raise damaged(f"the context of session {row[0]!r}", exc) from exc
    return SessionState(
        session_id=row[0],
        active_agent=row[1],
        context=context,
        context_seq=row[3],
        last_seq=row[4],
        status=row[5],
        team=row[6],
        created_at=row[7],
        updated_at=row[8],
    )


def entry_from_row(session_id: str, row: tuple[Any, ...]) -> StoredEntry:
    """A ``messages`` row (:data:`ENTRY_COLUMNS`) as an entry whose body is checked against its kind
    (:class:`CorruptEntryError` when it is not), so whoever reads it can rely on it."""
    seq, agent, kind, body, at = row
    try:
        decoded = json.loads(body)
    except ValueError as exc:
        raise CorruptEntryError(session_id, seq, _first_line(exc)) from exc
    return StoredEntry(session_id, seq, agent, kind, decoded, at)
