"""``handoffs sessions export -o FILE --force`` never writes over a live store or its journal by any name:
a store opened through a hard link, a hard link of the store elsewhere, or a file with other names."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cli_support import run_handoffs
from .test_export_file import _left_over_temporaries, _sessions, folder

__all__ = ["folder"]  # the fixture: a store ``s2.db`` with the sessions ``victim`` and ``bystander``


@pytest.fixture
def live(folder: Path) -> Iterator[sqlite3.Connection]:
    """A chat in progress on ``s2.db``: its write-ahead log is on disk beside it."""
    connection = sqlite3.connect(folder / "s2.db")
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE IF NOT EXISTS busy (x)")
        connection.execute("INSERT INTO busy VALUES (1)")
        connection.commit()
        yield connection
    finally:
        connection.close()


def _export(folder: Path, store: str, target: str) -> str:
    done = run_handoffs("sessions", "export", "victim", "--store", store, "-o", target, "--force", cwd=folder)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


@pytest.mark.parametrize("journal", ["s2.db-wal", "s2.db-shm", "s2.db-journal"])
def test_a_store_opened_through_a_hard_link_keeps_the_live_journal_of_its_other_name(
    folder: Path, live: sqlite3.Connection, journal: str
) -> None:
    os.link(folder / "s2.db", folder / "hard.db")
    wal = (folder / "s2.db-wal").read_bytes()
    err = _export(folder, "hard.db", journal)
    assert err == f"handoffs: {journal} is a file of the session store; choose another file\n"
    assert (folder / "s2.db-wal").read_bytes() == wal
    assert not (folder / "s2.db-journal").exists()
    assert _left_over_temporaries(folder) == []


def test_the_journal_of_a_hard_link_of_the_store_elsewhere_is_refused(
    folder: Path, live: sqlite3.Connection
) -> None:
    (folder / "other").mkdir()
    os.link(folder / "s2.db", folder / "other" / "h.db")  # another process may run on this name
    err = _export(folder, "s2.db", "other/h.db-wal")
    assert err == "handoffs: other/h.db-wal is a file of the session store; choose another file\n"
    assert not (folder / "other" / "h.db-wal").exists()
    live.execute("INSERT INTO busy VALUES (2)")
    live.commit()
    assert _sessions(folder) == ["bystander", "victim"]


def test_a_file_with_other_names_is_refused_even_with_force(folder: Path) -> None:
    (folder / "notes.md").write_text("my notes\n")
    os.link(folder / "notes.md", folder / "notes-copy.md")
    err = _export(folder, "s2.db", "notes.md")
    assert err == (
        "handoffs: notes.md has other names (hard links) that would keep the old text; choose another file\n"
    )
    assert (folder / "notes.md").read_text() == (folder / "notes-copy.md").read_text() == "my notes\n"
