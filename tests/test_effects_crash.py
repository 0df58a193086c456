"""``handoffs chat`` killed with SIGKILL inside an irreversible tool, then resumed: the order's own side
effect (a line in a file) happens exactly once, and the person is told the truth."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from handoffs_runtime.sessions.sqlite import SQLiteSessionStore

from .chat_process import WAIT, Chat
from .effect_team import ORDERS_FILE

TEAM = ("--team", "tests.effect_team:team")
UNKNOWN = "may or may not have happened"


async def _lines(path: Path, count: int) -> list[str]:
    """The file's lines once it has ``count`` of them (bounded wait: the tool writes at once)."""
    async with asyncio.timeout(WAIT):
        while True:
            lines = path.read_text().splitlines() if path.exists() else []
            if len(lines) >= count:
                return lines
            await asyncio.sleep(0.05)


async def test_a_chat_killed_inside_an_order_places_it_once_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders = tmp_path / "orders.txt"
    monkeypatch.setenv(ORDERS_FILE, str(orders))
    store = tmp_path / "s.sqlite3"
    chat = await Chat.start(store, "e1", tmp_path, *TEAM)
    await chat.say("I'd like to buy rocket skates")
    await chat.wait_for("Shall I go ahead?")
    await chat.say("yes")
    [placed] = await _lines(orders, 1)  # the tool ran its effect and now sleeps inside the call
    await chat.kill()

    chat = await Chat.start(store, "e1", tmp_path, *TEAM)
    await chat.wait_for(UNKNOWN)  # told at once: the order may or may not have been placed
    await chat.wait_for("you › ", occurrence=1)
    await chat.say("I'd like to buy rocket skates")  # the person asks for the same order again
    await chat.wait_for("Shall I go ahead?")
    await chat.say("yes")
    await chat.wait_for("may already have happened")  # asked before a second one: they say no
    await chat.say("n")
    out = await chat.finish()
    assert orders.read_text().splitlines() == [placed]  # exactly once
    assert "Do it again anyway" in out

    opened = await asyncio.to_thread(SQLiteSessionStore, store)
    try:
        [effect] = await opened.effects("e1")
    finally:
        await opened.close()
    assert effect.key.tool == "execute_order" and effect.status == "pending"
