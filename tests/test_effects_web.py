"""Two web servers on one PostgreSQL store, one killed with SIGKILL inside an irreversible tool: the
customer goes on with the other, which holds the same turn's effect in the shared ledger. The order's own
side effect (a line in a file) happens exactly once, and the customer is told the truth."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any, cast

import pytest

from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.web.hub import SessionHub

from .effect_team import ORDERS_FILE
from .postgres_support import PostgresServer, fresh_database
from .test_effects_crash import _lines
from .web_support import Client, Served, ServeProcess, approve, customer, customer_back

BUY = "I'd like to buy rocket skates"
AGAIN = "may already have happened"


def served_at(process: ServeProcess) -> Served:
    """A server started as a process, as the WebSocket helpers reach it (its hub lives over there)."""
    return Served(process.url, cast(SessionHub, None), process.token)


def text_of(frame: dict[str, Any]) -> str:
    return str(frame.get("text") or frame.get("prompt") or "")


async def until_text(page: Client, kind: str, text: str) -> dict[str, Any]:
    """The page's next frame of ``kind`` holding ``text`` (each wait bounded by the client)."""
    while True:
        frame = await page.recv()
        if frame["type"] == kind and text in text_of(frame):
            return frame


async def test_a_web_server_killed_inside_an_order_the_other_places_it_once(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders = tmp_path / "orders.txt"
    monkeypatch.setenv(ORDERS_FILE, str(orders))
    url = fresh_database(postgres_server)
    options = ("--store", url, "--team", "tests.effect_team:team")
    first, second = ServeProcess(*options), ServeProcess(*options)
    try:
        await asyncio.gather(first.start(), second.start())
        page, session = await customer(served_at(first))
        await page.until("question")
        await page.say(BUY)
        await page.say("yes", until="notice")  # the order waits for the operator
        await approve(served_at(first), session["session"])
        await _lines(orders, 1)  # placed: the tool now waits inside the call
        await first.stop(signal.SIGKILL)
        await page.socket.close()

        page, _ = await customer_back(served_at(second), session)  # the same session, the other server
        await until_text(page, "notice", "may or may not have happened")  # told at once, unasked
        await page.until("question")
        await page.say(BUY)
        await page.send({"type": "say", "text": "yes"})
        await until_text(page, "question", AGAIN)  # asked before a second order
        answered = await page.say("n", until="question")  # no second order
        [reply] = [f for f in answered if f["type"] == "reply"]
        assert "not run" in reply["text"]
        await page.socket.close()
    finally:
        await asyncio.gather(first.stop(), second.stop())
    assert orders.read_text().splitlines() == ["rocket skates 100"]  # exactly once
    store = await asyncio.to_thread(PostgresSessionStore, url)
    try:
        [effect] = await store.effects(session["session"])
    finally:
        await store.close()
    assert (effect.key.tool, effect.status) == ("execute_order", "pending")
