"""A damaged, read-only, locked or full store, through the real ``handoffs`` command in a subprocess.

Every failure is one line on stderr (or, mid-chat, one notice) and a non-zero exit, never a traceback;
the file is left as it was; and ``sessions list|show|export`` read a store they may not write.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handoffs_runtime.sessions.sqlite.schema import SCHEMA_VERSION

from .chat_process import ROOT

WAIT = 60
PAGE = 4096

# Root ignores file permissions; without the capabilities that let it, it is held to them like anyone.
_AS_AN_ORDINARY_USER = (
    ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"] if os.geteuid() == 0 else []
)


def handoffs(
    *args: str, stdin: str = "", limit_file_size: int | None = None, enforce_permissions: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``handoffs ARGS`` as a new process (with a file-size limit, as on a full disk, if asked)."""
    command = [sys.executable, "-m", "handoffs_runtime", *args]
    if limit_file_size is not None:
        setup = (
            "import os, resource, sys; "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit_file_size}, {limit_file_size})); "
            "os.execv(sys.executable, sys.argv[1:])"
        )
        command = [sys.executable, "-c", setup, *command]
    if enforce_permissions:
        if os.geteuid() == 0 and shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file permissions cannot be enforced")
        command = [*_AS_AN_ORDINARY_USER, *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=WAIT, env=env)


def one_line_error(result: subprocess.CompletedProcess[str], start: str) -> None:
    """Failed with status 2 and exactly one line on stderr that starts with ``start``."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(start), result.stderr


@pytest.fixture(scope="module")
def made_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one finished refund session, made once by the real chat command."""
    path = tmp_path_factory.mktemp("made") / "sessions.sqlite3"
    result = handoffs(
        "chat", "--store", str(path), "--session", "refund", stdin="I want a refund for my shoes\nyes\n"
    )
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def store(made_store: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh copy of the made store, in a folder of its own."""
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "sessions.sqlite3"
    shutil.copyfile(made_store, path)
    yield path
    folder.chmod(0o755)
    path.chmod(0o644)


READING = [["sessions", "list"], ["sessions", "show", "refund"], ["sessions", "export", "refund"]]
EVERY_COMMAND = [*READING, ["sessions", "delete", "refund"], ["chat", "--session", "refund"]]


def _run(command: list[str], path: Path, **options: object) -> subprocess.CompletedProcess[str]:
    return handoffs(*command, "--store", str(path), stdin="hello\n", **options)  # type: ignore[arg-type]


# --- a bad schema-version row ---------------------------------------------------------------------------


def _scribble(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


SCRIBBLES: dict[str, tuple[tuple[str, ...], str]] = {
    "text": (("UPDATE schema_version SET version = 'two'",), "'two'"),
    "null": (
        (
            "DROP TABLE schema_version",
            "CREATE TABLE schema_version (version)",
            "INSERT INTO schema_version VALUES (NULL)",
        ),
        "None",
    ),
    "no row": (("DELETE FROM schema_version",), "no row"),
    "two rows": (("INSERT INTO schema_version VALUES (1)",), f"{SCHEMA_VERSION}, 1"),
}


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
def test_a_text_schema_version_is_one_clear_line_for_every_command(store: Path, command: list[str]) -> None:
    _scribble(store, "UPDATE schema_version SET version = 'two'")
    before = store.read_bytes()
    result = _run(command, store)
    one_line_error(
        result,
        f"handoffs: session store {store} is damaged: its schema version should be one whole number, "
        "but it holds 'two'; move the file away or choose another --store path. It was left as is.",
    )
    assert result.stdout == ""
    assert store.read_bytes() == before


@pytest.mark.parametrize("scribble", list(SCRIBBLES), ids=str)
def test_every_kind_of_bad_schema_row_is_refused(store: Path, scribble: str) -> None:
    statements, shown = SCRIBBLES[scribble]
    _scribble(store, *statements)
    for command in (["sessions", "list"], ["chat", "--session", "refund"]):
        one_line_error(
            _run(command, store),
            f"handoffs: session store {store} is damaged: its schema version should be one whole "
            f"number, but it holds {shown};",
        )


# --- corrupt pages --------------------------------------------------------------------------------------


def _root_page(path: Path, table: str) -> int:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        page: int = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    finally:
        conn.close()
    return page


def _overwrite_pages(path: Path, pages: Callable[[int], bool]) -> None:
    data = bytearray(path.read_bytes())
    for number in range(1, len(data) // PAGE + 1):
        if pages(number):
            data[(number - 1) * PAGE : number * PAGE] = bytes([0xA5]) * PAGE
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
def test_corrupt_pages_are_one_clear_line(store: Path, command: list[str]) -> None:
    _overwrite_pages(store, lambda number: number > 1)  # the file header and table list are intact
    before = store.read_bytes()
    one_line_error(_run(command, store), f"handoffs: session store {store} is not a readable session store")
    assert store.read_bytes() == before


def test_a_corrupt_transcript_stops_a_resumed_chat_with_one_notice_and_a_failure_status(store: Path) -> None:
    """The store opens and the session's row reads; the transcript behind it does not."""
    messages = _root_page(store, "messages")
    _overwrite_pages(store, lambda number: number == messages)
    assert _run(["sessions", "list"], store).returncode == 0
    one_line_error(
        _run(["sessions", "show", "refund"], store),
        f"handoffs: session store {store} is not a readable session store",
    )
    result = _run(["chat", "--session", "refund", "--no-colour"], store)
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    notices = [line for line in result.stdout.splitlines() if "⚠" in line]
    assert len(notices) == 1 and "is not a readable session store" in notices[0], result.stdout
    assert "you ›" not in result.stdout  # nothing was asked of the person


# --- read-only ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_store_can_be_listed_shown_and_exported(store: Path, what: str) -> None:
    writable = {" ".join(c): _run(c, store) for c in READING}
    assert all(r.returncode == 0 for r in writable.values())
    store.chmod(0o444)
    if what == "folder":
        store.parent.chmod(0o555)
    before = store.read_bytes()
    names = sorted(p.name for p in store.parent.iterdir())
    for command in READING:
        result = _run(command, store, enforce_permissions=True)
        expected = writable[" ".join(command)].stdout
        assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")
    assert store.read_bytes() == before
    assert sorted(p.name for p in store.parent.iterdir()) == names  # no WAL index its owner cannot write


@pytest.mark.parametrize("what", ["file", "folder"])
@pytest.mark.parametrize("command", [["chat", "--session", "refund"], ["sessions", "delete", "refund"]])
def test_writing_to_a_read_only_store_is_one_clear_line(store: Path, what: str, command: list[str]) -> None:
    if what == "file":
        store.chmod(0o444)
    else:
        store.parent.chmod(0o555)
    before = store.read_bytes()
    result = _run(command, store, enforce_permissions=True)
    one_line_error(result, f"handoffs: session store {store} cannot be written (")
    assert "read-only. `handoffs sessions list|show|export` can still read it" in result.stderr
    assert store.read_bytes() == before


# --- locked, full ---------------------------------------------------------------------------------------


def test_a_store_locked_by_another_writer_is_one_clear_line_and_readers_go_on(store: Path) -> None:
    _run(["sessions", "list"], store)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")  # a writer that does not let go (the chat waits 5 s for it)
    try:
        one_line_error(
            _run(["chat", "--session", "other"], store),
            f"handoffs: session store {store} is locked by another process; wait for it to finish",
        )
        listed = _run(["sessions", "list"], store)
        assert listed.returncode == 0 and "refund" in listed.stdout
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_full_disk_when_the_store_is_made_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    one_line_error(
        handoffs("chat", "--store", str(path), stdin="hello\n", limit_file_size=PAGE),
        f"handoffs: session store {path}: input/output error (SQLITE_IOERR_WRITE: disk I/O error); "
        "the disk may be full",
    )


def test_a_disk_that_fills_up_mid_chat_stops_the_session_with_one_notice(store: Path) -> None:
    before = store.read_bytes()
    result = handoffs(
        "chat", "--store", str(store), "--session", "refund", "--no-colour",
        stdin="x" * 400_000 + "\nhello\n",
        limit_file_size=max(len(before), 16 * PAGE) + 16 * PAGE,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    notices = [line for line in result.stdout.splitlines() if "⚠" in line]
    assert len(notices) == 1 and "the disk may be full" in notices[0], result.stdout
    listed = _run(["sessions", "show", "refund"], store)  # what was stored before is intact
    assert listed.returncode == 0 and "xxxxxxxx" not in listed.stdout
