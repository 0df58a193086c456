"""A session store in PostgreSQL, shared by several front ends and web servers.

Any of them resumes any session, and a front end that dies loses nothing that was acknowledged.

It keeps the SQLite store's rules (one writer per session by lease, compare-and-set appends, a crashed
holder's claim expiring by itself), with the database's clock deciding every expiry. It runs on its own
thread with its own event loop and an ``psycopg`` connection pool there, as the SQLite store runs on its
own thread: so it serves any caller's loop, one after another (the command line opens it before its chat
loop starts), and many sessions at once without one lock serialising them.

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
import logging
import math
import secrets
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Literal, TypeVar, get_args

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from handoffs_runtime.errors import SessionBusyError, StoreConflictError, StoreError, UnknownSessionError
from handoffs_runtime.sessions.desk import OperatorWait
from handoffs_runtime.sessions.effects import Effect, EffectKey, EffectStatus
from handoffs_runtime.sessions.leases import LEASE_SECONDS, Holder
from handoffs_runtime.sessions.outage import DELAYED, RECOVERED, DelayListener
from handoffs_runtime.sessions.postgres import effects, leases, sql
from handoffs_runtime.sessions.postgres.crossing import (
    HUNG_SECONDS as HUNG_SECONDS,
)
from handoffs_runtime.sessions.postgres.crossing import (
    LOCK_SECONDS,
    STATEMENT_SECONDS,
    Outage,
    across,
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

T = TypeVar("T")
Conn = AsyncConnection[TupleRow]
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
    ``outage_seconds`` how long a call waits for a database that does not answer; ``pool_size`` the most
    connections it opens. ``failure`` is the first error it raised, as on the SQLite store.

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
        self._synchronous_commit = synchronous_commit
        self.url = url
        self.schema = check_schema_name(schema)
        self._where = f"session store {describe_url(url)}"
        self._outage_seconds = outage_seconds
        self._listeners: list[DelayListener] = []
        self._closed = False
        self._holding = False
        self._heartbeat: asyncio.Task[None] | None = None
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="handoffs-store-pg", daemon=True)
        self._thread.start()
        try:
            self._on_loop(self._open(pool_size, connect_timeout)).result()
        except BaseException:
            self._stop_loop()
            raise

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self._where.removeprefix('session store ')!r}, schema={self.schema!r})"

    def report_delays(self, listener: DelayListener) -> None:
        self._listeners.append(listener)

    # --- plumbing ------------------------------------------------------------------------------------

    def _on_loop(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _open(self, pool_size: int, connect_timeout: float) -> None:
        try:
            conn = await AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=max(1, math.ceil(connect_timeout))
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the {self._where} ({_first_line(exc)}); check the URL, that the server "
                "runs, and that it accepts this user"
            ) from exc
        try:
            if self.read_only:
                await check_readable(conn, self.schema, self._where)
            else:
                await migrate(conn, self.schema, self._where)
        except psycopg.Error as exc:
            raise StoreError(f"{self._where}: {_first_line(exc)}") from exc
        finally:
            await conn.close()
        self._pool = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=2.0,
            kwargs={"autocommit": True, "options": _options(self.schema, self._synchronous_commit)},
            name="handoffs-store",
        )
        await self._pool.open(wait=True, timeout=connect_timeout)

    async def _call(self, session: str | None, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(conn, retry, *args)`` on the store's loop; wait out an outage of up to
        ``outage_seconds``, telling ``session``'s person once when it starts and once when it ends."""
        started = time.monotonic()
        waited_since: float | None = None
        attempt = 0
        while True:
            if self._closed:
                raise StoreError(f"{self._where} is closed")
            try:
                result = await across(self._loop, self._guarded(fn, attempt > 0, *args))
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

    async def _guarded(self, fn: Callable[..., Awaitable[T]], retry: bool, *args: Any) -> T:
        pool = self._pool
        if pool is None:
            raise StoreError(f"{self._where} is closed")
        try:
            async with pool.connection() as conn:
                return await fn(conn, retry, *args)
        except (psycopg.Error, PoolTimeout) as exc:
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

    def _hold(self) -> None:
        """This store holds a lease now: renew it from here on (on the store's loop), let go when closing."""
        self._holding = True
        if self._heartbeat is None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._lease_seconds / 3)
            try:
                assert self._pool is not None
                async with self._pool.connection() as conn:
                    await leases.renew(conn, self._holder, self._lease_seconds)
            except (psycopg.Error, PoolTimeout) as exc:  # the next beat tries again
                _log.warning("could not renew the session leases of %s: %s", self._where, _first_line(exc))

    # --- the interface ---------------------------------------------------------------------------------

    async def claim(self, session_id: str, *, take_over: bool = False) -> Holder | None:
        self.held.forget(session_id)
        return await self._call(session_id, self._claim, session_id, take_over)

    async def _claim(self, conn: Conn, retry: bool, session_id: str, take_over: bool) -> Holder | None:
        async with conn.transaction():
            taken = await leases.claim(
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

    async def _open_session(
        self, conn: Conn, retry: bool, session_id: str, agent: str, team: str
    ) -> tuple[SessionState, bool]:
        """One statement, one round trip, when nobody holds the session; else step by step."""
        if not retry:
            me = self._holder
            values = {"token": me.token, "pid": me.pid, "host": me.host, "secs": self._lease_seconds}
            values |= {"id": session_id, "agent": agent, "team": team}
            cursor = await conn.execute(sql.FAST_OPEN, values)
            row = await cursor.fetchone()
            if row is not None:
                self._opened.add(session_id)
                self._hold()
                return state_from_row(row[1:]), bool(row[0])
        async with conn.transaction():
            await leases.claim(conn, session_id, self._holder, take_over=False, seconds=self._lease_seconds)
            cursor = await conn.execute(
                f"INSERT INTO sessions (id, active_agent, team, created_at, updated_at) "
                f"VALUES (%s, %s, %s, {sql.NOW}, {sql.NOW}) ON CONFLICT (id) DO NOTHING",
                (session_id, agent, team),
            )
            created = cursor.rowcount == 1
            if not created:
                await conn.execute("UPDATE sessions SET status = 'open' WHERE id = %s", (session_id,))
            state = await sql.get_session(conn, retry, session_id)
        self._opened.add(session_id)
        self._hold()
        return state, created

    async def get_session(self, session_id: str) -> SessionState:
        return await self._call(session_id, sql.get_session, session_id)

    async def _append(self, append: EncodedAppend) -> int:
        return await self._call(append.session_id, self._write, append, uuid.uuid4().hex)

    async def _write(self, conn: Conn, retry: bool, write: EncodedAppend, write_id: str) -> int:
        """One append in one statement, one round trip; when it writes nothing (the session is unknown,
        not held, or gained entries) or is a retry, :meth:`_write_checked` finds out why, or writes."""
        if not retry:
            cursor = await conn.execute(
                sql.FAST_APPEND_DELTA if write.context_delta else sql.FAST_APPEND,
                sql.fast_append_params(write, write_id, self._holder.token),
            )
            done = await cursor.fetchone()
            if done is not None:
                return int(done[0])
        return await self._write_checked(conn, retry, write, write_id)

    async def _write_checked(self, conn: Conn, retry: bool, write: EncodedAppend, write_id: str) -> int:
        """One append, step by step in a transaction; ``write_id`` lets a retry find out whether it was
        stored already."""
        session_id = write.session_id
        async with conn.transaction():
            cursor = await conn.execute(
                "SELECT last_seq FROM sessions WHERE id = %s FOR UPDATE", (session_id,)
            )
            found = await cursor.fetchone()
            if found is None:
                raise UnknownSessionError(f"no session {session_id!r} in the store; open it before appending")
            await leases.check(conn, session_id, self._holder, opened=session_id in self._opened)
            if retry and write.rows:  # the connection broke as an earlier try committed: did it?
                cursor = await conn.execute(
                    "SELECT max(seq) FROM messages WHERE session_id = %s AND write_id = %s",
                    (session_id, write_id),
                )
                done = await cursor.fetchone()
                if done is not None and done[0] is not None:
                    return int(done[0])
            last = int(found[0])
            write.check_expected(last)
            if write.rows:
                async with conn.cursor() as insert:
                    await insert.executemany(
                        "INSERT INTO messages (session_id, seq, agent, kind, body, created_at, write_id) "
                        f"VALUES (%s, %s, %s, %s, %s, {sql.NOW}, %s)",
                        [
                            (session_id, last + i, agent, kind, body, write_id)
                            for i, (agent, kind, body) in enumerate(write.rows, start=1)
                        ],
                    )
            last += len(write.rows)
            context = sql.DELTA if write.context_delta else "coalesce(%(ctx)s, context)"
            await conn.execute(
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

    async def _end_session(self, conn: Conn, retry: bool, session_id: str) -> None:
        """One statement, one round trip, when the lease is ours; else step by step, which says why not."""
        if not retry:
            cursor = await conn.execute(sql.FAST_END, {"id": session_id, "token": self._holder.token})
            if await cursor.fetchone() is not None:
                self._opened.discard(session_id)
                return
        async with conn.transaction():
            cursor = await conn.execute(
                f"UPDATE sessions SET status = 'ended', updated_at = {sql.NOW} WHERE id = %s", (session_id,)
            )
            if cursor.rowcount == 0:
                raise UnknownSessionError(f"no session {session_id!r} in the store")
            if retry and not await leases.holds(conn, session_id, self._holder):
                return  # the earlier try ended it and let go, then lost its connection
            await leases.check(conn, session_id, self._holder, opened=session_id in self._opened)
            await leases.release(conn, self._holder, session_id)
        self._opened.discard(session_id)  # let go of: a later write was never opened here

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        return await self._call(session_id, sql.entries, session_id, after)

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._call(None, sql.list_sessions)

    async def delete_session(self, session_id: str) -> None:
        self.held.forget(session_id)
        await self._call(None, self._delete_session, session_id)

    async def _delete_session(self, conn: Conn, retry: bool, session_id: str) -> None:
        """Delete a session nobody else is using (a crashed holder does not count)."""
        async with conn.transaction():
            other = await leases.live_holder(conn, session_id, self._holder, lock=True)
            if other is not None:
                raise SessionBusyError(
                    f"session {session_id!r} is open in another process ({other}); end the chat there first"
                )
            cursor = await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
            if cursor.rowcount == 0 and not retry:
                raise UnknownSessionError(
                    f"no session {session_id!r} in the store; `handoffs sessions list` shows the ids"
                )
            await effects.forget(conn, session_id)
            await leases.forget(conn, session_id)

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
            await asyncio.wrap_future(self._on_loop(self._shut_down()))
            await asyncio.to_thread(self._stop_loop)

    def close_now(self) -> None:
        """Close from code without an event loop (the command line)."""
        if not self._closed:
            self._closed = True
            self._on_loop(self._shut_down()).result()
            self._stop_loop()

    async def _shut_down(self) -> None:
        """Let the statements under way finish (bounded), let go of this store's leases (so the next front
        end need not wait), then close the pool."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        under_way = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if under_way:
            await asyncio.wait(under_way, timeout=_SETTLE_SECONDS)
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if self._holding:
            try:
                async with pool.connection(timeout=2.0) as conn:
                    await leases.release_all(conn, self._holder)
            except (psycopg.Error, PoolTimeout) as exc:  # they expire by themselves
                _log.warning("could not release the session leases of %s: %s", self._where, _first_line(exc))
        await pool.close()


_SETTLE_SECONDS = 5.0
"""How long closing waits for the statements under way on the store's loop."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
