"""An irreversible tool behind the gRPC host: the worker that runs it is killed with SIGKILL inside the
call and restarted while the front end sends the person's message again. With the front ends' store
(``handoffs worker --store``) the order's own side effect (a line in a file) happens exactly once, and
the person is told that it may or may not have happened."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handoffs_runtime import Event, Notice, Question, QueueChannel, Reply
from handoffs_runtime.distributed import FrontEnd, launch_worker
from handoffs_runtime.distributed.worker import start_worker
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.teams.acme import acme_team

from .distributed_support import TIMEOUT, Process, start_host
from .effect_team import ORDERS_FILE
from .effect_team import team as effect_team
from .test_effects_crash import _lines

TEAM = ("--team", "tests.effect_team:team")
BUY = "I'd like to buy rocket skates"
AGAIN = "may already have happened"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteSessionStore]:
    opened = await asyncio.to_thread(SQLiteSessionStore, tmp_path / "s.sqlite3")
    yield opened
    await opened.close()


async def sales_worker(address: str, store: Path | None) -> Process:
    """The agent with the order tool, in a process of its own (with the ledger when ``store`` is given)."""
    ledger = () if store is None else ("--store", str(store))
    return await launch_worker(address, agents=["SalesAgent"], options=[*TEAM, *ledger])


async def until(channel: QueueChannel, wanted: type[Event], text: str) -> Event:
    """The next output of type ``wanted`` holding ``text`` (bounded: each wait is ``TIMEOUT``)."""
    while True:
        output = await channel.next_output("s1", TIMEOUT)
        shown = getattr(output, "text", None) or getattr(output, "prompt", "")
        if isinstance(output, wanted) and text in shown:
            return output


@contextlib.asynccontextmanager
async def killed_inside_an_order(
    processes: list[Process], tmp_path: Path, store: SQLiteSessionStore, *, ledger: bool
) -> AsyncIterator[QueueChannel]:
    """Order once, kill the sales worker inside the tool, say "yes" again while it is down and restart
    it: yields the person's channel, on which the restarted worker answers that second "yes"."""
    host, address = await start_host()
    processes.append(host)
    processes.append(await launch_worker(address, agents=["TriageAgent"], options=TEAM))
    where = tmp_path / "s.sqlite3" if ledger else None
    sales = await sales_worker(address, where)
    processes.append(sales)
    channel = QueueChannel()
    front = FrontEnd(effect_team, address, channel, store=store, turn_timeout=3.0, redeliver_for=TIMEOUT)
    async with front:
        await front.open("s1")
        await channel.say("s1", BUY)
        await until(channel, Reply, "Shall I go ahead?")
        await channel.say("s1", "yes")
        await _lines(tmp_path / "orders.txt", 1)  # placed: the tool now waits inside the call
        await sales.kill()
        await until(channel, Notice, "did not get your last message")
        await channel.say("s1", "yes")  # nobody serves the agent: the front end sends it again...
        processes.append(await sales_worker(address, where))  # ...until the restarted worker takes it
        yield channel
        await channel.leave("s1")
        await front.wait("s1")


async def test_a_worker_killed_inside_an_order_and_restarted_places_it_once(
    processes: list[Process], tmp_path: Path, store: SQLiteSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders = tmp_path / "orders.txt"
    monkeypatch.setenv(ORDERS_FILE, str(orders))
    async with killed_inside_an_order(processes, tmp_path, store, ledger=True) as channel:
        asked = await until(channel, Question, AGAIN)  # the truth, before anything runs again
        assert "the session stopped while it ran, and nobody can tell" in asked.prompt  # type: ignore[attr-defined]
        await channel.say("s1", "n")  # no second order
        await until(channel, Reply, "")
    assert orders.read_text().splitlines() == ["rocket skates 100"]  # exactly once
    [effect] = await store.effects("s1")
    assert (effect.key.tool, effect.status) == ("execute_order", "pending")  # nobody knows: kept as such
    # The question and its answer are kept once, by the front end (the worker writes no conversation).
    questions = [e.body for e in await store.entries("s1") if e.kind == "question"]
    assert [(q["answer"], AGAIN in str(q["prompt"])) for q in questions] == [("n", True)]


async def test_without_the_ledger_the_restarted_worker_orders_again(
    processes: list[Process], tmp_path: Path, store: SQLiteSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run with a worker started without ``--store``: the gap the option closes."""
    orders = tmp_path / "orders.txt"
    monkeypatch.setenv(ORDERS_FILE, str(orders))
    async with killed_inside_an_order(processes, tmp_path, store, ledger=False):
        assert len(await _lines(orders, 2)) == 2  # the resent "yes" placed a second order


async def test_a_worker_store_must_keep_the_ledger() -> None:
    with pytest.raises(DistributedError, match="keeps no effect ledger"):
        await start_worker(acme_team(), "127.0.0.1:1", store=object())  # type: ignore[arg-type]
