"""The PostgreSQL store's effect ledger: intents recorded once across machines, outcomes after.

See :mod:`handoffs_runtime.sessions.effects`.

Recording an intent is one ``INSERT ... ON CONFLICT``: of several front ends, web servers or workers
with one key, one inserts and the others find its row. Each intent carries the id of the call that
recorded it (``claim``), so a call retried after its connection broke as it committed knows the row is
its own (and runs the tool) rather than taking it for another's.
"""

from __future__ import annotations

from psycopg import Connection
from psycopg.rows import TupleRow

from handoffs_runtime.sessions import effects as ledger
from handoffs_runtime.sessions.effects import Effect, EffectKey, EffectStatus

Conn = Connection[TupleRow]

_NOW = "extract(epoch from clock_timestamp())::float8"
"""The database's time now (not the transaction's start): the order effects are recorded in."""

SCHEMA = """
CREATE TABLE effects (
    id text PRIMARY KEY,
    session_id text NOT NULL,
    turn bigint NOT NULL,
    position integer NOT NULL,
    tool text NOT NULL,
    arguments text NOT NULL,
    status text NOT NULL,
    result text NOT NULL DEFAULT '',
    claim text NOT NULL,
    created_at double precision NOT NULL,
    settled_at double precision
);
CREATE INDEX effects_by_session ON effects (session_id, created_at)
"""

SQL = ledger.effect_statements("%s", _NOW)


def record_intent(conn: Conn, retry: bool, key: EffectKey, position: int, claim: str) -> Effect | None:
    cursor = conn.execute(
        SQL.intent, (key.id, key.session_id, key.turn, position, key.tool, key.arguments, claim)
    )
    if cursor.rowcount == 1:
        return None
    cursor = conn.execute(SQL.by_key, (key.id,))
    row = cursor.fetchone()
    if row is None:  # not reached: the row that conflicted is there
        return None
    effect = ledger.effect_from_row(row)
    if retry and row[-1] == claim and effect.status == "pending":
        return None  # this call's earlier try recorded it, then lost its connection
    return effect


def record_outcome(conn: Conn, retry: bool, key: EffectKey, status: EffectStatus, result: str) -> None:
    conn.execute(SQL.outcome, (status, result[: ledger.RESULT_CHARS], key.id))


def lookup(conn: Conn, retry: bool, key: EffectKey) -> Effect | None:
    cursor = conn.execute(SQL.by_key, (key.id,))
    row = cursor.fetchone()
    return ledger.effect_from_row(row) if row is not None else None


def effects(conn: Conn, retry: bool, session_id: str) -> list[Effect]:
    cursor = conn.execute(SQL.by_session, (session_id,))
    return [ledger.effect_from_row(row) for row in cursor.fetchall()]


def forget(conn: Conn, session_id: str) -> None:
    """In the open transaction: the session is deleted, and its effects with it."""
    conn.execute(SQL.forget, (session_id,))
