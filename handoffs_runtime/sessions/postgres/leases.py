"""One live writer per session on PostgreSQL, timed by the database's clock.

The leases of :mod:`handoffs_runtime.sessions.leases`, with expiry decided by ``now()``.

The rules are the SQLite store's (see that module): a ``holders`` row per store object that its heartbeat
renews, a ``leases`` row per session naming the holder, a write refused unless the lease names the writer.
What changes with several machines is whose clock decides: here every expiry is ``now() + interval`` and
every comparison is with ``now()``, both the database's, so a front end whose clock is an hour off neither
keeps a dead claim alive for an hour nor lets another take a live one.

Races between machines are settled by row locks: a claim locks the session's lease row (``FOR UPDATE``) and
a write locks it for sharing (``FOR SHARE``), so a take-over and a write of the old holder are ordered,
never interleaved. The functions here run inside a transaction the store opened.
"""

from __future__ import annotations

from psycopg import Connection
from psycopg.rows import TupleRow

from handoffs_runtime.sessions.leases import Holder, busy, refuse_unless_held

Conn = Connection[TupleRow]


def claim(conn: Conn, session_id: str, me: Holder, *, take_over: bool, seconds: float) -> Holder | None:
    """Make ``me`` the session's holder; returns the live holder that was taken over, if any.

    Raises :class:`SessionBusyError` when another holder is alive and ``take_over`` is false.
    """
    renew(conn, me, seconds)
    cursor = conn.execute(
        "INSERT INTO leases (session_id, token) VALUES (%s, %s) ON CONFLICT (session_id) DO NOTHING",
        (session_id, me.token),
    )
    if cursor.rowcount == 1:  # nobody held it: ours, and the insert's lock keeps it so until commit
        return None
    other = live_holder(conn, session_id, me, lock=True)
    if other is not None and not take_over:
        raise busy(session_id, other)
    conn.execute("UPDATE leases SET token = %s WHERE session_id = %s", (me.token, session_id))
    return other


def live_holder(conn: Conn, session_id: str, me: Holder, *, lock: bool = False) -> Holder | None:
    """The session's holder if it is someone else whose claim is in force by the database's clock.

    ``lock`` locks the lease row until the transaction ends (a claim about to change it). A holder found
    dead or lapsed is forgotten on the way (its other sessions are free either way).
    """
    cursor = conn.execute(
        "SELECT l.token, h.pid, h.host, h.expires_at > now() FROM leases AS l "
        "LEFT JOIN holders AS h ON h.token = l.token WHERE l.session_id = %s"
        + (" FOR UPDATE OF l" if lock else ""),
        (session_id,),
    )
    row = cursor.fetchone()
    if row is None or row[0] == me.token or row[1] is None:
        return None
    other = Holder(row[0], row[1], row[2])
    if row[3] and not other.is_gone():
        return other
    conn.execute("DELETE FROM holders WHERE token = %s", (other.token,))
    return None


def check(conn: Conn, session_id: str, me: Holder, *, opened: bool = False) -> None:
    """Refuse a write by anyone but the session's holder; the lease stays as it is until the write ends.
    ``opened``: this store did open the session (see ``leases.refuse_unless_held``)."""
    cursor = conn.execute(
        "SELECT l.token, h.pid, h.host FROM leases AS l LEFT JOIN holders AS h ON h.token = l.token "
        "WHERE l.session_id = %s FOR SHARE OF l",
        (session_id,),
    )
    refuse_unless_held(cursor.fetchone(), session_id, me, opened=opened)


def holds(conn: Conn, session_id: str, me: Holder) -> bool:
    cursor = conn.execute("SELECT token FROM leases WHERE session_id = %s", (session_id,))
    row = cursor.fetchone()
    return row is not None and row[0] == me.token


def release(conn: Conn, me: Holder, session_id: str) -> None:
    """Let go of one session (it ended); nobody else's claim is touched."""
    conn.execute("DELETE FROM leases WHERE session_id = %s AND token = %s", (session_id, me.token))


def release_all(conn: Conn, me: Holder) -> None:
    """Let go of every session ``me`` holds at once (the store is closing)."""
    conn.execute("DELETE FROM holders WHERE token = %s", (me.token,))


def forget(conn: Conn, session_id: str) -> None:
    conn.execute("DELETE FROM leases WHERE session_id = %s", (session_id,))


def renew(conn: Conn, me: Holder, seconds: float) -> None:
    """Keep every session ``me`` holds for ``seconds`` more on the database's clock: one row."""
    conn.execute(
        "INSERT INTO holders (token, pid, host, expires_at) "
        "VALUES (%s, %s, %s, now() + make_interval(secs => %s)) "
        "ON CONFLICT (token) DO UPDATE SET expires_at = excluded.expires_at",
        (me.token, me.pid, me.host, seconds),
    )
