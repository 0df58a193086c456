"""``--store PATH|URL`` and ``HANDOFFS_STORE``: one function opens the store every command uses, and the
commands work on a PostgreSQL database as on a file."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import psycopg
import pytest

from handoffs_runtime.cli import main as cli
from handoffs_runtime.sessions.open import ENV, open_store
from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore

from .postgres_support import PostgresServer


@pytest.fixture
def database_url(postgres_server: PostgresServer) -> str:
    """A new, empty database on the test server, as a deployment would be given one."""
    name = f"shop_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_server.url.rsplit("/", 1)[0] + f"/{name}"


def test_open_store_takes_a_path_a_url_or_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    opened = open_store(str(tmp_path / "given.sqlite3"))
    assert isinstance(opened, SQLiteSessionStore) and opened.path == str(tmp_path / "given.sqlite3")
    opened.close_now()
    opened = open_store()
    assert isinstance(opened, SQLiteSessionStore) and opened.path.endswith(
        "handoffs-runtime/sessions.sqlite3"
    )
    opened.close_now()
    monkeypatch.setenv(ENV, database_url)
    opened = open_store()
    assert isinstance(opened, PostgresSessionStore) and opened.url == database_url
    opened.close_now()
    opened = open_store(str(tmp_path / "option-wins.sqlite3"))
    assert isinstance(opened, SQLiteSessionStore)
    opened.close_now()


def _chat(monkeypatch: pytest.MonkeyPatch, *args: str, lines: list[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    assert cli.main(["chat", *args, "--no-colour"]) == 0


def test_a_chat_on_postgres_resumes_from_another_front_end_and_the_sessions_command_reads_it(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _chat(monkeypatch, "--store", database_url, "--session", "refund", lines=["I want a refund for my shoes"])
    capsys.readouterr()
    monkeypatch.setenv(ENV, database_url)  # the second front end is told by the variable
    _chat(monkeypatch, "--session", "refund", lines=["yes"])
    out = capsys.readouterr().out
    assert "resuming session refund with ACME repairs" in out

    assert cli.main(["sessions", "list"]) == 0
    _, *rows = capsys.readouterr().out.splitlines()
    assert [r.split()[0] for r in rows] == ["refund"] and rows[0].split()[-1] == "IssuesAndRepairsAgent"
    assert cli.main(["sessions", "show", "refund", "--store", database_url]) == 0
    shown = capsys.readouterr().out
    assert "you › I want a refund for my shoes" in shown and "you › yes" in shown
    assert cli.main(["sessions", "delete", "refund"]) == 0
    assert cli.main(["sessions", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "no sessions stored"
