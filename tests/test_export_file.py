"""``handoffs sessions export ID -o FILE`` destroys nothing by accident, run as a person runs it.

It refuses an existing file unless ``--force``, refuses the store's own files always (however they are
named), never writes through a symbolic link, says in one line when the directory is missing, and writes
atomically (no half-written file, no temporary file left behind).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from handoffs_runtime import OfflineModel, SQLiteSessionStore, run_chat
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.teams.acme import acme_team

from .cli_support import run_handoffs


@pytest.fixture
async def folder(tmp_path: Path) -> Path:
    """A folder holding ``s2.db``, a store with the sessions ``victim`` and ``bystander``."""
    store = SQLiteSessionStore(tmp_path / "s2.db")
    try:
        for session, line in (("victim", "I want a refund for my shoes"), ("bystander", "hello")):
            channel = ScriptedChannel.for_sessions({session: [line]})
            team, model = acme_team(), OfflineModel()
            await run_chat(team, model=model, channel=channel, session_id=session, store=store)
    finally:
        store.close_now()
    return tmp_path


def _export(folder: Path, *args: str) -> tuple[int, str]:
    result = run_handoffs("sessions", "export", "victim", "--store", "s2.db", *args, cwd=folder)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    return result.returncode, result.stderr


def _sessions(folder: Path) -> list[str]:
    listing = run_handoffs("sessions", "list", "--store", "s2.db", cwd=folder)
    assert listing.returncode == 0, listing.stderr
    return sorted(row.split()[0] for row in listing.stdout.splitlines()[1:])


def _left_over_temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("target", "force"),
    [
        ("s2.db", False),
        ("s2.db", True),
        ("s2.db-wal", True),
        ("s2.db-shm", False),
        ("sub/../s2.db", True),
        ("link-to-store", True),
        ("hard-link-to-store", True),
    ],
)
def test_the_store_s_own_files_are_always_refused(folder: Path, target: str, force: bool) -> None:
    (folder / "sub").mkdir()
    (folder / "link-to-store").symlink_to(folder / "s2.db")
    os.link(folder / "s2.db", folder / "hard-link-to-store")
    code, err = _export(folder, "-o", target, *(["--force"] if force else []))
    assert code == 2
    assert err == f"handoffs: {target} is a file of the session store; choose another file\n"
    assert _sessions(folder) == ["bystander", "victim"]
    assert _left_over_temporaries(folder) == []


def test_an_existing_file_is_kept_unless_forced(folder: Path) -> None:
    mine = folder / "notes.md"
    mine.write_text("my notes\n")
    code, err = _export(folder, "-o", "notes.md")
    assert (code, err) == (2, "handoffs: notes.md already exists; use --force to replace it\n")
    assert mine.read_text() == "my notes\n"
    assert _export(folder, "-o", "notes.md", "--force") == (0, "")
    assert mine.read_text().startswith("# Session victim\n")
    assert _left_over_temporaries(folder) == []


def test_a_new_file_gets_the_whole_export(folder: Path) -> None:
    assert _export(folder, "--format", "json", "-o", "victim.json") == (0, "")
    document = json.loads((folder / "victim.json").read_text())
    assert document["session"]["id"] == "victim"
    assert (folder / "victim.json").stat().st_mode & 0o077 == 0  # a transcript is private


def test_a_symbolic_link_at_the_destination_is_never_written_through(folder: Path) -> None:
    precious = folder / "precious.txt"
    precious.write_text("keep me\n")
    (folder / "out.md").symlink_to(precious)
    code, err = _export(folder, "-o", "out.md")
    assert (code, err) == (2, "handoffs: out.md already exists; use --force to replace it\n")
    assert _export(folder, "-o", "out.md", "--force") == (0, "")
    assert precious.read_text() == "keep me\n"  # the link was replaced, not followed
    assert not (folder / "out.md").is_symlink()
    assert (folder / "out.md").read_text().startswith("# Session victim\n")


def test_a_dangling_symbolic_link_is_not_followed_either(folder: Path) -> None:
    (folder / "out.md").symlink_to(folder / "created-through-the-link.md")
    code, _ = _export(folder, "-o", "out.md")
    assert code == 2
    assert not (folder / "created-through-the-link.md").exists()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing/out.md", "cannot write missing/out.md: there is no directory missing"),
        ("sub", "sub is a directory; name a file to write"),
    ],
)
def test_a_destination_that_cannot_be_a_file_is_one_clear_line(
    folder: Path, target: str, message: str
) -> None:
    (folder / "sub").mkdir()
    code, err = _export(folder, "-o", target, "--force")
    assert (code, err) == (2, f"handoffs: {message}\n")
    assert not (folder / "missing").exists()


def test_a_file_name_with_escape_sequences_is_shown_inert(folder: Path) -> None:
    code, err = _export(folder, "-o", "missing\x1b[2J/out.md")
    assert (code, err) == (
        2,
        "handoffs: cannot write missing\\x1b[2J/out.md: there is no directory missing\\x1b[2J\n",
    )


@pytest.mark.parametrize("target", ["s2.db-wal", "s2.db-shm", "s2.db"])
def test_a_store_named_through_a_link_keeps_its_real_files_and_live_journal(
    folder: Path, target: str
) -> None:
    (folder / "link.db").symlink_to(folder / "s2.db")
    live = sqlite3.connect(folder / "s2.db")  # a chat in progress: its journal is on disk beside s2.db
    try:
        live.execute("PRAGMA journal_mode=WAL")
        live.execute("CREATE TABLE IF NOT EXISTS busy (x)")
        live.execute("INSERT INTO busy VALUES (1)")
        live.commit()
        journal = (folder / "s2.db-wal").read_bytes()
        result = run_handoffs(
            "sessions", "export", "victim", "--store", "link.db", "-o", target, "--force", cwd=folder
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr == f"handoffs: {target} is a file of the session store; choose another file\n"
        assert (folder / "s2.db-wal").read_bytes() == journal
    finally:
        live.close()
    assert _sessions(folder) == ["bystander", "victim"]
