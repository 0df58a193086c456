"""Opening SQLite connections, and every SQLite error as one ``StoreError`` line that says what to do."""

from __future__ import annotations

import sqlite3

from handoffs_runtime.errors import StoreError


def connect(target: str, where: str, timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    try:
        return sqlite3.connect(
            target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
        )
    except sqlite3.Error as exc:
        raise store_error(where, exc) from exc


def roll_back(conn: sqlite3.Connection) -> None:
    """End a failed transaction; if even that fails, the error that led here is the one to report."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def close_failed(conn: sqlite3.Connection) -> None:
    """Close a connection that failed while being set up, whatever state it is in."""
    roll_back(conn)
    conn.close()


def error_code(exc: sqlite3.Error) -> str:
    """SQLite's name for the error, such as ``SQLITE_READONLY_DIRECTORY`` (empty when unknown)."""
    return str(getattr(exc, "sqlite_errorname", "") or "")


def store_error(where: str, exc: sqlite3.Error) -> StoreError:
    """One line that says what is wrong with the store and what to do, for any SQLite error."""
    text = str(exc)
    code = error_code(exc)
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return StoreError(
            f"{where} is locked by another process; wait for it to finish, or choose another --store path"
        )
    damaged = "not a database" in text or "malformed" in text
    if code.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or damaged:
        return StoreError(
            f"{where} is not a readable session store ({text}); move the file away or choose another "
            "--store path. It was left as is."
        )
    if code.startswith("SQLITE_READONLY"):
        return StoreError(
            f"{where} cannot be written ({text}): the file or its folder is read-only. "
            "`handoffs sessions list|show|export` can still read it; to chat, choose another --store path"
        )
    if code == "SQLITE_FULL":
        return StoreError(f"{where} cannot grow: the disk is full ({text}); what was stored before is kept")
    if code.startswith("SQLITE_IOERR"):
        return StoreError(
            f"{where}: input/output error ({code}: {text}); the disk may be full, failing or over a "
            "file-size limit. What was stored before is kept."
        )
    if code.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return StoreError(f"cannot open {where} ({text}); check that it and its folder can be read")
    return StoreError(f"{where}: {text}")
