"""The SQLite store's schema: its tables, the migrations between versions, and the version check.

A store file says which schema it holds; one written by a newer release, another program or damaged is
refused before anything is written, and left as it was.
"""

from __future__ import annotations

import sqlite3

from handoffs_runtime.errors import StoreError
from handoffs_runtime.sessions.sqlite import effects, leases

_V1 = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    active_agent TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '[]',
    context_seq INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'open',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
INSERT INTO schema_version (version) VALUES (0);
"""

_V2 = """
ALTER TABLE sessions ADD COLUMN team TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_by_update ON sessions (updated_at);
"""

_V3 = leases.SCHEMA

_V4 = """
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE operator_waits (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    prompt TEXT NOT NULL,
    since REAL NOT NULL,
    taken_by TEXT
) WITHOUT ROWID;
"""
"""What a web server needs to resume any session: the key secret, and who waits for an operator."""

_V5 = effects.SCHEMA
"""The effect ledger: an irreversible tool's intent and outcome."""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5)
"""``MIGRATIONS[n]`` takes a store from schema ``n`` to ``n + 1``; never edit one, append a new one."""

SCHEMA_VERSION = len(MIGRATIONS)

READABLE_FROM = 2
"""The oldest schema that the reading SQL understands as it is (a read-only store cannot be migrated)."""


def schema_version(conn: sqlite3.Connection, where: str) -> int:
    """The file's schema version (0 for an empty file); refuse a foreign, damaged or newer file."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return 0
    if "schema_version" not in tables:
        raise StoreError(
            f"{where} is an SQLite file but not a session store (it has tables {sorted(tables)}); "
            "choose another --store path"
        )
    rows = conn.execute("SELECT version FROM schema_version").fetchall()
    if len(rows) != 1 or type(rows[0][0]) is not int:
        found = "no row" if not rows else ", ".join(repr(r[0]) for r in rows[:3])
        raise StoreError(
            f"{where} is damaged: its schema version should be one whole number, but it holds {found}; "
            "move the file away or choose another --store path. It was left as is."
        )
    version: int = rows[0][0]
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} was written by a newer handoffs-runtime (schema {version}; this version reads up to "
            f"{SCHEMA_VERSION}); upgrade handoffs-runtime, or choose another --store path. "
            "The file was left as is."
        )
    return version


def migrate(conn: sqlite3.Connection, where: str) -> None:
    """Bring a store to :data:`SCHEMA_VERSION` in the open transaction; refuse a newer or foreign file."""
    version = schema_version(conn, where)
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step].split(";"):
            if statement.strip():
                conn.execute(statement)
    # Also a write probe: a read-only, full or otherwise unwritable store fails here, before a chat starts.
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
