"""The human agent: a live conversation where the operator is apart, one answer a turn on one keyboard."""

from __future__ import annotations

import asyncio
from pathlib import Path

from autogen_core.models import AssistantMessage, UserMessage

from handoffs_runtime import OfflineModel, SQLiteSessionStore, start_session
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Event, Question, Reply
from handoffs_runtime.teams.acme import acme_team

from .event_support import started
from .support import run_sessions, texts


async def open_question(channel: EventChannel, session: str, person: str) -> Question:
    while (question := channel.waiting(session, person)) is None:  # type: ignore[arg-type]
        await asyncio.sleep(0.005)
    return question


class Watched:
    """A session's events, read as they come."""

    def __init__(self, channel: EventChannel, session: str) -> None:
        self.seen: list[Event] = []
        self.task = asyncio.ensure_future(self._read(channel, session))

    async def _read(self, channel: EventChannel, session: str) -> None:
        async for event in channel.events(session):
            self.seen.append(event)

    async def until(self, count: int, agent: str) -> None:
        """Until ``agent`` has replied ``count`` times."""
        while len([e for e in self.seen if isinstance(e, Reply) and e.agent == agent]) < count:
            await asyncio.sleep(0.01)


async def test_both_write_at_once_and_the_conversation_stays_one(tmp_path: Path) -> None:
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    runtime, channel = await started(acme_team(), OfflineModel(), store=store)
    watched = Watched(channel, "s1")
    await start_session(runtime, "s1")
    await open_question(channel, "s1", "customer")
    await channel.answer("s1", "let me talk to a person")
    await open_question(channel, "s1", "operator")
    await open_question(channel, "s1", "customer")  # the customer may write while they wait
    customer = [f"customer line {i}" for i in range(6)]
    operator = [f"operator line {i}" for i in range(6)]
    for i, (mine, theirs) in enumerate(zip(customer, operator, strict=True)):  # each pair at one moment
        await channel.answer("s1", mine)
        await channel.answer("s1", theirs, person="operator")
        await asyncio.sleep(0.002 * (i % 3))
    await watched.until(len(operator), "HumanAgent")
    await open_question(channel, "s1", "operator")
    await channel.hand_back("s1", "TriageAgent")  # the operator's button: a value, not typed text
    await watched.until(1, "TriageAgent")
    await channel.answer("s1", "exit")  # after whatever the customer wrote: the session ends when all is done
    await watched.task
    written = set(customer + operator)
    said = [e.text for e in await store.entries("s1") if e.kind in ("user", "reply") and e.text in written]
    assert sorted(said) == sorted(written)  # each once
    assert [t for t in said if t in customer] == customer  # each in its own order
    assert [t for t in said if t in operator] == operator
    context = (await store.get_session("s1")).context  # what the assistant was handed: all of it, once
    words = [m.content for m in context if isinstance(m, UserMessage | AssistantMessage)]
    assert [w for w in words if isinstance(w, str) and w in written] == said  # in the order stored
    await runtime.stop_when_idle()
    await store.close()


async def test_on_one_keyboard_an_empty_line_is_asked_again_not_sent() -> None:
    channel = ScriptedChannel.for_sessions({"s1": ["let me talk to a person"]}, operator=["", "  ", "Hello"])
    await run_sessions(acme_team(), channel, model=OfflineModel())
    assert texts(channel) == [("HumanAgent", "Hello")]
    operator = [prompt for person, prompt in channel.asked["s1"] if person == "operator"]
    assert len(operator) == 3 and operator[1] == operator[0]
