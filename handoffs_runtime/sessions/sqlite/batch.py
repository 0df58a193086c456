"""Group commit: the appends that wait for the SQLite store's thread are written in one transaction.

At ``synchronous=FULL`` every commit waits for the disk, so a store that commits each append on its own
serves as many appends a second as the disk syncs. Appends that arrive while the thread is busy instead
queue here, and the thread writes all of them in one transaction (each in a savepoint, so one refused
append, a conflict or a lost lease, takes nothing else with it) and syncs once. An append is answered
only after the commit that holds it returned, so what was acknowledged is on disk, as before; alone,
an append costs what it did (one hop to the thread, one commit).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable

from handoffs_runtime.sessions.sql_store import EncodedAppend
from handoffs_runtime.sessions.sqlite.connection import roll_back
from handoffs_runtime.sessions.thread import StoreThread, answer_soon

Write = Callable[[sqlite3.Connection, EncodedAppend], int]
"""One append inside an open transaction, returning the session's last sequence number."""
Guard = Callable[[BaseException], BaseException]
"""What a failed append raises: the store's words for a SQLite error, recorded as its failure."""

_Waiting = tuple[EncodedAppend, "asyncio.Future[int]"]


class GroupCommit:
    """The queue of appends waiting for the store's thread, and the writing of one batch on it."""

    __slots__ = ("_guard", "_lock", "_thread", "_waiting", "_write")

    def __init__(self, thread: StoreThread, write: Write, guard: Guard) -> None:
        self._thread = thread
        self._write = write
        self._guard = guard
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []

    def submit(self, conn: Callable[[], sqlite3.Connection], append: EncodedAppend) -> asyncio.Future[int]:
        """Queue ``append``; the first of a batch asks the thread to write the batch (``conn`` gives the
        store's connection there)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        with self._lock:
            self._waiting.append((append, done))
            first = len(self._waiting) == 1
        if first:
            self._thread.post(self._flush, loop, conn)
        return done

    def _flush(self, loop: asyncio.AbstractEventLoop, conn_of: Callable[[], sqlite3.Connection]) -> None:
        """On the store's thread: write every queued append in one transaction, then answer them all."""
        with self._lock:
            batch, self._waiting = self._waiting, []
        outcomes: list[int | BaseException] = []
        try:
            conn = conn_of()
        except BaseException as exc:  # the store was closed: an answer, not a failure of the store
            failed: list[int | BaseException] = [exc] * len(batch)
            loop.call_soon_threadsafe(_answer, [done for _, done in batch], failed)
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if len(batch) == 1:  # alone: its failure rolls back the transaction, as it did before
                    outcomes.append(self._write(conn, batch[0][0]))
                else:
                    for append, _ in batch:
                        outcomes.append(self._write_one(conn, append))
                conn.execute("COMMIT")
            except BaseException:
                roll_back(conn)
                raise
        except BaseException as exc:  # nothing of the batch was committed: every append fails with it
            outcomes = [self._guard(exc)] * len(batch)
        if len(batch) == 1:  # the usual case: answered as any call of the thread, without the lists
            outcome = outcomes[0]
            error = outcome if isinstance(outcome, BaseException) else None
            answer_soon(loop, batch[0][1], None if error else outcome, error)
            return
        loop.call_soon_threadsafe(_answer, [done for _, done in batch], outcomes)

    def _write_one(self, conn: sqlite3.Connection, append: EncodedAppend) -> int | BaseException:
        """One append of several, in a savepoint: refused, it takes nothing else with it."""
        conn.execute("SAVEPOINT one_append")
        try:
            return self._write(conn, append)
        except Exception as exc:
            conn.execute("ROLLBACK TO one_append")
            return self._guard(exc)
        finally:
            conn.execute("RELEASE one_append")


def _answer(waiting: list[asyncio.Future[int]], outcomes: list[int | BaseException]) -> None:
    for done, outcome in zip(waiting, outcomes, strict=True):
        if done.cancelled():
            continue
        if isinstance(outcome, BaseException):
            done.set_exception(outcome)
        else:
            done.set_result(outcome)
