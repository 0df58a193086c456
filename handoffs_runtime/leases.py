"""One live writer per session: the leases a session store hands out.

A store object that opens a session claims the session's lease: a row naming the holder (a token unique
to that store object, with its pid and host) and when the claim expires. Every write checks that row in
its own transaction, so a holder whose session was taken over is refused instead of interleaving its
turns with the new holder's. A :class:`Heartbeat` renews all of a store's leases in one statement every
few seconds; a holder that stops (a crash, ``kill -9``) stops renewing, and its lease expires by itself.
On the same host a dead pid frees the lease at once.

Ownership is the row, not the clock: a holder whose lease ran out (the process was suspended) keeps
writing for as long as nobody else claimed the session. Expiry only lets another process claim it.

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
from collections.abc import Callable
from dataclasses import dataclass

from .errors import SessionBusyError, SessionTakenOverError

LEASE_SECONDS = 10.0
"""How long a claim lasts without renewal; a crashed holder on another host blocks a session this long."""

RELEASED = 0.0
"""``expires_at`` of a lease its holder let go (the session ended, or the store was closed)."""

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
        raise SessionBusyError(
            f"session {session_id!r} is open in another process ({other}); end the chat there, or "
            "take the session over with --take-over (take_over=True in code), which stops that "
            "process from writing to it"
        )
    conn.execute(
        "INSERT INTO leases (session_id, token, pid, host, expires_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET token = excluded.token, pid = excluded.pid, "
        "host = excluded.host, expires_at = excluded.expires_at",
        (session_id, me.token, me.pid, me.host, time.time() + seconds),
    )
    return other


def live_holder(conn: sqlite3.Connection, session_id: str, me: Holder) -> Holder | None:
    """The session's holder if it is someone else whose lease is in force, else ``None``."""
    row = conn.execute(
        "SELECT token, pid, host, expires_at FROM leases WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None or row[0] == me.token:
        return None
    other = Holder(row[0], row[1], row[2])
    return other if row[3] > time.time() and not other.is_gone() else None


def check(conn: sqlite3.Connection, session_id: str, me: Holder) -> None:
    """Refuse a write by anyone but the session's holder (inside the write's transaction)."""
    row = conn.execute("SELECT token, pid, host FROM leases WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionTakenOverError(
            f"session {session_id!r} was not opened by this store; open it before writing to it"
        )
    if row[0] != me.token:
        raise SessionTakenOverError(
            f"session {session_id!r} is held by {Holder(*row)} now, not by this store (it was taken over, "
            "or never opened here); nothing was written, and this process stops writing to it"
        )


def release(conn: sqlite3.Connection, me: Holder, session_id: str | None = None) -> None:
    """Let go of one session's lease, or of all of ``me``'s; the row keeps naming the last holder."""
    if session_id is None:
        conn.execute("UPDATE leases SET expires_at = ? WHERE token = ?", (RELEASED, me.token))
    else:
        conn.execute(
            "UPDATE leases SET expires_at = ? WHERE session_id = ? AND token = ?",
            (RELEASED, session_id, me.token),
        )


def renew(conn: sqlite3.Connection, me: Holder, seconds: float) -> None:
    """Push back the expiry of every lease ``me`` holds and has not released: one statement."""
    conn.execute(
        "UPDATE leases SET expires_at = ? WHERE token = ? AND expires_at > ?",
        (time.time() + seconds, me.token, RELEASED),
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
