"""One live writer per session on SQLite: the lease tables, and the SQL that claims, checks and renews.

The rules are those of :mod:`handoffs_runtime.sessions.leases`; here a holder's expiry is this host's
clock, which is right for a file that only this host's processes open. The functions run on the store's
thread, inside a transaction the store opened.
"""

from __future__ import annotations

import sqlite3
import time

from handoffs_runtime.sessions.leases import Holder, busy, refuse_unless_held

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


def claim(
    conn: sqlite3.Connection,
    session_id: str,
    me: Holder,
    *,
    take_over: bool,
    seconds: float,
    renew: bool = True,
) -> Holder | None:
    """Make ``me`` the session's holder; returns the live holder that was taken over, if any.

    Raises :class:`SessionBusyError` when another holder is alive and ``take_over`` is false. ``renew``
    false: ``me``'s holder row was renewed a moment ago, so it is left as it is.
    """
    if renew:
        renew_holder(conn, me, seconds)
    cursor = conn.execute(
        "INSERT INTO leases (session_id, token) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING",
        (session_id, me.token),
    )
    if cursor.rowcount == 1:  # nobody held it (a new session, or one let go of): ours
        return None
    other = live_holder(conn, session_id, me)
    if other is not None and not take_over:
        raise busy(session_id, other)
    conn.execute("UPDATE leases SET token = ? WHERE session_id = ?", (me.token, session_id))
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


def check(conn: sqlite3.Connection, session_id: str, me: Holder, *, opened: bool = False) -> None:
    """Refuse a write by anyone but the session's holder (inside the write's transaction). ``opened``: this
    store did open the session, so a claim that is gone or someone else's was taken over."""
    row = conn.execute(
        "SELECT l.token, h.pid, h.host FROM leases AS l LEFT JOIN holders AS h ON h.token = l.token "
        "WHERE l.session_id = ?",
        (session_id,),
    ).fetchone()
    refuse_unless_held(row, session_id, me, opened=opened)


def release_all(conn: sqlite3.Connection, me: Holder) -> None:
    """Let go of every session ``me`` holds, in one statement (the store is closing)."""
    conn.execute("DELETE FROM holders WHERE token = ?", (me.token,))


def forget(conn: sqlite3.Connection, session_id: str) -> None:
    """Drop the session's lease with the session itself."""
    conn.execute("DELETE FROM leases WHERE session_id = ?", (session_id,))


def renew_holder(conn: sqlite3.Connection, me: Holder, seconds: float) -> None:
    """Keep every session ``me`` holds for ``seconds`` more: one row, however many sessions."""
    conn.execute(
        "INSERT INTO holders (token, pid, host, expires_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (token) DO UPDATE SET expires_at = excluded.expires_at",
        (me.token, me.pid, me.host, time.time() + seconds),
    )
