"""The SQLite store's one thread: calls queued from any event loop, answered on the loop that asked.

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
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
_log = logging.getLogger(__name__)

_Job = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.AbstractEventLoop | None", Any]
"""A function, its arguments, the loop to answer on (None: answer a ``concurrent.futures.Future``, or
nobody) and the future to answer."""


class StoreThread:
    """One thread that runs the store's calls in the order they were queued."""

    __slots__ = ("_jobs", "_stopped", "_thread")

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

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

    def stop(self) -> None:
        """Run what is queued, then end the thread and wait for it."""
        self._stopped = True
        self._jobs.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join()

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
                    _answer_soon(loop, done, None, exc)
                else:
                    _answer_soon(loop, done, result, None)
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


def _answer_soon(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    try:  # noqa: SIM105 (a plain try costs nothing on the way that is taken)
        loop.call_soon_threadsafe(_answer, done, result, error)
    except RuntimeError:  # the loop was closed: nobody is waiting for the answer any more
        pass


def _answer(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
