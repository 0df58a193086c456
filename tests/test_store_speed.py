"""A durable turn costs few store calls: no reads while the store holds the session, one PostgreSQL round
trip per write, the context stored by difference; and what the store keeps is dropped when it could be
wrong, so nothing is lost to it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import psycopg
from autogen_core import SingleThreadedAgentRuntime
from autogen_core.models import AssistantMessage, UserMessage

from handoffs_runtime import register_team, start_session, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import StoreConflictError
from handoffs_runtime.messages import AgentResponse, Person
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.recording import record_reply, record_user
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import NewEntry, SessionState, StoredEntry, entry_for_message
from handoffs_runtime.teams.acme import acme_team

from .postgres_support import PostgresServer, fresh_database
from .store_backends import Backend, Store

_STATEMENT = re.compile(r"LOG:\s+(statement|execute [^:]*):")


async def _run(channel: ScriptedChannel, store: Store, **models: ScriptedModel) -> None:
    runtime = SingleThreadedAgentRuntime()
    await register_team(
        runtime, acme_team(), model=ScriptedModel([]), models=models, channel=channel, store=store
    )
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()


class MarkingChannel(ScriptedChannel):
    """Notes how long the server's log is each time the person is asked: a turn is what lies between."""

    def __init__(self, log: Path, lines: list[str]) -> None:
        super().__init__(customer={"s1": lines})
        self.log = log
        self.marks: list[int] = []

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        self.marks.append(self.log.stat().st_size)
        return await super().ask(session_id, prompt, person=person)


def _statements(log: Path, start: int, end: int) -> list[str]:
    with log.open("rb") as text:
        text.seek(start)
        lines = text.read(end - start).decode(errors="replace").splitlines()
    return [line for line in lines if _STATEMENT.search(line)]


async def _logged_store(postgres_server: PostgresServer) -> PostgresSessionStore:
    """A store on a fresh database whose every statement the server logs."""
    url = fresh_database(postgres_server)
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET log_statement = 'all'".encode())
    return await asyncio.to_thread(PostgresSessionStore, url, lease_seconds=600)  # no heartbeat meanwhile


async def test_a_postgresql_turn_is_two_round_trips(postgres_server: PostgresServer) -> None:
    """The server logs every statement of the session's database; a turn (the person's message stored,
    the reply stored) is two statements, each its own round trip, and a handoff adds one."""
    store = await _logged_store(postgres_server)
    log = postgres_server.folder / "log"
    channel = MarkingChannel(log, ["hello", "skates please", "thanks"])
    triage = ScriptedModel(["Hi, how can I help?", [tool_call("transfer_to_sales_agent")]])
    sales = ScriptedModel(["Rocket skates, $500?", "You're welcome."])
    await _run(channel, store, TriageAgent=triage, SalesAgent=sales)
    await store.close()

    assert len(channel.marks) == 4  # three messages, then the person has left
    plain = _statements(log, channel.marks[0], channel.marks[1])
    handoff = _statements(log, channel.marks[1], channel.marks[2])
    assert 0 < len(plain) <= 2, plain  # the person's message; the reply with its context
    assert len(handoff) <= 3, handoff  # and the handoff event, stored before its line is shown
    assert not [s for s in plain + handoff if "BEGIN" in s or "SELECT" in s.split(":", 2)[-1][:12]]


async def test_opening_a_new_postgresql_session_and_ending_it_are_one_statement_each(
    postgres_server: PostgresServer,
) -> None:
    """Nobody holds a new session and this store holds the one it ends: one round trip each."""
    store = await _logged_store(postgres_server)
    log = postgres_server.folder / "log"
    start = log.stat().st_size
    state, created = await store.open_session("s1", agent="TriageAgent", team="acme")
    opened = log.stat().st_size
    await store.end_session("s1")
    ended = log.stat().st_size
    assert created and (state.active_agent, state.team, state.status, state.last_seq) == (
        "TriageAgent",
        "acme",
        "open",
        0,
    )
    assert len(_statements(log, start, opened)) == 1, _statements(log, start, opened)
    assert len(_statements(log, opened, ended)) == 1, _statements(log, opened, ended)
    assert (await store.get_session("s1")).status == "ended"
    await store.close()


class CountingStore(SQLiteSessionStore):
    """A real store that counts its reads."""

    reads = 0

    async def get_session(self, session_id: str) -> SessionState:
        self.reads += 1
        return await super().get_session(session_id)

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        self.reads += 1
        return await super().entries(session_id, after=after)


async def test_a_held_session_is_not_read_back_on_each_turn(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "s.sqlite3")
    channel = ScriptedChannel.for_sessions({"s1": ["hello", "skates please", "thanks"]})
    triage = ScriptedModel(["Hi, how can I help?", [tool_call("transfer_to_sales_agent")]])
    sales = ScriptedModel(["Rocket skates, $500?", "You're welcome."])
    await _run(channel, store, TriageAgent=triage, SalesAgent=sales)
    assert store.reads == 0
    kinds = [e.kind for e in await store.entries("s1")]
    assert kinds == [
        *("user", "reply"),
        *("user", "handoff", "tool_calls", "tool_results", "reply"),
        *("user", "reply"),
    ]
    await store.close()


async def test_the_context_stored_by_difference_is_the_whole_conversation(backend: Backend) -> None:
    store = backend.make()
    channel = ScriptedChannel.for_sessions({"s1": ["hello", "skates please", "thanks"]})
    triage = ScriptedModel(["Hi, how can I help?", [tool_call("transfer_to_sales_agent")]])
    sales = ScriptedModel(["Rocket skates, $500?", "You're welcome."])
    await _run(channel, store, TriageAgent=triage, SalesAgent=sales)
    await store.close()

    reader = backend.make()  # another process reads what was stored
    state = await reader.get_session("s1")
    said = [m.content for m in state.context if isinstance(m, UserMessage | AssistantMessage)]
    assert said[0] == "hello" and said[1] == "Hi, how can I help?"
    assert said[-2:] == ["thanks", "You're welcome."]
    stored = [m for e in await reader.entries("s1") if (m := e.message()) is not None]
    assert state.context == stored
    assert state.context_seq == state.last_seq == len(stored) + 1  # and the handoff event
    await reader.close()


async def test_a_writer_the_store_did_not_see_costs_a_read_not_an_entry(backend: Backend) -> None:
    """Entries another writer appended under the same lease (here: straight into the database) make the
    reply's compare-and-set fail; it reads what is stored and writes again, keeping both."""
    store = backend.make()
    await store.open_session("s1", agent="TriageAgent")
    said = UserMessage(content="hello", source="User")
    await record_user(store, "s1", said, agent="TriageAgent")
    backend.execute(
        "INSERT INTO messages (session_id, seq, agent, kind, body, created_at) "
        "VALUES ('s1', 2, 'runtime', 'notice', ?, 0)",
        ('{"text": "from elsewhere"}',),
    )
    backend.execute("UPDATE sessions SET last_seq = 2 WHERE id = 's1'")
    reply = AssistantMessage(content="Hi!", source="TriageAgent")
    await record_reply(store, "s1", AgentResponse(reply_to_topic_type="TriageAgent", context=[said, reply]))
    entries = await store.entries("s1")
    assert [(e.seq, e.kind) for e in entries] == [(1, "user"), (2, "notice"), (3, "reply")]
    state = await store.get_session("s1")
    assert state.context == [said, reply] and state.context_seq == 3
    await store.close()


async def test_appends_committed_together_are_answered_each_on_its_own(tmp_path: Path) -> None:
    """Appends that queue for the SQLite store's thread share one commit; one refused (a stale
    compare-and-set) takes nothing else with it, and each is answered with its own sequence number."""
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    for name in ("a", "b"):
        await store.open_session(name, agent="Agent")

    def said(text: str) -> list[NewEntry]:
        return [entry_for_message(UserMessage(content=text, source="User"))]

    writes = [store.append(name, said(f"{name}{n}")) for n in range(10) for name in ("a", "b")]
    stale = store.append("a", said("stale"), expected_seq=0)
    outcomes = await asyncio.gather(*writes[:5], stale, *writes[5:], return_exceptions=True)
    assert isinstance(outcomes[5], StoreConflictError)
    answered = [o for i, o in enumerate(outcomes) if i != 5]
    assert sorted(o for i, o in enumerate(answered) if i % 2 == 0) == list(range(1, 11))  # session a
    assert sorted(o for i, o in enumerate(answered) if i % 2 == 1) == list(range(1, 11))  # session b
    assert store.failure is None
    await store.close()

    reader = SQLiteSessionStore(tmp_path / "s.sqlite3", read_only=True)
    assert [e.text for e in await reader.entries("a")] == [f"a{n}" for n in range(10)]
    assert (await reader.get_session("b")).last_seq == 10
    await reader.close()
