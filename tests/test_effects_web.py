"""Effects and approvals over the web.

Two web servers on one PostgreSQL store, one killed with SIGKILL inside an irreversible tool: the customer
goes on with the other, which finds the turn's effect in the shared ledger; the order's own side effect (a
line in a file) happens exactly once, and the customer is told the truth. And an operator's approval given
after the customer left, or after its turn ended, does not run the tool; the operator is told."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.web.hub import SessionHub

from .effect_team import ORDERS_FILE
from .effect_team import team as effect_team
from .postgres_support import PostgresServer, fresh_database
from .test_effects_crash import WAIT, _lines
from .web_support import (
    Client,
    Served,
    ServeProcess,
    approve,
    customer,
    customer_back,
    operator,
    served,
    waiting_list,
)

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
        await page.send({"type": "say", "text": "yes", **page.answering()})
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


@contextlib.asynccontextmanager
async def approval_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **policy: Any
) -> AsyncIterator[tuple[Served, Client, Client, str]]:
    """A server whose customer asked for an order that now waits for the operator's approval: yields
    the server, a signed-in operator who holds the session, the customer's page and the session."""
    monkeypatch.setenv(ORDERS_FILE, str(tmp_path / "orders.txt"))
    monkeypatch.setenv("EFFECT_TEST_SLEEP", "0")
    team = replace(effect_team, policy=replace(effect_team.policy, **policy))
    async with served(tmp_path, team=team, idle_seconds=0.2) as server:
        page, session = await customer(server)
        sid = session["session"]
        await page.until("question")
        await page.say(BUY)
        await page.send({"type": "say", "text": "yes", **page.answering()})
        console = await operator(server)
        await waiting_list(console, (sid, "approval"))
        await console.send({"type": "take", "session": sid})
        await console.until("taken", session=sid)
        try:
            yield server, console, page, sid
        finally:
            await console.socket.close()
            await page.socket.close()


async def ended(server: Served, sid: str) -> None:
    """Wait (bounded) until the session is over on the server: its turn has run to the end."""
    async with asyncio.timeout(WAIT):
        while server.hub.is_live(sid):
            await asyncio.sleep(0.05)


async def test_an_approval_given_after_the_customer_left_does_not_run_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with approval_waiting(tmp_path, monkeypatch) as (server, console, page, sid):
        await page.socket.close()  # the customer leaves while the order waits for the operator
        async with asyncio.timeout(WAIT):
            while not server.hub.channel.has_left(sid):
                await asyncio.sleep(0.05)
        await console.send({"type": "say", "session": sid, "text": "yes", **console.answering()})
        released = (await console.until("released", session=sid))[-1]
        assert released["text"] == "Void: the customer had left the session, so nothing was run."
        await ended(server, sid)
    assert not (tmp_path / "orders.txt").exists()


async def test_an_approval_given_after_its_turn_ended_does_not_run_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with approval_waiting(tmp_path, monkeypatch, approval_max_age=1.0) as waiting:
        _, console, page, sid = waiting
        await page.until("question")  # nobody approved in time: the turn is over, the customer asked again
        told = await until_text(console, "notice", "expired")  # the operator holding it reads why
        assert "Nothing was done" in told["text"]
        await console.send({"type": "say", "session": sid, "text": "yes", **console.answering()})  # too late
        assert (await console.until("error"))[-1]["message"] == "the session is not waiting for your answer"
        await page.say("bye", until="reply")
    assert not (tmp_path / "orders.txt").exists()
