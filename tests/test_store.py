"""The session stores on real databases: the behaviour both share (on SQLite and on PostgreSQL), then the
SQLite file's own cases: transactions, migrations, and every bad file left untouched."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from autogen_core.models import AssistantMessage, UserMessage

from handoffs_runtime.errors import CorruptEntryError, StoreError, UnknownSessionError
from handoffs_runtime.messages import HandoffEvent, Notice, Question, Said
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from handoffs_runtime.sessions.store import (
    SessionStore,
    default_store_path,
    entry_for_event,
    entry_for_message,
    question_entry,
)
from handoffs_runtime.sessions.thread import StoreThread
from handoffs_runtime.sessions.transcript import NO_ANSWER, describe_entry, entry_events

from .store_backends import Backend

HI = UserMessage(content="hi", source="User")
HELLO = AssistantMessage(content="hello", source="Triage")


async def test_append_assigns_sequence_numbers_and_keeps_state(backend: Backend) -> None:
    store = backend.make()
    assert isinstance(store, SessionStore)
    state, created = await store.open_session("s1", agent="Triage", team="acme")
    assert created and state.active_agent == "Triage" and state.context == [] and state.last_seq == 0
    assert await store.append("s1", [entry_for_message(HI, agent="Triage")]) == 1
    event = HandoffEvent(session_id="s1", source="Triage", target="Sales", tool="transfer_to_sales")
    last = await store.append(
        "s1", [entry_for_event(event), entry_for_message(HELLO)], active_agent="Sales", context=[HI, HELLO]
    )
    assert last == 3
    state = await store.get_session("s1")
    assert (state.active_agent, state.context, state.context_seq, state.team) == (
        "Sales",
        [HI, HELLO],
        3,
        "acme",
    )
    entries = await store.entries("s1")
    assert [(e.seq, e.kind, e.agent) for e in entries] == [
        (1, "user", "Triage"),
        (2, "handoff", "Triage"),
        (3, "reply", "Triage"),
    ]
    assert entries[0].message() == HI and entries[1].event() == event and entries[2].message() == HELLO
    assert [e.seq for e in await store.entries("s1", after=2)] == [3]
    await store.close()

    reopened = backend.make()
    again, created = await reopened.open_session("s1", agent="Triage")
    assert not created and again.context == [HI, HELLO] and again.active_agent == "Sales"
    await reopened.close()


async def test_a_misspelled_update_is_refused_and_nothing_is_written(backend: Backend) -> None:
    store = backend.make()
    await store.open_session("s1", agent="Triage")
    with pytest.raises(TypeError, match="unexpected keyword arguments: activ_agent"):
        await store.append("s1", [entry_for_message(HI)], activ_agent="Sales")  # type: ignore[call-arg]
    assert await store.entries("s1") == [] and (await store.get_session("s1")).active_agent == "Triage"
    await store.close()


async def test_ended_session_reopens_and_list_is_most_recent_first(backend: Backend) -> None:
    store = backend.make()
    await store.open_session("old", agent="A")
    await store.open_session("new", agent="B")
    await store.append("new", [entry_for_message(HI)])
    await store.end_session("old")
    assert (await store.get_session("old")).status == "ended"
    infos = await store.list_sessions()
    assert [(i.session_id, i.messages) for i in infos] == [("old", 0), ("new", 1)]
    state, created = await store.open_session("old", agent="ignored")
    assert not created and state.status == "open" and state.active_agent == "A"
    await store.close()


async def test_unknown_sessions_are_clear_errors(backend: Backend) -> None:
    store = backend.make()
    with pytest.raises(UnknownSessionError, match=r"no session 'nope'.*sessions list"):
        await store.get_session("nope")
    with pytest.raises(UnknownSessionError):
        await store.entries("nope")
    with pytest.raises(UnknownSessionError):
        await store.append("nope", [entry_for_message(HI)])
    with pytest.raises(UnknownSessionError):
        await store.delete_session("nope")
    with pytest.raises(UnknownSessionError):
        await store.end_session("nope")
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.list_sessions()


async def test_delete_removes_the_session_and_its_transcript_only(backend: Backend) -> None:
    store = backend.make()
    for s in ("a", "b"):
        await store.open_session(s, agent="T")
        await store.append(s, [entry_for_message(HI)])
    await store.delete_session("a")
    assert [i.session_id for i in await store.list_sessions()] == ["b"]
    assert len(await store.entries("b")) == 1
    await store.open_session("a", agent="T")
    assert await store.entries("a") == []
    await store.close()


async def test_file_is_private_in_wal_mode_with_the_current_schema(tmp_path: Path) -> None:
    """Only its owner reads a new store: it holds conversations and the web servers' key secret."""
    path = tmp_path / "s.sqlite3"
    store = SQLiteSessionStore(path)
    await store.secret("web-session-key")
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


async def test_an_old_schema_is_migrated_and_keeps_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("UPDATE schema_version SET version = 1")
    conn.execute(
        "INSERT INTO sessions (id, active_agent, created_at, updated_at) VALUES ('kept', 'Sales', 1, 1)"
    )
    conn.commit()
    conn.close()
    store = SQLiteSessionStore(path)
    state = await store.get_session("kept")
    assert (state.active_agent, state.team) == ("Sales", "")
    await store.close()


def _garbage_file(path: Path) -> bytes:
    path.write_bytes(b"this is not sqlite at all" * 100)
    return path.read_bytes()


def _newer_file(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 5,))
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_garbage_file, "not a readable session store"),
        (_newer_file, "newer handoffs-runtime"),
    ],
    ids=["corrupt", "newer-schema"],
)
def test_bad_files_are_refused_and_left_untouched(
    tmp_path: Path, make: Callable[[Path], bytes], message: str
) -> None:
    path = tmp_path / "bad.sqlite3"
    before = make(path)
    with pytest.raises(StoreError, match=message):
        SQLiteSessionStore(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sqlite3"]


def test_an_unrelated_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"not a session store.*invoices"):
        SQLiteSessionStore(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("read_only", [False, True])
def test_a_directory_is_refused(tmp_path: Path, read_only: bool) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        SQLiteSessionStore(tmp_path, read_only=read_only)


def test_a_locked_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    SQLiteSessionStore(path).close_now()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked by another process"):
            SQLiteSessionStore(path, timeout=0.05)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_a_write_waiting_for_a_lock_does_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SQLiteSessionStore(path, timeout=30)
    await store.open_session("s1", agent="T")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    write = asyncio.create_task(store.append("s1", [entry_for_message(HI)]))
    ticks = 0
    while ticks < 20:  # the loop keeps running while the write waits on the store's thread
        await asyncio.sleep(0)
        ticks += 1
    assert not write.done()
    await asyncio.to_thread(holder.execute, "COMMIT")
    assert await write == 1
    holder.close()
    await store.close()


async def test_store_calls_run_on_the_store_thread() -> None:
    store = SQLiteSessionStore(":memory:")
    seen: list[str] = []
    await store._run(lambda conn: seen.append(threading.current_thread().name))
    assert seen and seen[0].startswith("handoffs-store") and seen[0] != threading.current_thread().name
    await store.close()


async def test_a_call_that_fails_on_the_store_thread_leaves_the_thread_serving() -> None:
    store = SQLiteSessionStore(":memory:")

    def fails(conn: object) -> None:
        raise RuntimeError("this call fails")

    with pytest.raises(RuntimeError, match="this call fails"):
        await store._run(fails)
    store._thread.post(fails, None)  # nobody waits for it: logged, and the thread goes on
    assert await store._run(lambda conn: 42) == 42
    await store.close()


async def test_a_stopped_store_thread_refuses_calls_rather_than_leave_them_unanswered() -> None:
    thread = StoreThread("handoffs-store-test")
    assert await thread.call(lambda: 42) == 42
    thread.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        thread.call(lambda: 42)
    with pytest.raises(RuntimeError, match="stopped"):
        thread.wait(lambda: 42)
    with pytest.raises(RuntimeError, match="stopped"):
        thread.post(lambda: 42)


def test_default_path_follows_xdg_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "handoffs-runtime" / "sessions.sqlite3"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_store_path() == tmp_path / ".local" / "share" / "handoffs-runtime" / "sessions.sqlite3"


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("body", "{not json", r"entry 1 of session 's1' is damaged in the store \(Expecting property name"),
        ("body", '{"content": 5}', r"entry 1 of session 's1' is damaged in the store"),
        (
            "body",
            "[1, 2]",
            r"entry 1 of session 's1' is damaged in the store \(kind 'user' with a body of type",
        ),
        ("kind", "poem", r"entry 1 of session 's1' is damaged in the store \(kind 'poem'"),
        ("kind", "question", r"entry 1 of session 's1' is damaged in the store \(a question body: prompt"),
        ("context", '[{"type": "Nonsense"}]', r"the context of session 's1' is damaged in the store"),
    ],
)
async def test_a_scribbled_row_is_a_store_error_naming_it(
    backend: Backend, column: str, value: str, message: str
) -> None:
    store = backend.make()
    await store.open_session("s1", agent="T")
    await store.append("s1", [entry_for_message(HI)], context=[HI])
    await store.close()
    table = "sessions" if column == "context" else "messages"
    backend.execute(f"UPDATE {table} SET {column} = ?", (value,))
    store = backend.make(read_only=True)
    named = StoreError if column == "context" else CorruptEntryError  # an entry's body or kind: named
    with pytest.raises(named, match=message):
        await (store.get_session("s1") if column == "context" else store.entries("s1"))
    assert store.failure is not None
    await store.close()


async def test_a_question_and_its_answer_are_kept_and_read_back_checked(backend: Backend) -> None:
    """A tool's confirmation or an operator's approval is stored with its answer; no model reads it."""
    store = backend.make()
    await store.open_session("s1", agent="T")
    await store.append("s1", [question_entry("Confirm order? y/n", "customer", "yes")])
    [entry] = await store.entries("s1")
    assert entry.message() is None
    assert entry_events(entry) == [
        Question(prompt="Confirm order? y/n", choices=("yes", "no")),
        Said(text="yes"),
    ]
    await store.close()
    backend.execute("UPDATE messages SET body = ?", ('{"prompt": "Confirm?", "person": "someone"}',))
    store = backend.make(read_only=True)
    with pytest.raises(StoreError, match=r"entry 1 of session 's1' is damaged in the store \(a question"):
        await store.entries("s1")
    await store.close()


async def test_a_question_the_person_left_unanswered_is_kept_and_read_back(backend: Backend) -> None:
    """The person had gone (no answer at all): the question is kept with the agent that asked it, and the
    transcript says nobody answered."""
    store = backend.make()
    await store.open_session("s1", agent="T")
    await store.append("s1", [question_entry("Confirm order? y/n", "customer", None, asker="SalesAgent")])
    await store.close()
    store = backend.make(read_only=True)
    [entry] = await store.entries("s1")
    assert entry.agent == "SalesAgent"
    assert entry_events(entry) == [
        Question(prompt="Confirm order? y/n", choices=("yes", "no")),
        Notice(text=NO_ANSWER),
    ]
    assert describe_entry(entry) == f"Confirm order? y/n › {NO_ANSWER}"
    await store.close()
