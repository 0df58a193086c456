"""The PostgreSQL store's calls, carried from the caller's loop to the store's own loop and back.

The store runs its pool on a thread and loop of its own (see
:mod:`~handoffs_runtime.sessions.postgres.store`); each call crosses there and its outcome crosses back,
bounded by ``HUNG_SECONDS`` on the caller's side.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

import psycopg
from psycopg_pool import PoolTimeout

T = TypeVar("T")

STATEMENT_SECONDS = 5.0
"""The longest one statement runs on the server (``statement_timeout``) before it counts as an outage."""
LOCK_SECONDS = 3.0
"""The longest one statement waits for a lock another client holds (``lock_timeout``)."""
HUNG_SECONDS = 2 * STATEMENT_SECONDS
"""The longest one call waits for an answer at all: a server that hangs enforces no timeout of its own."""


class Outage(Exception):
    """The database could not be reached for one attempt; the caller's side decides whether to retry."""


def is_outage(exc: BaseException) -> bool:
    """A lost or refused connection, or a server shutting down: worth waiting for, unlike a bad query."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    timed_out = ("55P03", "57014")  # lock_timeout, statement_timeout: the database is stuck, not wrong
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03", *timed_out)


class _Carried:
    """One call carried to the store's loop, and its outcome carried back to the loop that made it.

    Why not ``run_coroutine_threadsafe``, ``wrap_future``, ``shield`` and ``wait_for``: together they
    build four futures per call beside its task, and cost more than the statement. This is one object, one
    hop each way, and a timer on the caller's side.
    """

    __slots__ = ("caller", "done", "task")

    def __init__(self, caller: asyncio.AbstractEventLoop) -> None:
        self.caller = caller
        self.done: asyncio.Future[Any] = caller.create_future()
        self.task: asyncio.Task[Any] | None = None

    def start(self, coro: Coroutine[Any, Any, Any]) -> None:
        """On the store's loop: run ``coro`` there, unless its caller stopped waiting already."""
        if self.done.done():  # read across threads: at worst a call nobody waits for still runs
            coro.close()
            return
        self.task = task = asyncio.get_running_loop().create_task(coro)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        """On the store's loop: hand the outcome to the caller's loop."""
        result: Any = None
        error: BaseException | None
        if task.cancelled():
            error = Outage(f"no answer within {HUNG_SECONDS:g} s")
        else:
            error = task.exception()
            if error is None:
                result = task.result()
        try:  # noqa: SIM105 (a plain try costs nothing on the way that is taken)
            self.caller.call_soon_threadsafe(self._answer, result, error)
        except RuntimeError:  # the caller's loop is closed: nobody waits for the answer
            pass

    def _answer(self, result: Any, error: BaseException | None) -> None:
        if self.done.done():  # the caller was cancelled, or gave up on a hung call
            return
        if error is not None:
            self.done.set_exception(error)
        else:
            self.done.set_result(result)

    def hung(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the caller's loop, after ``HUNG_SECONDS``: give up, and cut the call on the store's loop
        (its connection is not reused)."""
        if self.done.done():
            return
        self.done.set_exception(Outage(f"no answer within {HUNG_SECONDS:g} s"))
        task = self.task
        if task is not None:
            with contextlib.suppress(RuntimeError):  # the store's loop is closed: nothing to cut
                loop.call_soon_threadsafe(task.cancel)


async def across(store_loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """``coro``'s outcome, run on the store's loop; an outage when the database has not answered
    within ``HUNG_SECONDS``.

    A caller cancelled (a server stopping) leaves its statement to finish on the store's loop, never
    cut mid-protocol on a connection the pool would then reuse; only a hung call is cut.
    """
    caller = asyncio.get_running_loop()
    carried = _Carried(caller)
    store_loop.call_soon_threadsafe(carried.start, coro)
    timer = caller.call_later(HUNG_SECONDS, carried.hung, store_loop)
    try:
        result: T = await carried.done
        return result
    finally:
        timer.cancel()
