"""The PostgreSQL store's tables, in a schema of their own, and the migrations that update them.

Several front ends may start at once against a new database: the first takes a transaction-scoped
advisory lock, migrates, and commits; the others wait on the lock and then find nothing left to do. So
every migration runs once, whole or not at all (PostgreSQL's DDL is transactional).

The tables mirror the SQLite store's, with two differences that come from sharing one database between
machines: lease expiry is a ``timestamptz`` compared with the database's ``now()``, never a host's clock;
and each appended entry carries the id of the write that added it, so a write retried after a lost
connection can tell whether it had already committed (and is not stored twice).
"""

from __future__ import annotations

import re

from psycopg import Connection, sql
from psycopg.rows import TupleRow

from handoffs_runtime.errors import StoreError
from handoffs_runtime.sessions.postgres import effects

DEFAULT_SCHEMA = "handoffs"

_V1 = """
CREATE TABLE schema_version (version integer NOT NULL);
INSERT INTO schema_version (version) VALUES (0);
CREATE TABLE sessions (
    id text PRIMARY KEY,
    active_agent text NOT NULL,
    context text NOT NULL DEFAULT '[]',
    context_seq bigint NOT NULL DEFAULT 0,
    last_seq bigint NOT NULL DEFAULT 0,
    status text NOT NULL DEFAULT 'open',
    team text NOT NULL DEFAULT '',
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX sessions_by_update ON sessions (updated_at);
CREATE TABLE messages (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    agent text NOT NULL,
    kind text NOT NULL,
    body text NOT NULL,
    created_at double precision NOT NULL,
    write_id text,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE holders (
    token text PRIMARY KEY,
    pid integer NOT NULL,
    host text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE TABLE leases (
    session_id text PRIMARY KEY,
    token text NOT NULL
);
CREATE TABLE secrets (
    name text PRIMARY KEY,
    value bytea NOT NULL
)
"""

_V2 = """
CREATE TABLE operator_waits (
    session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    prompt text NOT NULL,
    since double precision NOT NULL,
    taken_by text
)
"""
"""Which session waits for an operator and who took it, shared by every web server."""

_V3 = effects.SCHEMA
"""The effect ledger: an irreversible tool's intent and outcome."""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)
"""``MIGRATIONS[n]`` takes a schema from version ``n`` to ``n + 1``; never edit one, append a new one."""

SCHEMA_VERSION = len(MIGRATIONS)

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def check_schema_name(schema: str) -> str:
    """A schema name the store can use as it is (lower case, so PostgreSQL never folds it)."""
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValueError(
            f"schema must be 1 to 63 lower-case letters, digits or underscores, not starting with a digit; "
            f"got {schema!r}"
        )
    return schema


def migrate(conn: Connection[TupleRow], schema: str, where: str) -> None:
    """Bring ``schema`` to :data:`SCHEMA_VERSION`, once, under a lock; refuse a foreign or newer schema."""
    name = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"handoffs-runtime schema {schema}",))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        cursor = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )
        tables = {str(row[0]) for row in cursor.fetchall()}
        version = 0
        if tables and "schema_version" not in tables:
            raise StoreError(
                f"{where}: schema {schema!r} holds other tables ({', '.join(sorted(tables)[:5])}), not a "
                "session store; choose another schema. Nothing was changed."
            )
        if tables:
            cursor = conn.execute(sql.SQL("SELECT version FROM {}.schema_version").format(name))
            rows = cursor.fetchall()
            if len(rows) != 1 or not isinstance(rows[0][0], int):
                raise StoreError(
                    f"{where}: the schema version in {schema!r} should be one whole number; it holds "
                    f"{len(rows)} rows. Nothing was changed."
                )
            version = rows[0][0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{where} was written by a newer handoffs-runtime (schema {version}; this version reads up "
                f"to {SCHEMA_VERSION}); upgrade handoffs-runtime on every front end. Nothing was changed."
            )
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(name))
        for step in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[step].split(";"):
                if statement.strip():
                    conn.execute(statement.strip().encode())
        if version < SCHEMA_VERSION:
            conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))


def check_readable(conn: Connection[TupleRow], schema: str, where: str) -> None:
    """Refuse a read-only store on a schema nothing was ever stored in, in words."""
    cursor = conn.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'schema_version'",
        (schema,),
    )
    if cursor.fetchone() is None:
        raise StoreError(f"{where} is empty: nothing has been stored there yet (schema {schema!r})")
