"""The PostgreSQL store's calls, carried to its worker threads and back, bounded by ``HUNG_SECONDS``.

Each worker thread holds one connection and runs a call's statements with psycopg's blocking API, whose
waiting is C; the caller's loop waits for the answer (one hop each way, as on the SQLite store's thread).
Why not psycopg's asynchronous connection on a loop of the store's own: each round trip then cost its
waiting in Python (a reader added and removed, a future, a timer) and a crossing of two loops, four times
what a blocking round trip and the hop cost together.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import psycopg

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
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    timed_out = ("55P03", "57014")  # lock_timeout, statement_timeout: the database is stuck, not wrong
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03", *timed_out)


def _hung(done: asyncio.Future[Any]) -> None:
    if not done.done():
        done.set_exception(Outage(f"no answer within {HUNG_SECONDS:g} s"))


async def bounded(done: asyncio.Future[T]) -> T:
    """The outcome of a call queued for the workers (``done``); an outage when the database has not
    answered within ``HUNG_SECONDS``.

    A caller cancelled (a server stopping) leaves its statement to finish on its worker, never cut
    mid-protocol; a hung call is given up here, and its worker goes on when the database answers (or its
    connection breaks), its connection then as good as before.
    """
    timer = asyncio.get_running_loop().call_later(HUNG_SECONDS, _hung, done)
    try:
        return await done
    finally:
        timer.cancel()
