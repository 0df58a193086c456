"""Durable sessions: the ``SessionStore`` interface and its default, SQLite.

A store keeps, per session, an append-only transcript (every message with its sequence number, agent,
kind and time) and the session's state: the active agent and the context the next message is sent with.
The ``UserAgent`` writes to it before it shows anything to the person, so what the person saw is stored.

Every SQLite call runs on one dedicated thread per store, in submission order, so a write never blocks
the event loop and reads see every earlier write. The file is in WAL mode; each append is one
transaction, so a process killed at any moment leaves the last committed turn intact.

Example::

    store = SQLiteSessionStore("sessions.sqlite3")     # or ":memory:" in tests
    state, created = await store.open_session("s1", agent="TriageAgent")
    await store.append("s1", [entry_for_message(UserMessage(content="hi", source="User"))])
    await store.close()
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, UserMessage
from pydantic import TypeAdapter

from .errors import StoreError, UnknownSessionError
from .messages import HandoffEvent

T = TypeVar("T")

EntryKind = Literal["user", "reply", "tool_calls", "tool_results", "handoff", "system", "notice"]
SessionStatus = Literal["open", "ended"]

_MESSAGES: TypeAdapter[list[LLMMessage]] = TypeAdapter(list[LLMMessage])
_MESSAGE: TypeAdapter[LLMMessage] = TypeAdapter(LLMMessage)

MEMORY = ":memory:"


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/handoffs-runtime/sessions.sqlite3`` (``~/.local/share`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "handoffs-runtime" / "sessions.sqlite3"


# --- values --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewEntry:
    """One transcript entry to append; the store gives it its sequence number and time."""

    agent: str
    kind: EntryKind
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored transcript entry."""

    session_id: str
    seq: int
    agent: str
    kind: EntryKind
    body: dict[str, Any]
    created_at: float

    def message(self) -> LLMMessage | None:
        """The conversation message this entry holds, or ``None`` for handoff events and notices."""
        if self.kind in ("handoff", "notice"):
            return None
        return _MESSAGE.validate_python(self.body)

    def event(self) -> HandoffEvent | None:
        return HandoffEvent.model_validate(self.body) if self.kind == "handoff" else None

    @property
    def text(self) -> str:
        """The entry's words, when it has any (the person's message, a reply, a notice)."""
        content = self.body.get("content", self.body.get("text", ""))
        return content if isinstance(content, str) else ""


@dataclass(frozen=True, slots=True)
class SessionState:
    """Where a session stands: who answers next and with what context.

    ``context_seq`` is the last transcript entry that ``context`` accounts for; entries after it (the
    person's message of a turn in flight, handoff events) are not in the context yet.
    """

    session_id: str
    active_agent: str
    context: list[LLMMessage]
    context_seq: int
    last_seq: int
    status: SessionStatus
    team: str
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A line of ``handoffs sessions list``."""

    session_id: str
    active_agent: str
    status: SessionStatus
    messages: int
    team: str
    created_at: float
    updated_at: float


def entry_for_message(message: LLMMessage, *, agent: str | None = None) -> NewEntry:
    """The transcript entry for a conversation message; ``agent`` defaults to the message's source."""
    if isinstance(message, UserMessage):
        kind: EntryKind = "user"
    elif isinstance(message, AssistantMessage):
        kind = "reply" if isinstance(message.content, str) else "tool_calls"
    elif isinstance(message, FunctionExecutionResultMessage):
        kind = "tool_results"
    else:
        kind = "system"
    who = agent or getattr(message, "source", None) or kind
    return NewEntry(agent=who, kind=kind, body=_MESSAGE.dump_python(message, mode="json"))


def entry_for_event(event: HandoffEvent) -> NewEntry:
    return NewEntry(agent=event.source, kind="handoff", body=event.model_dump(mode="json"))


def notice_entry(text: str, *, agent: str = "runtime") -> NewEntry:
    return NewEntry(agent=agent, kind="notice", body={"text": text})


# --- the interface -------------------------------------------------------------------------------------


@runtime_checkable
class SessionStore(Protocol):
    """What the runtime needs from a session store. Every method may raise :class:`StoreError`."""

    async def open_session(self, session_id: str, *, agent: str, team: str = "") -> tuple[SessionState, bool]:
        """The session's state, created with ``agent`` active when new (then the flag is ``True``).

        An ended session is opened again.
        """
        ...

    async def get_session(self, session_id: str) -> SessionState:
        """The session's state; :class:`UnknownSessionError` when there is none."""
        ...

    async def append(
        self,
        session_id: str,
        entries: Sequence[NewEntry],
        *,
        active_agent: str | None = None,
        context: Sequence[LLMMessage] | None = None,
    ) -> int:
        """Append ``entries`` and, if given, the new active agent and context, in one transaction.

        Returns the last sequence number. A given ``context`` accounts for everything appended so far.
        """
        ...

    async def end_session(self, session_id: str) -> None: ...

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        """The transcript after sequence number ``after``, in order."""
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        ...

    async def delete_session(self, session_id: str) -> None: ...

    async def close(self) -> None: ...


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

MIGRATIONS: tuple[str, ...] = (_V1, _V2)
"""``MIGRATIONS[n]`` takes a store from schema ``n`` to ``n + 1``; never edit one, append a new one."""

SCHEMA_VERSION = len(MIGRATIONS)


def _migrate(conn: sqlite3.Connection, where: str) -> None:
    """Bring a store to :data:`SCHEMA_VERSION` in the open transaction; refuse a newer or foreign file."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables and "schema_version" not in tables:
        raise StoreError(
            f"{where} is an SQLite file but not a session store (it has tables {sorted(tables)}); "
            "choose another --store path"
        )
    version = 0
    if tables:
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} was written by a newer handoffs-runtime (schema {version}; this version reads up to "
            f"{SCHEMA_VERSION}); upgrade handoffs-runtime, or choose another --store path. "
            "The file was left as is."
        )
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step].split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("UPDATE schema_version SET version = ?", (step + 1,))


# --- SQLite --------------------------------------------------------------------------------------------


@dataclass
class _Shared:
    """The connection, owned by the store's one thread."""

    conn: sqlite3.Connection | None = None
    where: str = ""
    closed: bool = field(default=False)


class SQLiteSessionStore:
    """The default :class:`SessionStore`: one SQLite file (or ``":memory:"``), WAL, one writer thread.

    The file is checked when the store is created (so a corrupt, locked, foreign or newer-schema file
    fails before a chat starts, untouched); create it with ``await asyncio.to_thread(SQLiteSessionStore,
    path)`` inside a running loop. ``timeout`` is how long to wait for another process's lock.
    ``synchronous="FULL"`` syncs every commit to disk, so a stored turn also survives a power cut.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = MEMORY,
        *,
        timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "FULL",
    ) -> None:
        self.path = str(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="handoffs-store")
        self._shared = _Shared(where=f"session store {self.path}")
        try:
            self._executor.submit(self._connect, timeout, synchronous).result()
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
        try:
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {where}: {exc}") from exc
        try:
            conn.execute("BEGIN IMMEDIATE")
            _migrate(conn, where)
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise _store_error(where, exc) from exc
            raise
        self._shared.conn = conn

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
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _store_error(self._shared.where, exc) from exc
            raise

    # --- the interface ---------------------------------------------------------------------------------

    async def open_session(self, session_id: str, *, agent: str, team: str = "") -> tuple[SessionState, bool]:
        return await self._run(_open_session, session_id, agent, team)

    async def get_session(self, session_id: str) -> SessionState:
        return await self._run(_get_session, session_id)

    async def append(
        self,
        session_id: str,
        entries: Sequence[NewEntry],
        *,
        active_agent: str | None = None,
        context: Sequence[LLMMessage] | None = None,
    ) -> int:
        context_json = _MESSAGES.dump_json(list(context)).decode() if context is not None else None
        rows = [(e.agent, e.kind, json.dumps(e.body, ensure_ascii=False)) for e in entries]
        return await self._run(_append, session_id, rows, active_agent, context_json)

    async def end_session(self, session_id: str) -> None:
        await self._run(_set_status, session_id, "ended")

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        return await self._run(_entries, session_id, after)

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._run(_list_sessions)

    async def delete_session(self, session_id: str) -> None:
        await self._run(_delete_session, session_id)

    async def close(self) -> None:
        if self._shared.closed:
            return
        self._shared.closed = True
        await asyncio.wrap_future(self._executor.submit(self._close_connection))
        self._executor.shutdown(wait=True)

    def close_now(self) -> None:
        """Close from code without an event loop (the command line)."""
        if not self._shared.closed:
            self._shared.closed = True
            self._executor.submit(self._close_connection).result()
            self._executor.shutdown(wait=True)

    def _close_connection(self) -> None:
        if self._shared.conn is not None:
            self._shared.conn.close()
            self._shared.conn = None


def _store_error(where: str, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreError(
            f"{where} is locked by another process; wait for it to finish, or choose another --store path"
        )
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
        return StoreError(
            f"{where} is not a readable session store ({text}); move the file away or choose another "
            "--store path. It was left as is."
        )
    return StoreError(f"{where}: {text}")


# --- the SQL, run on the store's thread ----------------------------------------------------------------

_STATE_COLUMNS = "id, active_agent, context, context_seq, last_seq, status, team, created_at, updated_at"


def _state(row: tuple[Any, ...]) -> SessionState:
    return SessionState(
        session_id=row[0],
        active_agent=row[1],
        context=_MESSAGES.validate_json(row[2]),
        context_seq=row[3],
        last_seq=row[4],
        status=row[5],
        team=row[6],
        created_at=row[7],
        updated_at=row[8],
    )


def _get_session(conn: sqlite3.Connection, session_id: str) -> SessionState:
    row = conn.execute(f"SELECT {_STATE_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise UnknownSessionError(
            f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
        )
    return _state(row)


def _open_session(
    conn: sqlite3.Connection, session_id: str, agent: str, team: str
) -> tuple[SessionState, bool]:
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    cursor = conn.execute(
        "INSERT INTO sessions (id, active_agent, team, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING",
        (session_id, agent, team, now, now),
    )
    created = cursor.rowcount == 1
    if not created:
        conn.execute("UPDATE sessions SET status = 'open' WHERE id = ?", (session_id,))
    conn.execute("COMMIT")
    return _get_session(conn, session_id), created


def _append(
    conn: sqlite3.Connection,
    session_id: str,
    rows: list[tuple[str, str, str]],
    active_agent: str | None,
    context_json: str | None,
) -> int:
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    found = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if found is None:
        conn.execute("ROLLBACK")
        raise UnknownSessionError(f"no session {session_id!r} in the store; open it before appending")
    last = int(found[0])
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


def _set_status(conn: sqlite3.Connection, session_id: str, status: SessionStatus) -> None:
    cursor = conn.execute(
        "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?", (status, time.time(), session_id)
    )
    if cursor.rowcount == 0:
        raise UnknownSessionError(f"no session {session_id!r} in the store")


def _entries(conn: sqlite3.Connection, session_id: str, after: int) -> list[StoredEntry]:
    _get_session(conn, session_id)
    rows = conn.execute(
        "SELECT seq, agent, kind, body, created_at FROM messages "
        "WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, after),
    ).fetchall()
    return [
        StoredEntry(session_id, seq, agent, kind, json.loads(body), at) for seq, agent, kind, body, at in rows
    ]


def _list_sessions(conn: sqlite3.Connection) -> list[SessionInfo]:
    rows = conn.execute(
        "SELECT id, active_agent, status, last_seq, team, created_at, updated_at FROM sessions "
        "ORDER BY updated_at DESC, id"
    ).fetchall()
    return [SessionInfo(*row) for row in rows]


def _delete_session(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    cursor = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    if cursor.rowcount == 0:
        conn.execute("ROLLBACK")
        raise UnknownSessionError(
            f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
        )
    conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    conn.execute("COMMIT")
