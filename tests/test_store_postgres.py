"""What only a store shared by several machines must do, on a real PostgreSQL server: races between
processes, clocks that disagree, a schema migrated once, and outages."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import Notice
from handoffs_runtime.channels.base import describe
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import SessionBusyError, StoreError
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.sessions.outage import DELAYED, RECOVERED, ReportsDelays
from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.postgres.schema import SCHEMA_VERSION
from handoffs_runtime.teams.acme import acme_team

from .postgres_support import PostgresServer, fresh_schema, start_server
from .support import run_sessions, texts

ROOT = Path(__file__).resolve().parent.parent


class Claimer:
    """A child process with its own store (tests/pg_claimer.py): another front end, as far as anyone knows."""

    def __init__(self, url: str, schema: str, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.pg_claimer", url, schema, *options],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.read() == "ready"

    def read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@pytest.fixture
def schema(postgres_server: PostgresServer) -> str:
    return fresh_schema()


@pytest.fixture
async def store(postgres_server: PostgresServer, schema: str) -> AsyncIterator[PostgresSessionStore]:
    opened = await asyncio.to_thread(PostgresSessionStore, postgres_server.url, schema=schema)
    yield opened
    await opened.close()


def test_two_processes_claiming_one_session_exactly_one_wins_20_of_20(
    postgres_server: PostgresServer, schema: str
) -> None:
    PostgresSessionStore(postgres_server.url, schema=schema).close_now()  # the schema, before the race
    pair = [Claimer(postgres_server.url, schema), Claimer(postgres_server.url, schema)]
    try:
        for n in range(20):
            for claimer in pair:  # both are waiting on their input: this starts them together
                claimer.send(f"open race-{n}")
            answers = sorted(claimer.read() for claimer in pair)
            assert answers == [f"busy race-{n}", f"won race-{n}"], answers
    finally:
        for claimer in pair:
            claimer.kill()


async def test_a_crashed_holder_whose_clock_is_an_hour_ahead_expires_on_the_databases_time(
    postgres_server: PostgresServer, schema: str, store: PostgresSessionStore
) -> None:
    """Judged by its own clock, the holder's 2 s lease would last an hour and 2 s."""
    holder = Claimer(
        postgres_server.url, schema, "--clock-offset", "3600", "--host", "far-away", "--lease", "2"
    )
    holder.send("open s")
    assert holder.read() == "won s"
    holder.kill()  # no release: only the lease's expiry frees the session
    with pytest.raises(SessionBusyError, match="far-away"):
        await store.claim("s")
    started = time.monotonic()
    while True:
        try:
            await store.claim("s")
            break
        except SessionBusyError:
            assert time.monotonic() - started < 30, "the lease did not expire on the database's time"
            await asyncio.sleep(0.2)


async def test_a_live_holder_whose_clock_is_an_hour_behind_keeps_its_session(
    postgres_server: PostgresServer, schema: str, store: PostgresSessionStore
) -> None:
    """Judged by its own clock, the holder's lease would have run out an hour ago at every renewal."""
    holder = Claimer(
        postgres_server.url, schema, "--clock-offset", "-3600", "--host", "far-away", "--lease", "1"
    )
    try:
        holder.send("open s")
        assert holder.read() == "won s"
        for _ in range(6):  # three lease lengths: its renewals keep it
            with pytest.raises(SessionBusyError, match="far-away"):
                await store.claim("s")
            await asyncio.sleep(0.5)
    finally:
        holder.kill()


def test_front_ends_starting_together_migrate_the_schema_once(postgres_server: PostgresServer) -> None:
    schema = fresh_schema()
    with ThreadPoolExecutor(8) as pool:
        stores = list(pool.map(lambda _: PostgresSessionStore(postgres_server.url, schema=schema), range(8)))
    for opened in stores:
        opened.close_now()
    with psycopg.connect(postgres_server.url) as conn:
        rows = conn.execute(f"SELECT version FROM {schema}.schema_version").fetchall()
    assert rows == [(SCHEMA_VERSION,)]


def test_a_newer_or_foreign_schema_is_refused_and_left_as_is(postgres_server: PostgresServer) -> None:
    newer, foreign = fresh_schema(), fresh_schema()
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {newer}")
        conn.execute(f"CREATE TABLE {newer}.schema_version (version integer NOT NULL)")
        conn.execute(f"INSERT INTO {newer}.schema_version VALUES ({SCHEMA_VERSION + 3})")
        conn.execute(f"CREATE SCHEMA {foreign}")
        conn.execute(f"CREATE TABLE {foreign}.invoices (id integer)")
    newer_message = (
        rf"newer handoffs-runtime \(schema {SCHEMA_VERSION + 3}; this version reads up to {SCHEMA_VERSION}\)"
    )
    with pytest.raises(StoreError, match=newer_message):
        PostgresSessionStore(postgres_server.url, schema=newer)
    with pytest.raises(StoreError, match=r"holds other tables \(invoices\), not a session store"):
        PostgresSessionStore(postgres_server.url, schema=foreign)
    with psycopg.connect(postgres_server.url) as conn:
        assert conn.execute(f"SELECT version FROM {newer}.schema_version").fetchall() == [
            (SCHEMA_VERSION + 3,)
        ]
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (foreign,)
        ).fetchall()
        assert tables == [("invoices",)]


def test_a_server_that_cannot_be_reached_is_one_clear_error_without_the_password() -> None:
    with pytest.raises(StoreError) as refused:
        PostgresSessionStore("postgresql://shop:s3cret@127.0.0.1:9/shop", connect_timeout=2)
    message = str(refused.value)
    assert message.startswith("cannot connect to the session store PostgreSQL database shop on 127.0.0.1:9 (")
    assert "check the URL, that the server runs" in message and "s3cret" not in message


# --- outages -------------------------------------------------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of the test's own, to stop and start without disturbing the other tests."""
    server = start_server()
    yield server
    server.remove()


def _down_during_the_turn(server: PostgresServer, seconds: float | None) -> FunctionModel:
    """A model that stops the database as it answers, and starts it again ``seconds`` later (or never)."""

    def answer(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        server.stop()
        if seconds is not None:
            threading.Timer(seconds, server.start).start()
        return "Your order ships tomorrow."

    return FunctionModel(answer)


async def _one_turn(store: PostgresSessionStore, model: FunctionModel) -> ScriptedChannel:
    channel = ScriptedChannel.for_sessions({"s1": ["where is my order?"]})
    await run_sessions(acme_team(), channel, models={"TriageAgent": model}, store=store)
    return channel


def _notices(channel: ScriptedChannel) -> list[str]:
    """Each notice as the console shows it: its text, then its detail (the store's own words)."""
    return [describe(o) for o in channel.shown["s1"] if isinstance(o, Notice)]


async def test_a_5_second_outage_during_a_turn_delays_it_and_loses_nothing(
    own_server: PostgresServer,
) -> None:
    store = await asyncio.to_thread(PostgresSessionStore, own_server.url, outage_seconds=60)
    assert isinstance(store, ReportsDelays)
    started = time.monotonic()
    channel = await _one_turn(store, _down_during_the_turn(own_server, 5.0))
    assert time.monotonic() - started >= 5
    assert texts(channel) == [("TriageAgent", "Your order ships tomorrow.")]
    notices = _notices(channel)
    assert notices.index(DELAYED) < notices.index(RECOVERED)
    assert not [n for n in notices if "could not be saved" in n]
    entries = await store.entries("s1")
    assert [(e.kind, e.text) for e in entries] == [
        ("user", "where is my order?"),
        ("reply", "Your order ships tomorrow."),
    ]
    state = await store.get_session("s1")
    assert (state.status, state.context_seq, state.last_seq) == ("ended", 2, 2)
    await store.close()


async def test_a_longer_outage_ends_the_turn_with_one_clear_line_and_keeps_what_was_said(
    own_server: PostgresServer,
) -> None:
    store = await asyncio.to_thread(PostgresSessionStore, own_server.url, outage_seconds=2)
    channel = await _one_turn(store, _down_during_the_turn(own_server, None))
    assert texts(channel) == []  # nothing unsaved is shown
    failed = [n for n in _notices(channel) if "could not be saved" in n]
    assert len(failed) == 1 and failed[0].startswith(
        "⚠ the session could not be saved, so it stops: the session store PostgreSQL database postgres on "
        f"127.0.0.1:{own_server.port} did not answer for 2 s ("
    )
    assert failed[0].endswith("); everything stored before is kept") and "\n" not in failed[0]
    assert store.failure is not None
    await store.close()
    own_server.start()
    after = await asyncio.to_thread(PostgresSessionStore, own_server.url)
    assert [(e.kind, e.text) for e in await after.entries("s1")] == [("user", "where is my order?")]
    await after.close()
