"""The stores' threads: calls queued from any loop, run on a thread, answered on the loop that asked.

The SQLite store has one thread (one writer per file); the PostgreSQL store several, one connection each,
taking calls from the same queue.

Why not a ``ThreadPoolExecutor`` and ``asyncio.wrap_future``: each call through them builds a
``concurrent.futures.Future`` (a condition and its lock), a work item, and a second future chained to the
first both ways; that bookkeeping cost about as much as the SQL of a turn. Here a call is one tuple on a
``SimpleQueue`` and one ``call_soon_threadsafe`` back, and the loop's future is the only future.

The thread is a daemon, so a store nobody closed does not keep the interpreter from exiting; what it had
not committed by then was not acknowledged either (a kill loses the same).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
_log = logging.getLogger(__name__)

_Job = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.AbstractEventLoop | None", Any]
"""A function, its arguments, the loop to answer on (None: answer a ``concurrent.futures.Future``, or
nobody) and the future to answer."""


class StoreThread:
    """Threads (one unless ``workers`` says more) that run the store's calls in the order they were
    queued: with one thread, each call after the one before it."""

    __slots__ = ("_jobs", "_stopped", "_threads")

    def __init__(self, name: str, workers: int = 1) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._stopped = False
        self._threads = [threading.Thread(target=self._serve, name=name, daemon=True) for _ in range(workers)]
        for thread in self._threads:
            thread.start()

    def call(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``fn(*args)`` on the thread; the returned future (of the running loop) gets its outcome.
        A call whose future was cancelled before the thread reached it is not run."""
        if self._stopped:  # nobody would answer it
            raise RuntimeError("the session store's thread has stopped")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._jobs.put((fn, args, loop, done))
        return done

    def wait(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the thread and wait for it here (code without an event loop)."""
        if self._stopped:
            raise RuntimeError("the session store's thread has stopped")
        done: Future[T] = Future()
        self._jobs.put((fn, args, None, done))
        return done.result()

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the thread without waiting; it reports its own outcome."""
        if self._stopped:
            raise RuntimeError("the session store's thread has stopped")
        self._jobs.put((fn, args, None, None))

    def stop(self, timeout: float | None = None) -> bool:
        """Run what is queued, then end the threads and wait for them (``timeout`` seconds at most, for
        all of them); whether they all ended."""
        self._stopped = True
        for _ in self._threads:
            self._jobs.put(None)
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads if t is not threading.current_thread())

    def _serve(self) -> None:
        get = self._jobs.get
        while (job := get()) is not None:
            fn, args, loop, done = job
            if loop is not None:
                if done.cancelled():  # read across threads: at worst a cancelled call still runs
                    continue
                try:
                    result = fn(*args)
                except BaseException as exc:
                    answer_soon(loop, done, None, exc)
                else:
                    answer_soon(loop, done, result, None)
            elif done is not None:
                if done.set_running_or_notify_cancel():
                    try:
                        done.set_result(fn(*args))
                    except BaseException as exc:
                        done.set_exception(exc)
            else:
                try:
                    fn(*args)
                except Exception:  # the thread serves every later call: it must not end here
                    _log.warning("a session store call failed on the store's thread", exc_info=True)


def answer_soon(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    """From the thread: give ``done`` its ``result`` (or ``error``) on its loop, unless it is given up."""
    try:  # noqa: SIM105 (a plain try costs nothing on the way that is taken)
        loop.call_soon_threadsafe(_answer, done, result, error)
    except RuntimeError:  # the loop was closed: nobody is waiting for the answer any more
        pass


def _answer(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():  # cancelled, or given up on (see ``postgres.crossing.bounded``)
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
