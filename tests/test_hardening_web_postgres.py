"""A PostgreSQL store that hangs instead of refusing: the person hears of it within the promised bound.

A stopped server (SIGSTOP on every process of the test's own cluster) accepts connections and answers
nothing, and a row lock held by another client stalls a write the same way; both are outages, told to
the person whose turn waits, and the turn goes on once the database does.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
import pytest
from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.sessions.outage import DELAYED, RECOVERED
from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.postgres.store import HUNG_SECONDS
from handoffs_runtime.teams.acme import acme_team

from .postgres_support import PostgresServer, start_server
from .support import run_sessions, texts

HUNG_FOR = 2 * HUNG_SECONDS
"""How long the test keeps the database stopped: well past the bound the person is promised."""


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    server = start_server()
    yield server
    server.remove()


def cluster_pids(server: PostgresServer) -> list[int]:
    """The postmaster and every process it started."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                children.append(int(entry.name))
    return [postmaster, *children]


class Hang:
    """Stops the whole cluster now, and lets it go on ``seconds`` later; records what the person hears."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.stopped = threading.Event()
        self.heard: list[tuple[str, bool]] = []
        """Each line the person was told, and whether the database was still stopped then."""

    def signal(self, sig: signal.Signals) -> None:
        for pid in cluster_pids(self.server):
            os.kill(pid, sig)

    def now_for(self, seconds: float) -> None:
        self.signal(signal.SIGSTOP)
        self.stopped.set()

        def go_on() -> None:
            self.stopped.clear()
            self.signal(signal.SIGCONT)

        threading.Timer(seconds, go_on).start()

    async def listener(self, session: str, text: str) -> None:
        self.heard.append((text, self.stopped.is_set()))


async def test_a_hung_database_gives_the_person_the_outage_notice_while_it_hangs(
    own_server: PostgresServer,
) -> None:
    store = await asyncio.to_thread(PostgresSessionStore, own_server.url, outage_seconds=120)
    hang = Hang(own_server)
    store.report_delays(hang.listener)

    def answer(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        hang.now_for(HUNG_FOR)
        return "Your order ships tomorrow."

    channel = ScriptedChannel.for_sessions({"s1": ["where is my order?"]})
    try:
        await run_sessions(acme_team(), channel, models={"TriageAgent": FunctionModel(answer)}, store=store)
    finally:
        hang.signal(signal.SIGCONT)  # whatever happened, the cluster is not left stopped
    assert (DELAYED, True) in hang.heard, hang.heard  # told while the database still hung
    assert hang.heard[-1][0] == RECOVERED
    assert texts(channel) == [("TriageAgent", "Your order ships tomorrow.")]
    assert [(e.kind, e.text) for e in await store.entries("s1")] == [
        ("user", "where is my order?"),
        ("reply", "Your order ships tomorrow."),
    ]
    await store.close()


async def test_a_row_lock_held_by_another_client_is_an_outage_told_to_the_person(
    own_server: PostgresServer,
) -> None:
    store = await asyncio.to_thread(PostgresSessionStore, own_server.url, outage_seconds=120)
    heard: list[tuple[str, float]] = []

    async def listener(session: str, text: str) -> None:
        heard.append((text, time.monotonic()))

    store.report_delays(listener)
    await store.claim("s1")
    await store.open_session("s1", agent="TriageAgent")
    with psycopg.connect(own_server.url, options=f"-c search_path={store.schema}") as other:
        other.execute("SELECT 1 FROM sessions WHERE id = 's1' FOR UPDATE")  # held until rolled back
        released = threading.Timer(HUNG_FOR, other.rollback)
        released.start()
        try:
            await store.end_session("s1")
        finally:
            released.join()
    assert [text for text, _ in heard] == [DELAYED, RECOVERED]
    assert heard[1][1] - heard[0][1] > HUNG_SECONDS  # told well before the lock was let go
    assert (await store.get_session("s1")).status == "ended"
    await store.close()
