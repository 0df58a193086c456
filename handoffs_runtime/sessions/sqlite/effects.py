"""The SQLite store's effect ledger, run on its thread: intents recorded once, outcomes after.

See :mod:`handoffs_runtime.sessions.effects`.

Recording an intent is one ``INSERT ... ON CONFLICT`` in one ``BEGIN IMMEDIATE`` transaction: of two
processes with one key, the second finds the first's row. Effects belong to no one writer of a session
(a worker of another process may run the tool), so they need no lease.
"""

from __future__ import annotations

import sqlite3
import time

from handoffs_runtime.sessions import effects as ledger
from handoffs_runtime.sessions.effects import Effect, EffectKey, EffectStatus

SCHEMA = """
CREATE TABLE effects (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    position INTEGER NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL DEFAULT '',
    claim TEXT NOT NULL,
    created_at REAL NOT NULL,
    settled_at REAL
) WITHOUT ROWID;
CREATE INDEX effects_by_session ON effects (session_id, created_at)
"""
"""The ledger's table; ``claim`` names the call that recorded the intent (its retry knows its own)."""

SQL = ledger.effect_statements("?", "?")


def record_intent(conn: sqlite3.Connection, key: EffectKey, position: int, claim: str) -> Effect | None:
    conn.execute("BEGIN IMMEDIATE")
    cursor = conn.execute(
        SQL.intent, (key.id, key.session_id, key.turn, position, key.tool, key.arguments, claim, time.time())
    )
    ours = cursor.rowcount == 1
    found = None if ours else lookup(conn, key)
    conn.execute("COMMIT")
    return found


def record_outcome(conn: sqlite3.Connection, key: EffectKey, status: EffectStatus, result: str) -> None:
    conn.execute(SQL.outcome, (status, result[: ledger.RESULT_CHARS], time.time(), key.id))


def lookup(conn: sqlite3.Connection, key: EffectKey) -> Effect | None:
    row = conn.execute(SQL.by_key, (key.id,)).fetchone()
    return ledger.effect_from_row(row) if row is not None else None


def effects(conn: sqlite3.Connection, session_id: str) -> list[Effect]:
    """The session's effects; none from a store older than the ledger (read-only, not migrated)."""
    known = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'effects'").fetchone()
    if known is None:
        return []
    rows = conn.execute(SQL.by_session, (session_id,)).fetchall()
    return [ledger.effect_from_row(row) for row in rows]


def forget(conn: sqlite3.Connection, session_id: str) -> None:
    """In the open transaction: the session is deleted, and its effects with it."""
    conn.execute(SQL.forget, (session_id,))
