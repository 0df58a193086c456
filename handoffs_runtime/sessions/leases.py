"""One live writer per session: the leases a session store hands out.

Two tables. ``holders`` has a row per live store object: a token unique to it, its pid and host, and
when its claim lapses unless renewed. ``leases`` maps each session to the token of the store that opened
it last. A session is held while its holder's row is in force; so a heartbeat renews one row
per store every few seconds, whatever the number of sessions it holds. A holder that stops (a crash,
``kill -9``) stops renewing, and all its sessions come free by themselves; on the same host a dead pid
frees them at once. Closing a store deletes its holder row: its sessions are free at once.

Every write checks, in its own transaction, that the session's lease still names this store, so a
holder whose session was taken over is refused instead of interleaving its turns with the new holder's.
Ownership is the lease row, not the clock: a holder whose claim lapsed (the process was suspended) keeps
writing for as long as nobody else opened the session. Lapsing only lets another process open it.

Each backend keeps these rules with its own clock and locks (``sqlite/leases.py``,
``postgres/leases.py``); what they share is here: who a holder is, and how a refused write is worded.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from handoffs_runtime.errors import SessionBusyError, SessionTakenOverError

_log = logging.getLogger(__name__)

LEASE_SECONDS = 10.0
"""How long a claim lasts without renewal; a crashed holder on another host blocks a session this long."""


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


NOTHING_WRITTEN = "; nothing was written"
"""How a refused write ends its message (a person is told what happened, not this)."""


def busy(session_id: str, other: Holder) -> SessionBusyError:
    """What a claim of a session that ``other`` holds, alive, raises without ``take_over``."""
    return SessionBusyError(
        f"session {session_id!r} is open in another process ({other}); end the chat there, or "
        "take the session over with --take-over (take_over=True in code), which stops that "
        "process from writing to it"
    )


def refuse_unless_held(row: Sequence[Any] | None, session_id: str, me: Holder, *, opened: bool) -> None:
    """Refuse a write unless the session's lease names ``me``: ``row`` is the lease's token and its
    holder's pid and host (``None`` for a holder gone since), or ``None`` when the session has no lease.
    ``opened``: this store did open the session, so a lease gone or someone else's means it was taken
    over. Every store words the refusal so."""
    if row is not None and row[0] == me.token:
        return
    if row is None and not opened:
        raise SessionTakenOverError(
            f"session {session_id!r} was not opened by this store; open it before writing to it"
        )
    if row is None:
        raise SessionTakenOverError(
            f"session {session_id!r} was taken over by another process, which has let go of it since"
            + NOTHING_WRITTEN
        )
    token, pid, host = row
    who = str(Holder(token, pid, host or "")) if pid is not None else "another process that has stopped since"
    if not opened:
        raise SessionTakenOverError(
            f"session {session_id!r} is held by {who}, not by this store (it was never opened here)"
            + NOTHING_WRITTEN
        )
    raise SessionTakenOverError(f"session {session_id!r} was taken over by {who}{NOTHING_WRITTEN}")


class Heartbeat:
    """A daemon thread that calls ``beat`` every ``interval`` seconds until :meth:`stop`.

    ``beat`` must not wait for anything that :meth:`stop`'s caller could be holding (each store hands its
    renewal to its own threads and returns at once).
    """

    def __init__(self, beat: Callable[[], None], interval: float) -> None:
        self._beat = beat
        self._interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def start(self) -> None:
        """Start beating, once (from any thread: the PostgreSQL store's workers may race here)."""
        if self._thread is not None:
            return
        with self._starting:
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
