"""Stored rows back into values, checked: every store decodes what it reads the same way.

A row that a person or a bug scribbled over becomes a :class:`StoreError` naming it, never a value that
fails later somewhere else; both the SQLite and the PostgreSQL store read through here.
"""

from __future__ import annotations

import json
from typing import Any, get_args

from handoffs_runtime.errors import StoreError
from handoffs_runtime.messages import Person
from handoffs_runtime.sessions.store import _MESSAGES, ENTRY_KINDS, SessionState, StoredEntry

STATE_COLUMNS = "id, active_agent, context, context_seq, last_seq, status, team, created_at, updated_at"
"""The columns :func:`state_from_row` reads, in its order."""

ENTRY_COLUMNS = "seq, agent, kind, body, created_at"
"""The columns :func:`entry_from_row` reads, in its order."""


def damaged(what: str, exc: Exception) -> StoreError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(f"{what} is damaged in the store ({reason}); the store was left as is")


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
    """A ``messages`` row (:data:`ENTRY_COLUMNS`) as an entry, checked so whoever reads it can rely on it."""
    seq, agent, kind, body, at = row
    try:
        decoded = json.loads(body)
        if kind not in ENTRY_KINDS or not isinstance(decoded, dict):
            raise ValueError(f"kind {kind!r} with a body of type {type(decoded).__name__}")
        entry = StoredEntry(session_id, seq, agent, kind, decoded, at)
        if kind == "notice":
            if not isinstance(decoded.get("text"), str):
                raise ValueError("a notice without text")
        elif kind == "question":
            _check_question(decoded)
        elif kind == "handoff":
            entry.event()
        else:
            entry.message()
    except ValueError as exc:
        raise damaged(f"entry {seq} of session {session_id!r}", exc) from exc
    return entry


def _check_question(body: dict[str, Any]) -> None:
    words = all(isinstance(body.get(key), str) for key in ("prompt", "answer"))
    if not words or body.get("person") not in get_args(Person):
        raise ValueError("a question without its prompt, answer or person")
