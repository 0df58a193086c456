"""One live writer per session: the leases a session store hands out.

Two tables. ``holders`` has a row per live store object: a token unique to it, its pid and host, and
when its claim lapses unless renewed. ``leases`` maps each session to the token of the store that opened
it last. A session is held while its holder's row is in force; so a :class:`Heartbeat` renews one row
per store every few seconds, whatever the number of sessions it holds. A holder that stops (a crash,
``kill -9``) stops renewing, and all its sessions come free by themselves; on the same host a dead pid
frees them at once. Closing a store deletes its holder row: its sessions are free at once.

Every write checks, in its own transaction, that the session's lease still names this store, so a
holder whose session was taken over is refused instead of interleaving its turns with the new holder's.
Ownership is the lease row, not the clock: a holder whose claim lapsed (the process was suspended) keeps
writing for as long as nobody else opened the session. Lapsing only lets another process open it.

The functions here run on the store's thread, inside a transaction the store opened.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from handoffs_runtime.errors import SessionBusyError, SessionTakenOverError

LEASE_SECONDS = 10.0
"""How long a claim lasts without renewal; a crashed holder on another host blocks a session this long."""

SCHEMA = """
CREATE TABLE holders (
    token TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE leases (
    session_id TEXT PRIMARY KEY,
    token TEXT NOT NULL
) WITHOUT ROWID;
"""
"""The tables, as a store migration creates them."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lease: one store object (``token``) in a process (``pid``) on a machine (``host``)."""

    token: str
    pid: int
    host: str

    @classmethod
    def here(cls) -> Holder:
        """A new holder for a store object of this process."""
        return cls(uuid.uuid4().hex, os.getpid(), socket.gethostname())

    def __str__(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    def is_gone(self) -> bool:
        """True only when the holder certainly stopped: it ran on this host and its pid is dead."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive, but another user's
            return False
        return False


def claim(
    conn: sqlite3.Connection, session_id: str, me: Holder, *, take_over: bool, seconds: float
) -> Holder | None:
    """Make ``me`` the session's holder; returns the live holder that was taken over, if any.

    Raises :class:`SessionBusyError` when another holder is alive and ``take_over`` is false.
    """
    other = live_holder(conn, session_id, me)
    if other is not None and not take_over:
        raise busy(session_id, other)
    renew(conn, me, seconds)
    conn.execute(
        "INSERT INTO leases (session_id, token) VALUES (?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET token = excluded.token",
        (session_id, me.token),
    )
    return other


def live_holder(conn: sqlite3.Connection, session_id: str, me: Holder) -> Holder | None:
    """The session's holder if it is someone else whose claim is in force, else ``None``.

    A holder found dead or lapsed is forgotten on the way (its other sessions are free either way).
    """
    row = conn.execute(
        "SELECT h.token, h.pid, h.host, h.expires_at FROM leases AS l JOIN holders AS h ON h.token = l.token "
        "WHERE l.session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None or row[0] == me.token:
        return None
    other = Holder(row[0], row[1], row[2])
    if row[3] > time.time() and not other.is_gone():
        return other
    conn.execute("DELETE FROM holders WHERE token = ?", (other.token,))
    return None


def check(conn: sqlite3.Connection, session_id: str, me: Holder) -> None:
    """Refuse a write by anyone but the session's holder (inside the write's transaction)."""
    row = conn.execute(
        "SELECT l.token, h.pid, h.host FROM leases AS l LEFT JOIN holders AS h ON h.token = l.token "
        "WHERE l.session_id = ?",
        (session_id,),
    ).fetchone()
    refuse_unless_held(row, session_id, me)


def busy(session_id: str, other: Holder) -> SessionBusyError:
    """What a claim of a session that ``other`` holds, alive, raises without ``take_over``."""
    return SessionBusyError(
        f"session {session_id!r} is open in another process ({other}); end the chat there, or "
        "take the session over with --take-over (take_over=True in code), which stops that "
        "process from writing to it"
    )


def refuse_unless_held(row: Sequence[Any] | None, session_id: str, me: Holder) -> None:
    """Refuse a write unless the session's lease names ``me``: ``row`` is the lease's token and its
    holder's pid and host (``None`` for a holder gone since), or ``None`` when the session has no lease."""
    if row is None:
        raise SessionTakenOverError(
            f"session {session_id!r} was not opened by this store; open it before writing to it"
        )
    if row[0] != me.token:
        who = str(Holder(*row)) if row[1] is not None else "another process that has stopped since"
        raise SessionTakenOverError(
            f"session {session_id!r} is held by {who} now, not by this store (it was taken over, "
            "or never opened here); nothing was written, and this process stops writing to it"
        )


def release(conn: sqlite3.Connection, me: Holder, session_id: str) -> None:
    """Let go of one session (it ended); nobody else's claim is touched."""
    conn.execute("DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, me.token))


def release_all(conn: sqlite3.Connection, me: Holder) -> None:
    """Let go of every session ``me`` holds, in one statement (the store is closing)."""
    conn.execute("DELETE FROM holders WHERE token = ?", (me.token,))


def forget(conn: sqlite3.Connection, session_id: str) -> None:
    """Drop the session's lease with the session itself."""
    conn.execute("DELETE FROM leases WHERE session_id = ?", (session_id,))


def renew(conn: sqlite3.Connection, me: Holder, seconds: float) -> None:
    """Keep every session ``me`` holds for ``seconds`` more: one row, however many sessions."""
    conn.execute(
        "INSERT INTO holders (token, pid, host, expires_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (token) DO UPDATE SET expires_at = excluded.expires_at",
        (me.token, me.pid, me.host, time.time() + seconds),
    )


class Heartbeat:
    """A daemon thread that calls ``beat`` every ``interval`` seconds until :meth:`stop`.

    ``beat`` must not wait for anything that :meth:`stop`'s caller could be holding (the store hands its
    renewal to its own thread and returns at once).
    """

    def __init__(self, beat: Callable[[], None], interval: float) -> None:
        self._beat = beat
        self._interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and not self._stopped.is_set():
            self._thread = threading.Thread(target=self._run, name="handoffs-store-lease", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                self._beat()
            except RuntimeError:  # the interpreter is shutting down: nothing left to renew for
                return
            except Exception:  # never let a renewal end the thread; the next one may succeed
                _log.warning("renewing session leases failed", exc_info=True)
