"""Both session stores behind one face, so one suite of behaviour runs on SQLite and on PostgreSQL.

A :class:`Backend` makes store objects on one database (each one is "another process" as far as the
database can tell) and reaches under the store for the few tests that must leave a row as a crashed or
scribbling process would.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore

from .postgres_support import PostgresServer, fresh_schema

Store = SQLiteSessionStore | PostgresSessionStore


class Backend:
    name = ""

    def make(self, **options: Any) -> Store:
        """A new store object on this backend's database."""
        raise NotImplementedError

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> None:
        """Run one statement on the database directly, committed (``?`` marks the parameters)."""
        raise NotImplementedError

    def held_by(self, session: str, *, pid: int, host: str, for_seconds: float) -> None:
        """Leave the session as a holder that stopped without closing would: a claim nobody renews."""
        raise NotImplementedError


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    def make(self, **options: Any) -> Store:
        return SQLiteSessionStore(self.path, **options)

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> None:
        conn = sqlite3.connect(self.path)
        with conn:
            conn.execute(statement, params)
        conn.close()

    def held_by(self, session: str, *, pid: int, host: str, for_seconds: float) -> None:
        self.execute(
            "INSERT INTO holders (token, pid, host, expires_at) VALUES ('stopped', ?, ?, ?)",
            (pid, host, time.time() + for_seconds),
        )
        self.execute("UPDATE leases SET token = 'stopped' WHERE session_id = ?", (session,))


class PostgresBackend(Backend):
    name = "postgres"

    def __init__(self, server: PostgresServer) -> None:
        self.url = server.url
        self.schema = fresh_schema()

    def make(self, **options: Any) -> Store:
        return PostgresSessionStore(self.url, schema=self.schema, **options)

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> None:
        with psycopg.connect(self.url, autocommit=True, options=f"-c search_path={self.schema}") as conn:
            conn.execute(statement.replace("?", "%s").encode(), params)

    def held_by(self, session: str, *, pid: int, host: str, for_seconds: float) -> None:
        self.execute(
            "INSERT INTO holders (token, pid, host, expires_at) "
            "VALUES ('stopped', ?, ?, now() + make_interval(secs => ?))",
            (pid, host, for_seconds),
        )
        self.execute("UPDATE leases SET token = 'stopped' WHERE session_id = ?", (session,))


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each store test runs once on a SQLite file and once on a fresh schema of a real PostgreSQL server."""
    if request.param == "sqlite":
        return SQLiteBackend(tmp_path / "s.sqlite3")
    return PostgresBackend(request.getfixturevalue("postgres_server"))
