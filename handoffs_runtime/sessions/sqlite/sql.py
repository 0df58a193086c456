"""The SQL of the SQLite store, run on its thread: sessions, entries, appends with compare-and-set.

Each function takes the store's connection; those that write run one ``BEGIN IMMEDIATE`` transaction
and check the session's lease inside it, so a process that lost its claim writes nothing. Secrets and
operator state belong to no one session's writer, so they need no lease.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from typing import Any, NoReturn

from handoffs_runtime.errors import SessionBusyError, StoreError, UnknownSessionError
from handoffs_runtime.sessions.desk import OperatorWait, release_statement
from handoffs_runtime.sessions.leases import Holder
from handoffs_runtime.sessions.rows import STATE_COLUMNS as _STATE_COLUMNS
from handoffs_runtime.sessions.rows import entry_from_row as _entry
from handoffs_runtime.sessions.rows import state_from_row as _state
from handoffs_runtime.sessions.sql_store import EncodedAppend, context_after
from handoffs_runtime.sessions.sqlite import effects, leases
from handoffs_runtime.sessions.store import SessionInfo, SessionState, StoredEntry


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionState:
    row = conn.execute(f"SELECT {_STATE_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise UnknownSessionError(
            f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
        )
    return _state(row)


def open_state(conn: sqlite3.Connection, session_id: str, agent: str, team: str) -> tuple[SessionState, bool]:
    """In the open transaction: create the session with ``agent`` active, or reopen it; its state, and
    whether it was created (a new one's state is known without reading it back)."""
    now = time.time()
    cursor = conn.execute(
        "INSERT INTO sessions (id, active_agent, team, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING",
        (session_id, agent, team, now, now),
    )
    if cursor.rowcount == 1:
        return SessionState(session_id, agent, [], 0, 0, "open", team, now, now), True
    rows = conn.execute(
        f"UPDATE sessions SET status = 'open' WHERE id = ? RETURNING {_STATE_COLUMNS}", (session_id,)
    ).fetchall()
    return _state(rows[0]), False


_DELTA = context_after("?")

_INSERT = "INSERT INTO messages (session_id, seq, agent, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?)"


@functools.cache
def _update(agent: bool, context: bool, delta: bool, returning: bool) -> str:
    """The append's one statement on the session row, for what it changes (made once per shape).
    Without ``returning``, the compare-and-set value is given, so the new last is known without it
    (SQLite's ``RETURNING`` costs a temporary table)."""
    sets = ", active_agent = ?" if agent else ""
    if context:
        sets += f", context = {_DELTA if delta else '?'}, context_seq = last_seq + ?"
    return (
        f"UPDATE sessions SET last_seq = last_seq + ?, updated_at = ?{sets} "
        "WHERE id = ? AND (? IS NULL OR last_seq = ?) "
        "AND EXISTS (SELECT 1 FROM leases WHERE session_id = ? AND token = ?)"
        + (" RETURNING last_seq" if returning else "")
    )


def append_entries(conn: sqlite3.Connection, append: EncodedAppend, holder: Holder, *, opened: bool) -> int:
    """One append in a transaction the caller opened (a batch of them: see ``sqlite.batch``): the session
    row gains the entries' count only if the lease is ours and the compare-and-set holds (one statement, a
    second when the last this store knew is stale);
    if it did not, :func:`_refused` says why."""
    now = time.time()
    session_id, rows = append.session_id, append.rows
    count = len(rows)
    values: list[Any] = [count, now]
    agent, context, delta = append.active_agent, append.context_json, append.context_delta
    if agent is not None:
        values.append(agent)
    if context is not None:
        values += [context, context, context, count] if delta else [context, count]
    expected = append.expected_seq
    shape = (agent is not None, context is not None, delta)
    guess = expected if expected is not None else append.last_known
    last = -1
    if guess is not None:  # the last as this store knows it: no need to have it returned
        cursor = conn.execute(
            _update(*shape, False), (*values, session_id, guess, guess, session_id, holder.token)
        )
        if cursor.rowcount == 1:
            last = guess + count
        elif expected is not None:
            _refused(conn, append, holder, opened=opened)
    if last < 0:  # not known, or someone this store did not see appended meanwhile
        found = conn.execute(
            _update(*shape, True), (*values, session_id, None, None, session_id, holder.token)
        ).fetchall()
        if not found:
            _refused(conn, append, holder, opened=opened)
        last = int(found[0][0])
    first = last - count
    if count == 1:  # the usual append: one statement, without executemany's iteration
        conn.execute(_INSERT, (session_id, last, *rows[0], now))
    elif rows:
        conn.executemany(_INSERT, [(session_id, first + i, *row, now) for i, row in enumerate(rows, start=1)])
    return last


def _refused(conn: sqlite3.Connection, append: EncodedAppend, holder: Holder, *, opened: bool) -> NoReturn:
    """Why an append wrote nothing: no such session, a lease that is not ours, or a failed compare-and-set."""
    session_id = append.session_id
    found = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if found is None:
        raise UnknownSessionError(f"no session {session_id!r} in the store; open it before appending")
    leases.check(conn, session_id, holder, opened=opened)
    append.check_expected(int(found[0]))
    raise StoreError(f"session {session_id!r}: the append was refused for no reason the store can name")


def end_session(conn: sqlite3.Connection, session_id: str, holder: Holder, opened: bool) -> None:
    """Let go of the session's lease, if it is ours, and mark it ended; else say why not (nothing is
    written then)."""
    conn.execute("BEGIN IMMEDIATE")
    ours = conn.execute("DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, holder.token))
    cursor = conn.execute(
        "UPDATE sessions SET status = 'ended', updated_at = ? WHERE id = ?", (time.time(), session_id)
    )
    if cursor.rowcount == 0:
        raise UnknownSessionError(f"no session {session_id!r} in the store")
    if ours.rowcount == 0:
        leases.check(conn, session_id, holder, opened=opened)  # raises: the lease is not ours
    conn.execute("COMMIT")


def read_entries(conn: sqlite3.Connection, session_id: str, after: int) -> list[StoredEntry]:
    get_session(conn, session_id)
    rows = conn.execute(
        "SELECT seq, agent, kind, body, created_at FROM messages "
        "WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, after),
    ).fetchall()
    return [_entry(session_id, row) for row in rows]


def list_sessions(conn: sqlite3.Connection) -> list[SessionInfo]:
    rows = conn.execute(
        "SELECT id, active_agent, status, last_seq, team, created_at, updated_at FROM sessions "
        "ORDER BY updated_at DESC, id"
    ).fetchall()
    return [SessionInfo(*row) for row in rows]


def delete_session(conn: sqlite3.Connection, session_id: str, holder: Holder) -> None:
    """Delete a session nobody else is using (a crashed holder does not count)."""
    conn.execute("BEGIN IMMEDIATE")
    other = leases.live_holder(conn, session_id, holder)
    if other is not None:
        raise SessionBusyError(
            f"session {session_id!r} is open in another process ({other}); end the chat there first"
        )
    cursor = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    if cursor.rowcount == 0:
        raise UnknownSessionError(
            f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
        )
    conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    effects.forget(conn, session_id)
    leases.forget(conn, session_id)
    conn.execute("COMMIT")


def secret(conn: sqlite3.Connection, name: str, candidate: bytes, read_only: bool) -> bytes:
    """The secret ``name``: ``candidate`` if nobody made it before (atomic across processes)."""
    if not read_only:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", (name, candidate)
        )
        conn.execute("COMMIT")
    row = conn.execute("SELECT value FROM secrets WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise StoreError(f"the store holds no secret {name!r} yet, and a read-only store cannot make one")
    return bytes(row[0])


_WAIT_COLUMNS = "session_id, prompt, since, taken_by"


def wait_for_operator(conn: sqlite3.Connection, session_id: str, prompt: str) -> OperatorWait:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO operator_waits (session_id, prompt, since) VALUES (?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET prompt = excluded.prompt",
        (session_id, prompt, time.time()),
    )
    row = conn.execute(f"SELECT {_WAIT_COLUMNS} FROM operator_waits WHERE session_id = ?", (session_id,))
    wait = OperatorWait(*row.fetchone())
    conn.execute("COMMIT")
    return wait


def take_for_operator(conn: sqlite3.Connection, session_id: str, operator: str) -> bool:
    cursor = conn.execute(
        "UPDATE operator_waits SET taken_by = ? WHERE session_id = ? AND (taken_by IS NULL OR taken_by = ?)",
        (operator, session_id, operator),
    )
    return cursor.rowcount == 1


def release_operator(conn: sqlite3.Connection, session_id: str, operator: str | None) -> None:
    conn.execute(*release_statement("?", session_id, operator))


def operator_waits(conn: sqlite3.Connection) -> list[OperatorWait]:
    rows = conn.execute(f"SELECT {_WAIT_COLUMNS} FROM operator_waits ORDER BY since, session_id")
    return [OperatorWait(*row) for row in rows.fetchall()]
