"""``handoffs chat`` killed with SIGKILL at several points, then resumed: at most the turn in flight is lost.

Each case runs the real command in a subprocess on the offline model, with piped stdin, and kills it once
its stdout shows the point of interest.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import StoredEntry

from .chat_process import Chat


async def _stored(path: Path, session: str) -> tuple[str, list[StoredEntry]]:
    store = await asyncio.to_thread(SQLiteSessionStore, path)
    try:
        state = await store.get_session(session)
        return state.active_agent, await store.entries(session)
    finally:
        await store.close()


def _spoken(entries: list[StoredEntry]) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in entries if e.kind in ("user", "reply", "notice")]


def _consistent(entries: list[StoredEntry]) -> None:
    """Sequence numbers run 1..n, and every reply follows a message from the person."""
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    users = 0
    for e in entries:
        users += e.kind == "user"
        if e.kind == "reply":
            assert users, "a reply was stored without the message it answers"


REFUND = "I want a refund for my shoes"
PROPOSAL = "ACME repairs › I can execute refund"


async def test_killed_before_the_first_message_resumes_as_a_fresh_session(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    chat = await Chat.start(path, "k0", tmp_path)
    await chat.wait_for("you › ")
    await chat.kill()
    assert await _stored(path, "k0") == ("TriageAgent", [])

    chat = await Chat.start(path, "k0", tmp_path)
    await chat.say(REFUND)
    await chat.wait_for(PROPOSAL)
    out = await chat.finish()
    assert "resuming session" not in out
    agent, entries = await _stored(path, "k0")
    assert agent == "IssuesAndRepairsAgent" and entries[0].text == REFUND


async def test_killed_after_a_reply_resumes_with_the_agent_and_context(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    chat = await Chat.start(path, "k1", tmp_path)
    await chat.say(REFUND)
    await chat.wait_for(PROPOSAL)
    await chat.kill()
    agent, entries = await _stored(path, "k1")
    assert agent == "IssuesAndRepairsAgent"
    assert [e.kind for e in entries] == ["user", "handoff", "tool_calls", "tool_results", "reply"]

    chat = await Chat.start(path, "k1", tmp_path)
    await chat.wait_for("resuming session k1 with ACME repairs (5 messages stored)")
    await chat.say("yes")  # answers the stored proposal: only right if the context came back
    await chat.wait_for("ACME repairs › Done: look up item")
    out = await chat.finish()
    assert f"    you › {REFUND}" in out
    _, entries = await _stored(path, "k1")
    _consistent(entries)
    assert any(e.kind == "tool_results" and "success" in str(e.body) for e in entries)


async def test_killed_while_a_tool_waits_for_the_person_loses_only_that_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    chat = await Chat.start(path, "k2", tmp_path)
    await chat.say("I'd like to buy rocket skates")
    await chat.wait_for("Shall I go ahead?")
    await chat.say("yes")
    await chat.wait_for("Confirm order? y/n")  # execute_order is running, waiting for the person
    await chat.kill()
    agent, entries = await _stored(path, "k2")
    assert agent == "SalesAgent"
    assert _spoken(entries)[-1] == ("user", "yes")  # stored before it was sent; the reply never came
    _consistent(entries)

    chat = await Chat.start(path, "k2", tmp_path)
    await chat.wait_for("your last message was not answered before the session stopped: 'yes'")
    await chat.wait_for("may or may not have happened")  # the order's intent has no outcome
    await chat.say("yes")
    await chat.wait_for("Do it again anyway")  # a second order only on an explicit yes
    await chat.say("y")
    await chat.wait_for("Confirm order? y/n")
    await chat.say("y")
    await chat.wait_for("ACME sales › ")
    await chat.finish()
    _, entries = await _stored(path, "k2")
    _consistent(entries)
    kinds = [kind for kind, _ in _spoken(entries)]
    assert kinds == ["user", "reply", "user", "notice", "user", "reply"]


@pytest.mark.parametrize("turns", [1, 2, 3])
async def test_killed_right_after_typing_keeps_the_store_consistent(tmp_path: Path, turns: int) -> None:
    """Killed at an unknown moment of a turn: complete turns are kept, the one in flight may be lost."""
    path = tmp_path / "s.sqlite3"
    lines = [REFUND, "no, something else", "hello"]
    chat = await Chat.start(path, "k3", tmp_path)
    for n, line in enumerate(lines[:turns], start=1):
        await chat.wait_for("you › ", occurrence=n)
        await chat.say(line)
    await chat.kill()
    greeting = 1  # shown by the console, never stored: no model wrote it
    shown = chat.output.count(" › ") - chat.output.count("you › ") - greeting  # replies the person saw
    _, entries = await _stored(path, "k3")
    _consistent(entries)
    replies = [e for e in entries if e.kind == "reply"]
    assert len(replies) >= shown  # everything shown was stored first
    assert len(replies) >= turns - 1  # at most the turn in flight is missing

    chat = await Chat.start(path, "k3", tmp_path)
    await chat.wait_for("you › ")
    out = await chat.finish()
    assert ("resuming session k3" in out) == bool(entries)
