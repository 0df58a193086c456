"""The default session store: one SQLite file (WAL, leases, compare-and-set appends)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from handoffs_runtime.errors import StoreConflictError, StoreError, UnknownSessionError
from handoffs_runtime.sessions.desk import OperatorWait
from handoffs_runtime.sessions.effects import Effect, EffectKey, EffectStatus
from handoffs_runtime.sessions.leases import LEASE_SECONDS, Heartbeat, Holder
from handoffs_runtime.sessions.sql_store import EncodedAppend, SQLStore
from handoffs_runtime.sessions.sqlite import effects, leases, sql
from handoffs_runtime.sessions.sqlite.batch import GroupCommit
from handoffs_runtime.sessions.sqlite.connection import (
    close_failed,
    connect,
    error_code,
    roll_back,
    store_error,
)
from handoffs_runtime.sessions.sqlite.schema import READABLE_FROM, migrate, schema_version
from handoffs_runtime.sessions.store import (
    MEMORY,
    SessionInfo,
    SessionState,
    StoredEntry,
)
from handoffs_runtime.sessions.thread import StoreThread

T = TypeVar("T")
_log = logging.getLogger(__name__)


@dataclass
class _Shared:
    """The connection, owned by the store's one thread."""

    conn: sqlite3.Connection | None = None
    where: str = ""
    closed: bool = field(default=False)
    holding: bool = field(default=False)
    """Whether this store ever claimed a lease (so closing has leases to let go of)."""


def _create_private(target: Path) -> None:
    """A new store file readable by its owner only: it holds conversations and the web key secret (its
    ``-wal`` and ``-shm`` files get the same mode). An existing file keeps the mode it has."""
    with contextlib.suppress(OSError):  # it exists; or the folder is read-only, which connecting reports
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


class SQLiteSessionStore(SQLStore):
    """The default :class:`SessionStore`: one SQLite file (or ``":memory:"``), WAL, one writer thread.

    The file is checked when the store is created (so a corrupt, locked, read-only, foreign or
    newer-schema file fails before a chat starts, untouched); create it with ``await
    asyncio.to_thread(SQLiteSessionStore, path)`` inside a running loop. ``timeout`` is how long to wait
    for another process's lock. ``synchronous="FULL"`` (the default) syncs every commit to disk before it
    is acknowledged, so a power cut loses nothing acknowledged; ``"NORMAL"`` syncs at checkpoints only,
    so a power cut (not a crash of the process, which loses nothing either way) may lose the last turns
    acknowledged since. Appends waiting for the store's thread are committed together (see
    :mod:`~handoffs_runtime.sessions.sqlite.batch`), one sync for all of them.
    ``read_only=True`` only reads (see ``_connect_read_only``). ``lease_seconds`` is
    how long this store's claim on a session lasts without renewal; it renews every third of that.
    ``failure`` is the first error it raised (see :class:`~handoffs_runtime.sessions.sql_store.SQLStore`).
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
        super().__init__(read_only=read_only, lease_seconds=lease_seconds)
        self.path = str(path)
        self._heartbeat = Heartbeat(self._renew_soon, lease_seconds / 3)
        self._thread = StoreThread("handoffs-store")
        self._shared = _Shared(where=f"session store {self.path}")
        self._renewed_at = -math.inf
        """When this store's thread last renewed its holder row (``time.monotonic()``)."""
        self._batch = GroupCommit(self._thread, self._append_rows, self._described)
        connect = self._connect_read_only if read_only and self.path != MEMORY else self._connect
        try:
            self._thread.wait(connect, timeout, synchronous)
        except BaseException:
            self._thread.stop()
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
            _create_private(target)
        conn = connect(self.path, where, timeout)
        try:
            conn.execute("BEGIN IMMEDIATE")
            migrate(conn, where)
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException as exc:
            close_failed(conn)
            if isinstance(exc, sqlite3.Error):
                raise store_error(where, exc) from exc
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
            conn = connect(f"{uri}?{query}", where, timeout, uri=True)
            try:
                version = schema_version(conn, where)
            except sqlite3.Error as exc:
                close_failed(conn)
                readonly = error_code(exc).startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))
                if "immutable" not in query and readonly:
                    continue
                raise store_error(where, exc) from exc
            except BaseException:
                close_failed(conn)
                raise
            if version == 0:
                close_failed(conn)
                raise StoreError(f"{where} is empty: nothing has been stored there yet")
            if version < READABLE_FROM:
                close_failed(conn)
                raise StoreError(
                    f"{where} has an old schema ({version}) that must be upgraded before it can be read: "
                    "open it once with `handoffs chat --store PATH` where it is writable"
                )
            self._shared.conn = conn
            return

    def _run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(conn, *args)`` on the store's thread: the future of its outcome (not a coroutine, whose
        frame every call would pass through twice)."""
        if self._shared.closed:
            raise StoreError(f"{self._shared.where} is closed")
        return self._thread.call(self._guarded, fn, *args)

    def _guarded(self, fn: Callable[..., T], *args: Any) -> T:
        conn = self._shared.conn or self._conn()  # the call only to say the store is closed
        try:
            return fn(conn, *args)
        except BaseException as exc:
            roll_back(conn)
            error = self._described(exc)
            if error is exc:
                raise
            raise error from exc

    def _conn(self) -> sqlite3.Connection:
        """The connection, on the store's thread."""
        conn = self._shared.conn
        if conn is None:
            raise StoreError(f"{self._shared.where} is closed")
        return conn

    def _described(self, exc: BaseException) -> BaseException:
        """What a failed call raises: a SQLite error in the store's words; the first failure is kept."""
        error = store_error(self._shared.where, exc) if isinstance(exc, sqlite3.Error) else exc
        expected = UnknownSessionError | StoreConflictError  # answers, not failures of the store
        if isinstance(error, StoreError) and not isinstance(error, expected):
            self.failure = self.failure or error
        if error is not exc:
            error.__cause__ = exc
        return error

    def _renew_soon(self) -> None:
        """The heartbeat's beat: queue a renewal on the store's thread, without waiting for it."""
        self._thread.post(self._renew)

    def _renew(self) -> None:
        conn = self._shared.conn
        if conn is None:
            return
        try:
            leases.renew_holder(conn, self._holder, self._lease_seconds)
            self._renewed_at = time.monotonic()
        except sqlite3.Error as exc:  # the next beat tries again; a write meanwhile reports the cause
            _log.warning("could not renew the session leases of %s: %s", self._shared.where, exc)

    # --- the interface ---------------------------------------------------------------------------------

    async def claim(self, session_id: str, *, take_over: bool = False) -> Holder | None:
        self.held.forget(session_id)
        return await self._run(self._claim, session_id, take_over)

    def _claim(self, conn: sqlite3.Connection, session_id: str, take_over: bool) -> Holder | None:
        conn.execute("BEGIN IMMEDIATE")
        taken = leases.claim(conn, session_id, self._holder, take_over=take_over, seconds=self._lease_seconds)
        conn.execute("COMMIT")
        self._renewed_at = time.monotonic()
        self._opened.add(session_id)
        self._holding()
        return taken

    async def open_session(self, session_id: str, *, agent: str, team: str = "") -> tuple[SessionState, bool]:
        self.held.forget(session_id)
        state, created = await self._run(self._open_session, session_id, agent, team)
        self.held.opened(state)
        return state, created

    def _open_session(
        self, conn: sqlite3.Connection, session_id: str, agent: str, team: str
    ) -> tuple[SessionState, bool]:
        conn.execute("BEGIN IMMEDIATE")
        renew = not self._fresh()
        seconds = self._lease_seconds
        leases.claim(conn, session_id, self._holder, take_over=False, seconds=seconds, renew=renew)
        state, created = sql.open_state(conn, session_id, agent, team)
        conn.execute("COMMIT")
        if renew:
            self._renewed_at = time.monotonic()
        self._opened.add(session_id)
        self._holding()
        return state, created

    def _fresh(self) -> bool:
        """Whether this store's holder row was renewed less than a third of a lease ago, so it stands for
        two thirds of a lease at least (the heartbeat renews it before then): opening a session need not
        renew it again."""
        return time.monotonic() - self._renewed_at < self._lease_seconds / 3

    def _holding(self) -> None:
        """This store holds a lease now: renew it from here on, and let go of it when closing."""
        self._shared.holding = True
        self._heartbeat.start()

    async def get_session(self, session_id: str) -> SessionState:
        return await self._run(sql.get_session, session_id)

    def _append(self, append: EncodedAppend) -> asyncio.Future[int]:
        if self._shared.closed:
            raise StoreError(f"{self._shared.where} is closed")
        return self._batch.submit(self._conn, append)

    def _append_rows(self, conn: sqlite3.Connection, append: EncodedAppend) -> int:
        """On the store's thread, which keeps ``_opened``."""
        opened = append.session_id in self._opened
        return sql.append_entries(conn, append, self._holder, opened=opened)

    async def end_session(self, session_id: str) -> None:
        self.held.forget(session_id)
        await self._run(self._end_session, session_id)

    def _end_session(self, conn: sqlite3.Connection, session_id: str) -> None:
        sql.end_session(conn, session_id, self._holder, session_id in self._opened)
        self._opened.discard(session_id)  # let go of: a later write was never opened here

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        return await self._run(sql.read_entries, session_id, after)

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._run(sql.list_sessions)

    async def delete_session(self, session_id: str) -> None:
        self.held.forget(session_id)
        await self._run(sql.delete_session, session_id, self._holder)

    async def secret(self, name: str, *, size: int = 32) -> bytes:
        return await self._run(sql.secret, name, secrets.token_bytes(size), self.read_only)

    async def wait_for_operator(self, session_id: str, prompt: str) -> OperatorWait:
        return await self._run(sql.wait_for_operator, session_id, prompt)

    async def take_for_operator(self, session_id: str, operator: str) -> bool:
        return await self._run(sql.take_for_operator, session_id, operator)

    async def release_operator(self, session_id: str, operator: str | None = None) -> None:
        await self._run(sql.release_operator, session_id, operator)

    async def operator_waits(self) -> list[OperatorWait]:
        return await self._run(sql.operator_waits)

    async def record_intent(self, key: EffectKey, *, position: int = 0) -> Effect | None:
        return await self._run(effects.record_intent, key, position, self._holder.token)

    async def record_outcome(self, key: EffectKey, status: EffectStatus, result: str = "") -> None:
        await self._run(effects.record_outcome, key, status, result)

    async def lookup(self, key: EffectKey) -> Effect | None:
        return await self._run(effects.lookup, key)

    async def effects(self, session_id: str) -> list[Effect]:
        return await self._run(effects.effects, session_id)

    async def close(self) -> None:
        if self._shared.closed:
            return
        self._shared.closed = True
        self._heartbeat.stop()  # quick: the heartbeat never waits for the store's thread
        await self._thread.call(self._close_connection)
        self._thread.stop()  # at once: nothing is queued after the close

    def close_now(self) -> None:
        """Close from code without an event loop (the command line)."""
        if not self._shared.closed:
            self._shared.closed = True
            self._heartbeat.stop()
            self._thread.wait(self._close_connection)
            self._thread.stop()

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
