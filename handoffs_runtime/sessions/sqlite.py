"""The default session store: one SQLite file (WAL, leases, compare-and-set appends)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from autogen_core.models import LLMMessage

from handoffs_runtime.errors import SessionBusyError, StoreConflictError, StoreError, UnknownSessionError
from handoffs_runtime.sessions import leases
from handoffs_runtime.sessions.leases import LEASE_SECONDS, Holder
from handoffs_runtime.sessions.rows import STATE_COLUMNS as _STATE_COLUMNS
from handoffs_runtime.sessions.rows import entry_from_row as _entry
from handoffs_runtime.sessions.rows import state_from_row as _state
from handoffs_runtime.sessions.store import (
    _MESSAGES,
    MEMORY,
    NewEntry,
    SessionInfo,
    SessionState,
    StoredEntry,
)

T = TypeVar("T")
_log = logging.getLogger(__name__)

# --- schema --------------------------------------------------------------------------------------------

_V1 = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    active_agent TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '[]',
    context_seq INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'open',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
INSERT INTO schema_version (version) VALUES (0);
"""

_V2 = """
ALTER TABLE sessions ADD COLUMN team TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_by_update ON sessions (updated_at);
"""

_V3 = leases.SCHEMA

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)
"""``MIGRATIONS[n]`` takes a store from schema ``n`` to ``n + 1``; never edit one, append a new one."""

SCHEMA_VERSION = len(MIGRATIONS)

_READABLE_FROM = 2
"""The oldest schema that the reading SQL understands as it is (a read-only store cannot be migrated)."""


def _schema_version(conn: sqlite3.Connection, where: str) -> int:
    """The file's schema version (0 for an empty file); refuse a foreign, damaged or newer file."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return 0
    if "schema_version" not in tables:
        raise StoreError(
            f"{where} is an SQLite file but not a session store (it has tables {sorted(tables)}); "
            "choose another --store path"
        )
    rows = conn.execute("SELECT version FROM schema_version").fetchall()
    if len(rows) != 1 or type(rows[0][0]) is not int:
        found = "no row" if not rows else ", ".join(repr(r[0]) for r in rows[:3])
        raise StoreError(
            f"{where} is damaged: its schema version should be one whole number, but it holds {found}; "
            "move the file away or choose another --store path. It was left as is."
        )
    version: int = rows[0][0]
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} was written by a newer handoffs-runtime (schema {version}; this version reads up to "
            f"{SCHEMA_VERSION}); upgrade handoffs-runtime, or choose another --store path. "
            "The file was left as is."
        )
    return version


def _migrate(conn: sqlite3.Connection, where: str) -> None:
    """Bring a store to :data:`SCHEMA_VERSION` in the open transaction; refuse a newer or foreign file."""
    version = _schema_version(conn, where)
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step].split(";"):
            if statement.strip():
                conn.execute(statement)
    # Also a write probe: a read-only, full or otherwise unwritable store fails here, before a chat starts.
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


# --- SQLite --------------------------------------------------------------------------------------------


@dataclass
class _Shared:
    """The connection, owned by the store's one thread."""

    conn: sqlite3.Connection | None = None
    where: str = ""
    closed: bool = field(default=False)
    holding: bool = field(default=False)
    """Whether this store ever claimed a lease (so closing has leases to let go of)."""


class SQLiteSessionStore:
    """The default :class:`SessionStore`: one SQLite file (or ``":memory:"``), WAL, one writer thread.

    The file is checked when the store is created (so a corrupt, locked, read-only, foreign or
    newer-schema file fails before a chat starts, untouched); create it with ``await
    asyncio.to_thread(SQLiteSessionStore, path)`` inside a running loop. ``timeout`` is how long to wait
    for another process's lock. ``synchronous="FULL"`` syncs every commit to disk, so a stored turn also
    survives a power cut. ``read_only=True`` only reads (see the module docstring). ``lease_seconds`` is
    how long this store's claim on a session lasts without renewal; it renews every third of that.

    ``failure`` is the first error this store raised on a read or write (not counting unknown sessions),
    so a caller whose session stopped on it can tell.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = MEMORY,
        *,
        timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "FULL",
        read_only: bool = False,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        if not (math.isfinite(lease_seconds) and lease_seconds > 0):
            raise ValueError(
                f"lease_seconds must be a positive, finite number of seconds, got {lease_seconds}"
            )
        self.path = str(path)
        self.read_only = read_only
        self.failure: StoreError | None = None
        self._holder = Holder.here()
        self._lease_seconds = lease_seconds
        self._heartbeat = leases.Heartbeat(self._renew_soon, lease_seconds / 3)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="handoffs-store")
        self._shared = _Shared(where=f"session store {self.path}")
        connect = self._connect_read_only if read_only and self.path != MEMORY else self._connect
        try:
            self._executor.submit(connect, timeout, synchronous).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({self.path!r})"

    # --- plumbing: every call runs on the store's thread ---------------------------------------------

    def _connect(self, timeout: float, synchronous: str) -> None:
        where = self._shared.where
        if self.path != MEMORY:
            target = Path(self.path)
            if target.is_dir():
                raise StoreError(f"{where} is a directory; give a file path to --store")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of {where}: {exc}") from exc
        conn = _sqlite_connect(self.path, where, timeout)
        try:
            conn.execute("BEGIN IMMEDIATE")
            _migrate(conn, where)
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException as exc:
            _close_failed(conn)
            if isinstance(exc, sqlite3.Error):
                raise _store_error(where, exc) from exc
            raise
        self._shared.conn = conn

    def _connect_read_only(self, timeout: float, synchronous: str) -> None:
        """``mode=ro`` where a reader may share the WAL index; else ``immutable=1``, which touches nothing.

        A WAL reader creates the index files (``-wal``, ``-shm``) when they are missing and leaves them,
        with the database file's permissions: made beside a file we may not write, they could keep its
        owner from writing it later. So a reader only joins an index that exists, or one it could have
        made as a writer; and when the folder refuses the files, it reads the file as immutable.
        """
        where = self._shared.where
        if Path(self.path).is_dir():
            raise StoreError(f"{where} is a directory; give a file path to --store")
        if not Path(self.path).is_file():
            raise StoreError(f"there is no session store at {self.path}; check --store")
        uri = Path(self.path).resolve().as_uri()
        shared = Path(f"{self.path}-shm").exists() or os.access(self.path, os.W_OK)
        for query in ("mode=ro", "mode=ro&immutable=1")[0 if shared else 1 :]:
            conn = _sqlite_connect(f"{uri}?{query}", where, timeout, uri=True)
            try:
                version = _schema_version(conn, where)
            except sqlite3.Error as exc:
                _close_failed(conn)
                if "immutable" not in query and _code(exc).startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
                    continue
                raise _store_error(where, exc) from exc
            except BaseException:
                _close_failed(conn)
                raise
            if version == 0:
                _close_failed(conn)
                raise StoreError(f"{where} is empty: nothing has been stored there yet")
            if version < _READABLE_FROM:
                _close_failed(conn)
                raise StoreError(
                    f"{where} has an old schema ({version}) that must be upgraded before it can be read: "
                    "open it once with `handoffs chat --store PATH` where it is writable"
                )
            self._shared.conn = conn
            return

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._shared.closed:
            raise StoreError(f"{self._shared.where} is closed")
        return await asyncio.wrap_future(self._executor.submit(self._guarded, fn, *args))

    def _guarded(self, fn: Callable[..., T], *args: Any) -> T:
        conn = self._shared.conn
        if conn is None:
            raise StoreError(f"{self._shared.where} is closed")
        try:
            return fn(conn, *args)
        except BaseException as exc:
            _roll_back(conn)
            error = _store_error(self._shared.where, exc) if isinstance(exc, sqlite3.Error) else exc
            expected = UnknownSessionError | StoreConflictError  # answers, not failures of the store
            if isinstance(error, StoreError) and not isinstance(error, expected):
                self.failure = self.failure or error
            if error is exc:
                raise
            raise error from exc

    def _renew_soon(self) -> None:
        """The heartbeat's beat: queue a renewal on the store's thread, without waiting for it."""
        self._executor.submit(self._renew)

    def _renew(self) -> None:
        conn = self._shared.conn
        if conn is None:
            return
        try:
            leases.renew(conn, self._holder, self._lease_seconds)
        except sqlite3.Error as exc:  # the next beat tries again; a write meanwhile reports the cause
            _log.warning("could not renew the session leases of %s: %s", self._shared.where, exc)

    # --- the interface ---------------------------------------------------------------------------------

    async def claim(self, session_id: str, *, take_over: bool = False) -> Holder | None:
        return await self._run(self._claim, session_id, take_over)

    def _claim(self, conn: sqlite3.Connection, session_id: str, take_over: bool) -> Holder | None:
        conn.execute("BEGIN IMMEDIATE")
        taken = leases.claim(conn, session_id, self._holder, take_over=take_over, seconds=self._lease_seconds)
        conn.execute("COMMIT")
        self._holding()
        return taken

    async def open_session(self, session_id: str, *, agent: str, team: str = "") -> tuple[SessionState, bool]:
        return await self._run(self._open_session, session_id, agent, team)

    def _open_session(
        self, conn: sqlite3.Connection, session_id: str, agent: str, team: str
    ) -> tuple[SessionState, bool]:
        conn.execute("BEGIN IMMEDIATE")
        leases.claim(conn, session_id, self._holder, take_over=False, seconds=self._lease_seconds)
        created = _create_or_reopen(conn, session_id, agent, team)
        conn.execute("COMMIT")
        self._holding()
        return _get_session(conn, session_id), created

    def _holding(self) -> None:
        """This store holds a lease now: renew it from here on, and let go of it when closing."""
        self._shared.holding = True
        self._heartbeat.start()

    async def get_session(self, session_id: str) -> SessionState:
        return await self._run(_get_session, session_id)

    async def append(
        self,
        session_id: str,
        entries: Sequence[NewEntry],
        *,
        active_agent: str | None = None,
        context: Sequence[LLMMessage] | None = None,
        expected_seq: int | None = None,
    ) -> int:
        context_json = _MESSAGES.dump_json(list(context)).decode() if context is not None else None
        rows = [(e.agent, e.kind, json.dumps(e.body, ensure_ascii=False)) for e in entries]
        return await self._run(
            _append, session_id, rows, active_agent, context_json, expected_seq, self._holder
        )

    async def end_session(self, session_id: str) -> None:
        await self._run(_end_session, session_id, self._holder)

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        return await self._run(_entries, session_id, after)

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._run(_list_sessions)

    async def delete_session(self, session_id: str) -> None:
        await self._run(_delete_session, session_id, self._holder)

    async def close(self) -> None:
        if self._shared.closed:
            return
        self._shared.closed = True
        self._heartbeat.stop()  # quick: the heartbeat never waits for the store's thread
        await asyncio.wrap_future(self._executor.submit(self._close_connection))
        self._executor.shutdown(wait=True)

    def close_now(self) -> None:
        """Close from code without an event loop (the command line)."""
        if not self._shared.closed:
            self._shared.closed = True
            self._heartbeat.stop()
            self._executor.submit(self._close_connection).result()
            self._executor.shutdown(wait=True)

    def _close_connection(self) -> None:
        """Let go of this store's leases (so the next process need not wait), then close."""
        conn = self._shared.conn
        if conn is None:
            return
        self._shared.conn = None
        if self._shared.holding:
            try:
                leases.release_all(conn, self._holder)
            except sqlite3.Error as exc:  # they expire by themselves
                _log.warning("could not release the session leases of %s: %s", self._shared.where, exc)
        conn.close()


def _sqlite_connect(target: str, where: str, timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    try:
        return sqlite3.connect(
            target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
        )
    except sqlite3.Error as exc:
        raise _store_error(where, exc) from exc


def _roll_back(conn: sqlite3.Connection) -> None:
    """End a failed transaction; if even that fails, the error that led here is the one to report."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def _close_failed(conn: sqlite3.Connection) -> None:
    """Close a connection that failed while being set up, whatever state it is in."""
    _roll_back(conn)
    conn.close()


def _code(exc: sqlite3.Error) -> str:
    """SQLite's name for the error, such as ``SQLITE_READONLY_DIRECTORY`` (empty when unknown)."""
    return str(getattr(exc, "sqlite_errorname", "") or "")


def _store_error(where: str, exc: sqlite3.Error) -> StoreError:
    """One line that says what is wrong with the store and what to do, for any SQLite error."""
    text = str(exc)
    code = _code(exc)
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return StoreError(
            f"{where} is locked by another process; wait for it to finish, or choose another --store path"
        )
    damaged = "not a database" in text or "malformed" in text
    if code.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or damaged:
        return StoreError(
            f"{where} is not a readable session store ({text}); move the file away or choose another "
            "--store path. It was left as is."
        )
    if code.startswith("SQLITE_READONLY"):
        return StoreError(
            f"{where} cannot be written ({text}): the file or its folder is read-only. "
            "`handoffs sessions list|show|export` can still read it; to chat, choose another --store path"
        )
    if code == "SQLITE_FULL":
        return StoreError(f"{where} cannot grow: the disk is full ({text}); what was stored before is kept")
    if code.startswith("SQLITE_IOERR"):
        return StoreError(
            f"{where}: input/output error ({code}: {text}); the disk may be full, failing or over a "
            "file-size limit. What was stored before is kept."
        )
    if code.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return StoreError(f"cannot open {where} ({text}); check that it and its folder can be read")
    return StoreError(f"{where}: {text}")


# --- the SQL, run on the store's thread ----------------------------------------------------------------


def _get_session(conn: sqlite3.Connection, session_id: str) -> SessionState:
    row = conn.execute(f"SELECT {_STATE_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise UnknownSessionError(
            f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
        )
    return _state(row)


def _create_or_reopen(conn: sqlite3.Connection, session_id: str, agent: str, team: str) -> bool:
    """In the open transaction: create the session with ``agent`` active, or reopen it; True if created."""
    now = time.time()
    cursor = conn.execute(
        "INSERT INTO sessions (id, active_agent, team, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING",
        (session_id, agent, team, now, now),
    )
    created = cursor.rowcount == 1
    if not created:
        conn.execute("UPDATE sessions SET status = 'open' WHERE id = ?", (session_id,))
    return created


def _append(
    conn: sqlite3.Connection,
    session_id: str,
    rows: list[tuple[str, str, str]],
    active_agent: str | None,
    context_json: str | None,
    expected_seq: int | None,
    holder: Holder,
) -> int:
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    found = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if found is None:
        raise UnknownSessionError(f"no session {session_id!r} in the store; open it before appending")
    leases.check(conn, session_id, holder)
    last = int(found[0])
    if expected_seq is not None and last != expected_seq:
        raise StoreConflictError(
            f"session {session_id!r} gained entries {expected_seq + 1}..{last} since it was read; "
            "nothing was written"
        )
    conn.executemany(
        "INSERT INTO messages (session_id, seq, agent, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (session_id, last + i, agent, kind, body, now)
            for i, (agent, kind, body) in enumerate(rows, start=1)
        ],
    )
    last += len(rows)
    sets = ["last_seq = ?", "updated_at = ?"]
    values: list[Any] = [last, now]
    if active_agent is not None:
        sets.append("active_agent = ?")
        values.append(active_agent)
    if context_json is not None:
        sets += ["context = ?", "context_seq = ?"]
        values += [context_json, last]
    conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*values, session_id))
    conn.execute("COMMIT")
    return last


def _end_session(conn: sqlite3.Connection, session_id: str, holder: Holder) -> None:
    conn.execute("BEGIN IMMEDIATE")
    cursor = conn.execute(
        "UPDATE sessions SET status = 'ended', updated_at = ? WHERE id = ?", (time.time(), session_id)
    )
    if cursor.rowcount == 0:
        raise UnknownSessionError(f"no session {session_id!r} in the store")
    leases.check(conn, session_id, holder)
    leases.release(conn, holder, session_id)
    conn.execute("COMMIT")


def _entries(conn: sqlite3.Connection, session_id: str, after: int) -> list[StoredEntry]:
    _get_session(conn, session_id)
    rows = conn.execute(
        "SELECT seq, agent, kind, body, created_at FROM messages "
        "WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, after),
    ).fetchall()
    return [_entry(session_id, row) for row in rows]


def _list_sessions(conn: sqlite3.Connection) -> list[SessionInfo]:
    rows = conn.execute(
        "SELECT id, active_agent, status, last_seq, team, created_at, updated_at FROM sessions "
        "ORDER BY updated_at DESC, id"
    ).fetchall()
    return [SessionInfo(*row) for row in rows]


def _delete_session(conn: sqlite3.Connection, session_id: str, holder: Holder) -> None:
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
    leases.forget(conn, session_id)
    conn.execute("COMMIT")
