"""Durable sessions on the real runtime: recording, resume, 100 sessions at once, a waiting human, release."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autogen_core import SingleThreadedAgentRuntime
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import Notice, QueueChannel, register_team, start_session, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Person
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel, ScriptedModel
from handoffs_runtime.runtime.release import SessionActivity, live_sessions, release_idle, release_session
from handoffs_runtime.sessions.recording import UNANSWERED
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import NewEntry, entry_for_message
from handoffs_runtime.teams.acme import acme_team

from .store_backends import Backend, Store
from .support import texts


async def _run(
    channel: ScriptedChannel,
    store: Store,
    sessions: Sequence[str] = ("s1",),
    **models: ScriptedModel,
) -> None:
    runtime = SingleThreadedAgentRuntime()
    await register_team(
        runtime, acme_team(), model=ScriptedModel([]), models=models, channel=channel, store=store
    )
    runtime.start()
    for session in sessions:
        await start_session(runtime, session)
    await runtime.stop_when_idle()


def _notices(channel: ScriptedChannel, session: str = "s1") -> list[str]:
    return [o.text for o in channel.shown[session] if isinstance(o, Notice)]


class SlowEvents(SQLiteSessionStore):
    """A real store whose handoff events take a while to write (a busy database, a slow disk)."""

    async def append(self, session_id: str, entries: Sequence[NewEntry], **options: Any) -> int:
        if entries and entries[0].kind == "handoff":
            await asyncio.sleep(0.3)
        return await super().append(session_id, entries, **options)


async def test_a_slow_handoff_event_is_stored_before_the_reply_that_followed_it(tmp_path: Path) -> None:
    store = SlowEvents(tmp_path / "s.sqlite3")
    channel = ScriptedChannel.for_sessions({"s1": ["I want to buy skates"]})  # then it ends on the reply
    await _run(
        channel,
        store,
        TriageAgent=ScriptedModel([[tool_call("transfer_to_sales_agent")]]),
        SalesAgent=ScriptedModel(["Rocket skates, $500?"]),
    )
    kinds = [e.kind for e in await store.entries("s1")]
    assert kinds == ["user", "handoff", "tool_calls", "tool_results", "reply"]
    assert not [n for n in _notices(channel) if n.startswith("⚠")]
    await store.close()


async def test_a_session_resumes_with_its_active_agent_and_context(backend: Backend) -> None:
    store = backend.make()
    first = ScriptedChannel.for_sessions({"s1": ["I want to buy skates"]})
    await _run(
        first,
        store,
        TriageAgent=ScriptedModel([[tool_call("transfer_to_sales_agent")]]),
        SalesAgent=ScriptedModel(["Rocket skates, $500?"]),
    )
    assert (await store.get_session("s1")).status == "ended"
    await store.close()

    store = backend.make()  # a new process, as far as the store can tell
    sales = ScriptedModel(["Ordered."])
    second = ScriptedChannel.for_sessions({"s1": ["yes please"]})
    await _run(second, store, TriageAgent=ScriptedModel([]), SalesAgent=sales)

    assert texts(second) == [("SalesAgent", "Ordered.")]  # the person's words went to Sales, not Triage
    seen, _ = sales.calls[0]
    said = [(type(m).__name__, m.content) for m in seen if isinstance(m, UserMessage | AssistantMessage)]
    assert ("UserMessage", "I want to buy skates") in said and (
        "AssistantMessage",
        "Rocket skates, $500?",
    ) in said
    assert said[-1] == ("UserMessage", "yes please")
    notices = _notices(second)
    assert notices[0] == "resuming session s1 with ACME sales (5 messages stored)"
    assert notices[1:3] == ["  you › I want to buy skates", "  ACME sales › Rocket skates, $500?"]
    kinds = [e.kind for e in await store.entries("s1")]
    assert kinds == ["user", "handoff", "tool_calls", "tool_results", "reply", "user", "reply"]
    sales.assert_done()
    await store.close()


async def test_an_unanswered_message_is_reported_not_replayed(backend: Backend) -> None:
    store = backend.make()
    await store.open_session("s1", agent="TriageAgent")
    await store.append("s1", [entry_for_message(UserMessage(content="refund my order", source="User"))])
    triage = ScriptedModel(["How can I help?"])
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    await _run(channel, store, TriageAgent=triage)

    assert any(
        "your last message was not answered" in n and "refund my order" in n for n in _notices(channel)
    )
    seen, _ = triage.calls[0]
    assert [m.content for m in seen if isinstance(m, UserMessage)] == ["hello"]
    entries = await store.entries("s1")
    assert [(e.kind, e.text) for e in entries] == [
        ("user", "refund my order"),
        ("notice", UNANSWERED),
        ("user", "hello"),
        ("reply", "How can I help?"),
    ]
    await store.close()


async def test_nothing_is_sent_when_the_store_fails(backend: Backend) -> None:
    store = backend.make()
    await store.close()
    triage = ScriptedModel([])
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    await _run(channel, store, TriageAgent=triage)
    assert triage.calls == []
    assert any(n.startswith("⚠ the session could not be opened") for n in _notices(channel))
    assert channel.asked["s1"] == []  # the person was not asked for words that could not be kept


def _router(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
    last = messages[-1]
    if isinstance(last, UserMessage) and "buy" in str(last.content):
        return [tool_call("transfer_to_sales_agent")]
    if isinstance(last, UserMessage) and "person" in str(last.content):
        return [tool_call("escalate_to_human")]
    return f"triage heard {last.content}"


def _sales(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
    said = [m.content for m in messages if isinstance(m, UserMessage)]
    return f"sales heard {said[-1]}"


async def test_100_concurrent_sessions_store_complete_ordered_transcripts(backend: Backend) -> None:
    store = backend.make()
    sessions = [f"c{n:03d}" for n in range(100)]
    channel = ScriptedChannel.for_sessions(
        {s: [f"{s} wants to buy", f"{s} second", f"{s} third"] for s in sessions}
    )
    runtime = SingleThreadedAgentRuntime()
    models = {"TriageAgent": FunctionModel(_router), "SalesAgent": FunctionModel(_sales)}
    await register_team(
        runtime, acme_team(), model=ScriptedModel([]), models=models, channel=channel, store=store
    )
    runtime.start()
    await asyncio.gather(*(start_session(runtime, s) for s in sessions))
    await runtime.stop_when_idle()

    for s in sessions:
        entries = await store.entries(s)
        assert [e.seq for e in entries] == list(range(1, 10)), s
        assert [e.kind for e in entries] == [
            "user",
            "handoff",
            "tool_calls",
            "tool_results",
            "reply",
            "user",
            "reply",
            "user",
            "reply",
        ], s
        spoken = [e.text for e in entries if e.kind in ("user", "reply")]
        assert spoken == [
            f"{s} wants to buy",
            f"sales heard {s} wants to buy",
            f"{s} second",
            f"sales heard {s} second",
            f"{s} third",
            f"sales heard {s} third",
        ]
        state = await store.get_session(s)
        assert (state.active_agent, state.status, state.context_seq) == ("SalesAgent", "ended", 9)
        assert state.context[-1] == AssistantMessage(content=f"sales heard {s} third", source="SalesAgent")
    assert len(await store.list_sessions()) == 100
    await store.close()


class WatchedQueue(QueueChannel):
    """A ``QueueChannel`` that tells the test when a person is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: dict[tuple[str, Person], asyncio.Event] = {}

    def asked(self, session: str, person: Person) -> asyncio.Event:
        return self.waiting.setdefault((session, person), asyncio.Event())

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        self.asked(session_id, person).set()
        return await super().ask(session_id, prompt, person=person)


async def test_a_session_waiting_on_a_person_does_not_hold_up_50_others() -> None:
    store = SQLiteSessionStore(":memory:")
    channel = WatchedQueue()
    runtime = SingleThreadedAgentRuntime()
    ended: list[str] = []
    all_ended = asyncio.Event()

    def on_end(session: str) -> None:  # the runtime releases the session's agents after this
        ended.append(session)
        if len(ended) == 50:
            all_ended.set()

    await register_team(
        runtime,
        acme_team(),
        model=FunctionModel(_router),
        channel=channel,
        store=store,
        on_session_end=on_end,
    )
    runtime.start()
    await start_session(runtime, "waiting")
    await channel.say("waiting", "let me talk to a person")
    await channel.asked("waiting", "operator").wait()  # the operator is asked, and never answers (yet)

    others = [f"o{n}" for n in range(50)]

    async def customer(session: str) -> str:
        await start_session(runtime, session)
        await channel.say(session, "hello")
        reply = await channel.next_reply(session)
        await channel.leave(session)
        return reply.text

    # The timeout only turns a stall into a failure instead of a hung test run.
    replies = await asyncio.wait_for(asyncio.gather(*(customer(s) for s in others)), timeout=60)
    await asyncio.wait_for(all_ended.wait(), timeout=60)
    assert replies == ["triage heard hello"] * 50
    assert sorted(ended) == sorted(others)
    assert "waiting" in live_sessions(runtime) and live_sessions(runtime) <= {"waiting"}
    assert (await store.get_session("waiting")).status == "open"

    await channel.say("waiting", "Sam here, how can I help?", person="operator")
    assert (await channel.next_reply("waiting")).text == "Sam here, how can I help?"
    await channel.leave("waiting")
    await runtime.stop_when_idle()
    assert (await store.get_session("waiting")).active_agent == "HumanAgent"
    assert live_sessions(runtime) == set()
    await store.close()


async def test_an_idle_session_is_released_and_carries_on_with_fresh_agents() -> None:
    now = [0.0]
    activity = SessionActivity(clock=lambda: now[0])
    runtime = SingleThreadedAgentRuntime(intervention_handlers=[activity])
    triage = FunctionModel(_router)
    channel = WatchedQueue()
    await register_team(runtime, acme_team(), model=triage, channel=channel)
    runtime.start()
    await start_session(runtime, "a")
    await channel.say("a", "first")
    assert (await channel.next_reply("a")).text == "triage heard first"
    assert live_sessions(runtime) == {"a"}

    now[0] = 100.0
    assert release_idle(runtime, activity, idle_for=500) == []
    assert release_idle(runtime, activity, idle_for=50) == ["a"]
    assert live_sessions(runtime) == set()
    assert not any(t.source == "a" for t in runtime._subscription_manager._seen_topics)

    await channel.say("a", "second")
    assert (await channel.next_reply("a")).text == "triage heard second"
    said = [m.content for m in triage.calls[-1][0] if isinstance(m, UserMessage)]
    assert said == ["first", "second"]  # the fresh instance got the whole conversation
    await channel.leave("a")
    await runtime.stop_when_idle()


async def test_finished_sessions_are_released_unless_asked_not_to() -> None:
    for release_ended, expected in ((True, set()), (False, {"a", "b"})):
        runtime = SingleThreadedAgentRuntime()
        channel = ScriptedChannel.for_sessions({"a": ["hi"], "b": ["hello"]})
        model = FunctionModel(_router)
        await register_team(runtime, acme_team(), model=model, channel=channel, release_ended=release_ended)
        runtime.start()
        await start_session(runtime, "a")
        await start_session(runtime, "b")
        await runtime.stop_when_idle()
        assert texts(channel, "b") == [("TriageAgent", "triage heard hello")]
        assert live_sessions(runtime) == expected
        assert release_session(runtime, "a") == (0 if release_ended else 2)  # User and TriageAgent


async def test_a_session_stored_by_another_team_resumes_with_this_teams_entry_agent(
    backend: Backend,
) -> None:
    from handoffs_runtime import AgentSpec, TeamSpec

    store = backend.make()
    first = ScriptedChannel.for_sessions({"s1": ["I want to buy skates"]})
    await _run(
        first,
        store,
        TriageAgent=ScriptedModel([[tool_call("transfer_to_sales_agent")]]),
        SalesAgent=ScriptedModel(["Rocket skates, $500?"]),
    )
    other = TeamSpec(name="other", entry="Desk", agents=[AgentSpec("Desk")])
    channel = ScriptedChannel.for_sessions({"s1": ["hello again"]})
    desk = ScriptedModel(["Desk here."])
    runtime = SingleThreadedAgentRuntime()
    await register_team(runtime, other, model=desk, channel=channel, store=store)
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    assert texts(channel) == [("Desk", "Desk here.")]
    assert any("was with SalesAgent, which team other does not have" in n for n in _notices(channel))
    await store.close()
