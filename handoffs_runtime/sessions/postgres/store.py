"""A session store in PostgreSQL, shared by several front ends and web servers.

Any of them resumes any session, and a front end that dies loses nothing that was acknowledged.

It keeps the SQLite store's rules (one writer per session by lease, compare-and-set appends, a crashed
holder's claim expiring by itself), with the database's clock deciding every expiry. It runs its calls on
worker threads of its own (``pool_size`` of them, one connection each), as the SQLite store runs on its
own thread: so it serves any caller's loop, one after another (the command line opens it before its chat
loop starts), and many sessions at once without one lock serialising them (see
:mod:`~handoffs_runtime.sessions.postgres.crossing`).

A brief outage of the database delays a call instead of failing it: the call is retried until
``outage_seconds`` have passed, and the person whose turn waits is told (see
:class:`~handoffs_runtime.sessions.outage.ReportsDelays`). A write whose connection broke while it
committed is retried by its id, so it is stored once. A longer outage ends the call with one
:class:`StoreError` line. A database that hangs (a stopped server, a row lock another client holds) is
an outage too: every statement and lock wait is bounded on the server (``STATEMENT_SECONDS``,
``LOCK_SECONDS``) and every call here (``HUNG_SECONDS``), so the person hears of it within that bound.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import secrets
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar, get_args

import psycopg
from psycopg import Connection, pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from handoffs_runtime.errors import SessionBusyError, StoreConflictError, StoreError, UnknownSessionError
from handoffs_runtime.sessions.desk import OperatorWait
from handoffs_runtime.sessions.effects import Effect, EffectKey, EffectStatus
from handoffs_runtime.sessions.leases import LEASE_SECONDS, Heartbeat, Holder
from handoffs_runtime.sessions.outage import DELAYED, RECOVERED, DelayListener
from handoffs_runtime.sessions.postgres import effects, leases, sql
from handoffs_runtime.sessions.postgres.crossing import (
    HUNG_SECONDS as HUNG_SECONDS,
)
from handoffs_runtime.sessions.postgres.crossing import (
    LOCK_SECONDS,
    STATEMENT_SECONDS,
    Outage,
    bounded,
    is_outage,
)
from handoffs_runtime.sessions.postgres.schema import (
    DEFAULT_SCHEMA,
    check_readable,
    check_schema_name,
    migrate,
)
from handoffs_runtime.sessions.rows import state_from_row
from handoffs_runtime.sessions.sql_store import EncodedAppend, SQLStore
from handoffs_runtime.sessions.store import (
    SessionInfo,
    SessionState,
    StoredEntry,
)
from handoffs_runtime.sessions.thread import StoreThread

T = TypeVar("T")
Conn = Connection[TupleRow]
_log = logging.getLogger(__name__)


def describe_url(url: str) -> str:
    """The database a URL names, without its password: ``PostgreSQL database shop on db1:5432``."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise StoreError(f"{url.split('@')[-1]!r} is not a valid PostgreSQL URL ({exc})") from exc
    name = parts.get("dbname") or parts.get("user") or "?"
    return f"PostgreSQL database {name} on {parts.get('host') or 'localhost'}:{parts.get('port') or 5432}"


SynchronousCommit = Literal["on", "remote_apply", "remote_write", "local", "off"]


def _options(schema: str, synchronous_commit: SynchronousCommit) -> str:
    """The connection's settings: its schema, how long a statement and a lock wait may last, and when a
    commit returns (``synchronous_commit``, whatever the server's own default)."""
    bounds = f"-c statement_timeout={STATEMENT_SECONDS * 1000:.0f} -c lock_timeout={LOCK_SECONDS * 1000:.0f}"
    return f"-c search_path={schema} {bounds} -c synchronous_commit={synchronous_commit}"


class PostgresSessionStore(SQLStore):
    """A :class:`~handoffs_runtime.sessions.store.SessionStore` in a PostgreSQL database.

    ``url`` is a libpq connection string (``postgresql://user:password@host:5432/db``); the tables live in
    ``schema`` (created, and migrated once under a lock, when the store opens). Creating the store connects
    and migrates, so a wrong URL or a newer schema fails before a chat starts; create it with ``await
    asyncio.to_thread(PostgresSessionStore, url)`` inside a running loop.

    ``synchronous_commit`` is when a write is acknowledged: ``"on"`` (the default) once it is on the
    server's disk (and, with synchronous standbys, theirs), so a power cut loses nothing acknowledged;
    ``"off"`` a moment earlier, so a crash of the server's machine may lose the last fraction of a second
    of acknowledged turns (never corrupting the database); the replica levels as PostgreSQL defines them.

    ``lease_seconds`` is how long a claim lasts without renewal (renewed every third of it);
    ``outage_seconds`` how long a call waits for a database that does not answer; ``pool_size`` how many
    calls run at once (a worker thread each, with a connection of its own: the most connections it opens).
    ``failure`` is the first error it raised, as on the SQLite store.

    >>> store = PostgresSessionStore("postgresql://app@db/shop")  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        lease_seconds: float = LEASE_SECONDS,
        outage_seconds: float = 30.0,
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        read_only: bool = False,
        synchronous_commit: SynchronousCommit = "on",
    ) -> None:
        super().__init__(read_only=read_only, lease_seconds=lease_seconds, outage_seconds=outage_seconds)
        if synchronous_commit not in get_args(SynchronousCommit):
            raise ValueError(f"synchronous_commit must be one of {get_args(SynchronousCommit)}")
        self.url = url
        self.schema = check_schema_name(schema)
        self._where = f"session store {describe_url(url)}"
        self._outage_seconds = outage_seconds
        self._listeners: list[DelayListener] = []
        self._closed = False
        self._holding = False
        self._options = _options(self.schema, synchronous_commit)
        self._open(connect_timeout)
        self._heartbeat = Heartbeat(self._renew_soon, lease_seconds / 3)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[Conn] = []
        """Every worker's connection, closed with the store."""
        self._workers = StoreThread("handoffs-store-pg", pool_size)
        self._writes = itertools.count()

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self._where.removeprefix('session store ')!r}, schema={self.schema!r})"

    def report_delays(self, listener: DelayListener) -> None:
        self._listeners.append(listener)

    # --- plumbing: every call runs on one of the store's worker threads, with that worker's connection --

    def _open(self, connect_timeout: float) -> None:
        """Connect once and migrate (or check a read-only schema), so a wrong URL fails here, in words."""
        try:
            seconds = max(1, math.ceil(connect_timeout))
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=seconds)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the {self._where} ({_first_line(exc)}); check the URL, that the server "
                "runs, and that it accepts this user"
            ) from exc
        try:
            if self.read_only:
                check_readable(conn, self.schema, self._where)
            else:
                migrate(conn, self.schema, self._where)
        except psycopg.Error as exc:
            raise StoreError(f"{self._where}: {_first_line(exc)}") from exc
        finally:
            conn.close()

    def _conn(self) -> Conn:
        """This worker's connection, made when it has none (or lost it)."""
        current: Conn | None = getattr(self._local, "conn", None)
        if current is not None and not current.closed:
            return current
        conn = psycopg.connect(
            self.url, autocommit=True, options=self._options, connect_timeout=_CONNECT_SECONDS
        )
        self._local.conn = conn
        self._local.cursor = conn.cursor()
        with self._lock:
            self._conns = [c for c in self._conns if c is not current]
            self._conns.append(conn)
        return conn

    def _one_row(self, query: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """On a worker, with the connection :meth:`_guarded` just gave it: ``query``'s first row, through
        the worker's one cursor (a cursor made for each statement costs as much as the statement)."""
        cursor: psycopg.Cursor[tuple[Any, ...]] = self._local.cursor
        cursor.execute(query, params)
        return cursor.fetchone()

    async def _call(self, session: str | None, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, retry, *args)`` on a worker; wait out an outage of up to ``outage_seconds``,
        telling ``session``'s person once when it starts and once when it ends."""
        started = time.monotonic()
        waited_since: float | None = None
        attempt = 0
        while True:
            if self._closed:
                raise StoreError(f"{self._where} is closed")
            try:
                result: T = await bounded(self._workers.call(self._guarded, fn, attempt > 0, *args))
            except Outage as outage:
                now = time.monotonic()
                waited_since = waited_since if waited_since is not None else started
                if now - waited_since >= self._outage_seconds:
                    error = StoreError(
                        f"the {self._where} did not answer for {self._outage_seconds:g} s ({outage}); "
                        "everything stored before is kept"
                    )
                    self.failure = self.failure or error
                    raise error from outage
                if attempt == 0 and session is not None:
                    await self._tell(session, DELAYED)
                attempt += 1
                await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
                continue
            if attempt and session is not None:
                await self._tell(session, RECOVERED)
            return result

    async def _tell(self, session: str, text: str) -> None:
        for listener in self._listeners:
            try:
                await listener(session, text)
            except Exception:  # a notice that cannot be shown must not fail the turn
                _log.warning("could not tell session %s that the store is slow", session, exc_info=True)

    def _guarded(self, fn: Callable[..., T], retry: bool, *args: Any) -> T:
        """On a worker: ``fn``'s outcome, a psycopg error in the store's words (an outage to retry, or the
        store's failure). A connection left inside a transaction, or broken, is not used again."""
        conn: Conn | None = None
        try:
            conn = self._conn()
            return fn(conn, retry, *args)
        except psycopg.Error as exc:
            if is_outage(exc):
                raise Outage(_first_line(exc)) from exc
            error = StoreError(f"{self._where}: {_first_line(exc)}")
            self.failure = self.failure or error
            raise error from exc
        except (UnknownSessionError, StoreConflictError):  # answers, not failures of the store
            raise
        except StoreError as exc:
            self.failure = self.failure or exc
            raise
        finally:
            if conn is not None and not conn.closed and conn.info.transaction_status != _IDLE:
                conn.close()

    def _hold(self) -> None:
        """This store holds a lease now: renew it from here on, and let go of it when closing."""
        self._holding = True
        self._heartbeat.start()

    def _renew_soon(self) -> None:
        """The heartbeat's beat: queue a renewal for a worker, without waiting for it."""
        self._workers.post(self._renew)

    def _renew(self) -> None:
        try:
            leases.renew(self._conn(), self._holder, self._lease_seconds)
        except psycopg.Error as exc:  # the next beat tries again
            _log.warning("could not renew the session leases of %s: %s", self._where, _first_line(exc))

    # --- the interface ---------------------------------------------------------------------------------

    async def claim(self, session_id: str, *, take_over: bool = False) -> Holder | None:
        self.held.forget(session_id)
        return await self._call(session_id, self._claim, session_id, take_over)

    def _claim(self, conn: Conn, retry: bool, session_id: str, take_over: bool) -> Holder | None:
        with conn.transaction():
            taken = leases.claim(
                conn, session_id, self._holder, take_over=take_over, seconds=self._lease_seconds
            )
        self._opened.add(session_id)
        self._hold()
        return taken

    async def open_session(self, session_id: str, *, agent: str, team: str = "") -> tuple[SessionState, bool]:
        self.held.forget(session_id)
        state, created = await self._call(session_id, self._open_session, session_id, agent, team)
        self.held.opened(state)
        return state, created

    def _open_session(
        self, conn: Conn, retry: bool, session_id: str, agent: str, team: str
    ) -> tuple[SessionState, bool]:
        """One statement, one round trip, when nobody holds the session; else step by step."""
        if not retry:
            me = self._holder
            values = {"token": me.token, "pid": me.pid, "host": me.host, "secs": self._lease_seconds}
            values |= {"id": session_id, "agent": agent, "team": team}
            row = self._one_row(sql.FAST_OPEN, values)
            if row is not None:
                self._opened.add(session_id)
                self._hold()
                return state_from_row(row[1:]), bool(row[0])
        with conn.transaction():
            leases.claim(conn, session_id, self._holder, take_over=False, seconds=self._lease_seconds)
            cursor = conn.execute(
                f"INSERT INTO sessions (id, active_agent, team, created_at, updated_at) "
                f"VALUES (%s, %s, %s, {sql.NOW}, {sql.NOW}) ON CONFLICT (id) DO NOTHING",
                (session_id, agent, team),
            )
            created = cursor.rowcount == 1
            if not created:
                conn.execute("UPDATE sessions SET status = 'open' WHERE id = %s", (session_id,))
            state = sql.get_session(conn, retry, session_id)
        self._opened.add(session_id)
        self._hold()
        return state, created

    async def get_session(self, session_id: str) -> SessionState:
        return await self._call(session_id, sql.get_session, session_id)

    def _append(self, append: EncodedAppend) -> Awaitable[int]:
        write_id = f"{self._holder.token}-{next(self._writes)}"  # unique to this write, cheaper than a uuid
        return self._call(append.session_id, self._write, append, write_id)

    def _write(self, conn: Conn, retry: bool, write: EncodedAppend, write_id: str) -> int:
        """One append in one statement, one round trip; when it writes nothing (the session is unknown,
        not held, or gained entries) or is a retry, :meth:`_write_checked` finds out why, or writes."""
        if not retry:
            query = sql.FAST_APPEND_DELTA if write.context_delta else sql.FAST_APPEND
            done = self._one_row(query, sql.fast_append_params(write, write_id, self._holder.token))
            if done is not None:
                return int(done[0])
        return self._write_checked(conn, retry, write, write_id)

    def _write_checked(self, conn: Conn, retry: bool, write: EncodedAppend, write_id: str) -> int:
        """One append, step by step in a transaction; ``write_id`` lets a retry find out whether it was
        stored already."""
        session_id = write.session_id
        with conn.transaction():
            cursor = conn.execute("SELECT last_seq FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
            found = cursor.fetchone()
            if found is None:
                raise UnknownSessionError(f"no session {session_id!r} in the store; open it before appending")
            leases.check(conn, session_id, self._holder, opened=session_id in self._opened)
            if retry and write.rows:  # the connection broke as an earlier try committed: did it?
                cursor = conn.execute(
                    "SELECT max(seq) FROM messages WHERE session_id = %s AND write_id = %s",
                    (session_id, write_id),
                )
                done = cursor.fetchone()
                if done is not None and done[0] is not None:
                    return int(done[0])
            last = int(found[0])
            write.check_expected(last)
            if write.rows:
                with conn.cursor() as insert:
                    insert.executemany(
                        "INSERT INTO messages (session_id, seq, agent, kind, body, created_at, write_id) "
                        f"VALUES (%s, %s, %s, %s, %s, {sql.NOW}, %s)",
                        [
                            (session_id, last + i, agent, kind, body, write_id)
                            for i, (agent, kind, body) in enumerate(write.rows, start=1)
                        ],
                    )
            last += len(write.rows)
            context = sql.DELTA if write.context_delta else "coalesce(%(ctx)s, context)"
            conn.execute(
                f"UPDATE sessions SET last_seq = %(last)s, updated_at = {sql.NOW}, "
                f"active_agent = coalesce(%(agent)s, active_agent), context = {context}, "
                "context_seq = CASE WHEN %(ctx)s::text IS NULL THEN context_seq ELSE %(last)s END "
                "WHERE id = %(id)s",
                {"last": last, "agent": write.active_agent, "ctx": write.context_json, "id": session_id},
            )
        return last

    async def end_session(self, session_id: str) -> None:
        self.held.forget(session_id)
        await self._call(session_id, self._end_session, session_id)

    def _end_session(self, conn: Conn, retry: bool, session_id: str) -> None:
        """One statement, one round trip, when the lease is ours; else step by step, which says why not."""
        mine = {"id": session_id, "token": self._holder.token}
        ended = None if retry else self._one_row(sql.FAST_END, mine)
        if ended is not None:
            self._opened.discard(session_id)
            return
        with conn.transaction():
            cursor = conn.execute(
                f"UPDATE sessions SET status = 'ended', updated_at = {sql.NOW} WHERE id = %s", (session_id,)
            )
            if cursor.rowcount == 0:
                raise UnknownSessionError(f"no session {session_id!r} in the store")
            if retry and not leases.holds(conn, session_id, self._holder):
                return  # the earlier try ended it and let go, then lost its connection
            leases.check(conn, session_id, self._holder, opened=session_id in self._opened)
            leases.release(conn, self._holder, session_id)
        self._opened.discard(session_id)  # let go of: a later write was never opened here

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        return await self._call(session_id, sql.entries, session_id, after)

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._call(None, sql.list_sessions)

    async def delete_session(self, session_id: str) -> None:
        self.held.forget(session_id)
        await self._call(None, self._delete_session, session_id)

    def _delete_session(self, conn: Conn, retry: bool, session_id: str) -> None:
        """Delete a session nobody else is using (a crashed holder does not count)."""
        with conn.transaction():
            other = leases.live_holder(conn, session_id, self._holder, lock=True)
            if other is not None:
                raise SessionBusyError(
                    f"session {session_id!r} is open in another process ({other}); end the chat there first"
                )
            cursor = conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
            if cursor.rowcount == 0 and not retry:
                raise UnknownSessionError(
                    f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
                )
            effects.forget(conn, session_id)
            leases.forget(conn, session_id)

    async def secret(self, name: str, *, size: int = 32) -> bytes:
        """The secret ``name`` every process on this database shares, made once by whoever asked first."""
        return await self._call(None, sql.secret, name, secrets.token_bytes(size), self.read_only)

    async def wait_for_operator(self, session_id: str, prompt: str) -> OperatorWait:
        return await self._call(session_id, sql.wait_for_operator, session_id, prompt)

    async def take_for_operator(self, session_id: str, operator: str) -> bool:
        return await self._call(session_id, sql.take_for_operator, session_id, operator)

    async def release_operator(self, session_id: str, operator: str | None = None) -> None:
        await self._call(session_id, sql.release_operator, session_id, operator)

    async def operator_waits(self) -> list[OperatorWait]:
        return await self._call(None, sql.operator_waits)

    async def record_intent(self, key: EffectKey, *, position: int = 0) -> Effect | None:
        claim = uuid.uuid4().hex
        return await self._call(key.session_id, effects.record_intent, key, position, claim)

    async def record_outcome(self, key: EffectKey, status: EffectStatus, result: str = "") -> None:
        await self._call(key.session_id, effects.record_outcome, key, status, result)

    async def lookup(self, key: EffectKey) -> Effect | None:
        return await self._call(key.session_id, effects.lookup, key)

    async def effects(self, session_id: str) -> list[Effect]:
        return await self._call(session_id, effects.effects, session_id)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await asyncio.to_thread(self._shut_down)

    def close_now(self) -> None:
        """Close from code without an event loop (the command line)."""
        if not self._closed:
            self._closed = True
            self._shut_down()

    def _shut_down(self) -> None:
        """Let the calls under way finish (bounded), let go of this store's leases (so the next front end
        need not wait), then close the connections."""
        self._heartbeat.stop()
        if self._holding:
            self._workers.post(self._release_all)
        if self._workers.stop(_SETTLE_SECONDS):  # else a worker still waits for the database: leave it
            with self._lock:
                conns, self._conns = self._conns, []
            for conn in conns:
                conn.close()

    def _release_all(self) -> None:
        try:
            leases.release_all(self._conn(), self._holder)
        except psycopg.Error as exc:  # they expire by themselves
            _log.warning("could not release the session leases of %s: %s", self._where, _first_line(exc))


_SETTLE_SECONDS = 5.0
"""How long closing waits for the statements under way on the store's workers."""

_CONNECT_SECONDS = 2
"""How long a worker waits to connect before it counts as an outage (libpq counts whole seconds)."""

_IDLE = pq.TransactionStatus.IDLE


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
