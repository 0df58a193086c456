"""The PostgreSQL store's queries that need no session's lease: reading, secrets and operator state.

Each takes a pooled connection and whether the call is a retry (after a connection lost mid-call), as
:meth:`PostgresSessionStore._call` passes them; each is one statement or reads only, so a retry is safe.
"""

from __future__ import annotations

from typing import Any

from psycopg import Connection
from psycopg.rows import TupleRow

from handoffs_runtime.errors import StoreError, UnknownSessionError
from handoffs_runtime.sessions.desk import OperatorWait, release_statement
from handoffs_runtime.sessions.rows import ENTRY_COLUMNS, STATE_COLUMNS, entry_from_row, state_from_row
from handoffs_runtime.sessions.sql_store import EncodedAppend, context_after
from handoffs_runtime.sessions.store import SessionInfo, SessionState, StoredEntry

Conn = Connection[TupleRow]

NOW = "extract(epoch from now())::float8"
"""The database's time as seconds since the epoch, as the store's time columns hold it."""

_WAIT_COLUMNS = "session_id, prompt, since, taken_by"

DELTA = context_after("%(ctx)s")
"""The stored context with the messages of ``%(ctx)s`` added (see ``EncodedAppend.context_delta``)."""


def _fast_append(context: str) -> str:
    """An append as one statement: the lease is ours (locked for sharing, as ``leases.check`` does), the
    compare-and-set holds, the session row gains the entries' count, the entries go in; it returns the new
    last sequence number, or no row when any condition fails (then nothing was written)."""
    return f"""
WITH lease AS (
    SELECT 1 FROM leases WHERE session_id = %(id)s AND token = %(token)s FOR SHARE
), up AS (
    UPDATE sessions SET last_seq = last_seq + %(n)s, updated_at = {NOW},
        active_agent = coalesce(%(agent)s, active_agent), context = {context},
        context_seq = CASE WHEN %(ctx)s::text IS NULL THEN context_seq ELSE last_seq + %(n)s END
    WHERE id = %(id)s AND (%(expected)s::bigint IS NULL OR last_seq = %(expected)s)
        AND EXISTS (SELECT 1 FROM lease)
    RETURNING last_seq
), ins AS (
    INSERT INTO messages (session_id, seq, agent, kind, body, created_at, write_id)
    SELECT %(id)s, up.last_seq - %(n)s + r.ord, r.agent, r.kind, r.body, {NOW}, %(wid)s
    FROM up, unnest(%(agents)b::text[], %(kinds)b::text[], %(bodies)b::text[])
        WITH ORDINALITY AS r(agent, kind, body, ord)
)
SELECT last_seq FROM up"""


FAST_APPEND = _fast_append("coalesce(%(ctx)s, context)")
FAST_APPEND_DELTA = _fast_append(DELTA)


def fast_append_params(write: EncodedAppend, write_id: str, token: str) -> dict[str, Any]:
    rows = write.rows
    return {
        "id": write.session_id,
        "token": token,
        "n": len(rows),
        "agent": write.active_agent,
        "ctx": write.context_json,
        "expected": write.expected_seq,
        "wid": write_id,
        "agents": [r[0] for r in rows],
        "kinds": [r[1] for r in rows],
        "bodies": [r[2] for r in rows],
    }


FAST_OPEN = f"""
WITH me AS (
    INSERT INTO holders (token, pid, host, expires_at)
    VALUES (%(token)s, %(pid)s, %(host)s, now() + make_interval(secs => %(secs)s))
    ON CONFLICT (token) DO UPDATE SET expires_at = excluded.expires_at
    RETURNING 1
), lease AS (
    INSERT INTO leases (session_id, token) SELECT %(id)s, %(token)s FROM me
    ON CONFLICT (session_id) DO NOTHING
    RETURNING 1
), made AS (
    INSERT INTO sessions (id, active_agent, team, created_at, updated_at)
    SELECT %(id)s, %(agent)s, %(team)s, {NOW}, {NOW} FROM lease
    ON CONFLICT (id) DO UPDATE SET status = 'open'
    RETURNING xmax = 0, {STATE_COLUMNS}
)
SELECT * FROM made"""
"""Opening a session nobody holds as one statement: this store's holder renewed, the lease taken, the
session created (or reopened) and read back; the first column says whether it was created. No row when
someone (this store included) holds the lease already: then only the renewal was written, and the store's
step by step claim decides (a live holder is refused, a lapsed one replaced)."""


FAST_END = f"""
WITH gone AS (
    DELETE FROM leases WHERE session_id = %(id)s AND token = %(token)s
        AND EXISTS (SELECT 1 FROM sessions WHERE id = %(id)s)
    RETURNING 1
)
UPDATE sessions SET status = 'ended', updated_at = {NOW}
WHERE id = %(id)s AND EXISTS (SELECT 1 FROM gone)
RETURNING 1"""
"""The end of a session as one statement: the lease is ours, so it is let go of and the session is marked
ended; no row when the session or the lease is not (then nothing was written, and the store's step by step
end says why)."""


def get_session(conn: Conn, retry: bool, session_id: str) -> SessionState:
    cursor = conn.execute(f"SELECT {STATE_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
    row = cursor.fetchone()
    if row is None:
        raise UnknownSessionError(
            f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
        )
    return state_from_row(row)


def entries(conn: Conn, retry: bool, session_id: str, after: int) -> list[StoredEntry]:
    cursor = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM messages WHERE session_id = %s AND seq > %s ORDER BY seq",
        (session_id, after),
    )
    rows = cursor.fetchall()
    if not rows:
        get_session(conn, retry, session_id)  # an unknown session is an error, not an empty list
    return [entry_from_row(session_id, row) for row in rows]


def list_sessions(conn: Conn, retry: bool) -> list[SessionInfo]:
    cursor = conn.execute(
        "SELECT id, active_agent, status, last_seq, team, created_at, updated_at FROM sessions "
        "ORDER BY updated_at DESC, id"
    )
    return [SessionInfo(*row) for row in cursor.fetchall()]


def secret(conn: Conn, retry: bool, name: str, candidate: bytes, read_only: bool) -> bytes:
    """The secret ``name``: ``candidate`` if nobody made it before (atomic across processes)."""
    if not read_only:
        conn.execute(
            "INSERT INTO secrets (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (name, candidate),
        )
    cursor = conn.execute("SELECT value FROM secrets WHERE name = %s", (name,))
    row = cursor.fetchone()
    if row is None:
        raise StoreError(f"the store holds no secret {name!r} yet, and a read-only store cannot make one")
    return bytes(row[0])


def wait_for_operator(conn: Conn, retry: bool, session_id: str, prompt: str) -> OperatorWait:
    cursor = conn.execute(
        f"INSERT INTO operator_waits (session_id, prompt, since) VALUES (%s, %s, {NOW}) "
        f"ON CONFLICT (session_id) DO UPDATE SET prompt = excluded.prompt RETURNING {_WAIT_COLUMNS}",
        (session_id, prompt),
    )
    row = cursor.fetchone()
    assert row is not None  # RETURNING gives the row inserted or updated
    return OperatorWait(*row)


def take_for_operator(conn: Conn, retry: bool, session_id: str, operator: str) -> bool:
    cursor = conn.execute(
        "UPDATE operator_waits SET taken_by = %s "
        "WHERE session_id = %s AND (taken_by IS NULL OR taken_by = %s)",
        (operator, session_id, operator),
    )
    return cursor.rowcount == 1


def release_operator(conn: Conn, retry: bool, session_id: str, operator: str | None) -> None:
    conn.execute(*release_statement("%s", session_id, operator))


def operator_waits(conn: Conn, retry: bool) -> list[OperatorWait]:
    cursor = conn.execute(f"SELECT {_WAIT_COLUMNS} FROM operator_waits ORDER BY since, session_id")
    return [OperatorWait(*row) for row in cursor.fetchall()]
