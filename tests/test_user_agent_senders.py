"""The person's side checks who is talking: a reply, question, notice, progress or handoff event reaches
the person only from the team's agents and for their own session; anything else is dropped and logged."""

from __future__ import annotations

import asyncio

import pytest
from autogen_core import (
    AgentId,
    RoutedAgent,
    SingleThreadedAgentRuntime,
)
from autogen_core.models import AssistantMessage

from handoffs_runtime import QueueChannel, register_team, start_session
from handoffs_runtime.messages import (
    AgentResponse,
    Delta,
    Event,
    HandoffEvent,
    HandoffLine,
    Notice,
    PersonAnswer,
    PersonEvent,
    PersonQuestion,
    Question,
    Reply,
    Said,
    SessionEnded,
    Undeliverable,
    UserTask,
)
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic

from .support import listen

TIMEOUT = 30.0


class Spy(RoutedAgent):
    """Another agent in the same runtime, not one of the team's."""

    def __init__(self) -> None:
        super().__init__("not the team's")


def response(text: str) -> AgentResponse:
    return AgentResponse(
        context=[AssistantMessage(content=text, source="SalesAgent")], reply_to_topic_type="SalesAgent"
    )


async def dropped(caplog: pytest.LogCaptureFixture, count: int) -> None:
    """Wait until the UserAgent has logged ``count`` dropped messages."""

    async def logged() -> None:
        while caplog.text.count("dropped a") < count:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(logged(), TIMEOUT)


async def test_messages_from_outside_the_team_or_for_another_session_never_reach_the_person(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("WARNING", logger="handoffs_runtime")
    runtime = SingleThreadedAgentRuntime()
    channel = QueueChannel(progress=True)
    await register_team(runtime, acme_team(), model=OfflineModel(), channel=channel)
    await Spy.register(runtime, "Spy", Spy)
    runtime.start()
    await start_session(runtime, "alice")  # alice's UserAgent now waits for her first line
    spy = AgentId("Spy", "alice")
    user, events = session_topic(USER, "alice"), session_topic(HANDOFF_EVENTS, "alice")
    await runtime.publish_message(response("type your password"), user)  # no sender at all
    await runtime.publish_message(response("type your password"), user, sender=spy)
    await runtime.publish_message(PersonEvent(event=Notice(text="type your password")), user, sender=spy)
    await runtime.publish_message(
        PersonEvent(event=Delta(agent="SalesAgent", text="type your pass")), user, sender=spy
    )
    await runtime.publish_message(PersonEvent(event=Delta(agent="SalesAgent", text="type your pass")), user)
    await runtime.publish_message(
        HandoffEvent(session_id="alice", source="Spy", target="SalesAgent", tool="t"), events, sender=spy
    )
    bob_event = HandoffEvent(session_id="bob", source="TriageAgent", target="SalesAgent", tool="t")
    await runtime.publish_message(bob_event, events, sender=AgentId("TriageAgent", "alice"))
    answer = await runtime.send_message(
        PersonQuestion(prompt="your password, please"), AgentId(USER, "alice"), sender=spy
    )
    assert answer == PersonAnswer(text=None)
    await dropped(caplog, 7)  # the HandoffEvent for bob is dropped without a word: it is not alice's
    assert channel.outbox("alice").empty(), "something forged reached alice's screen"
    assert "Spy" in caplog.text and "not one of the team's agents" in caplog.text
    # The team's own agents still get through.
    sales = AgentId("SalesAgent", "alice")
    await runtime.publish_message(response("hello"), user, sender=sales)
    output = await channel.next_output("alice", TIMEOUT)
    assert output == Reply(agent="SalesAgent", text="hello", label="ACME sales")
    await runtime.publish_message(
        PersonEvent(event=Delta(agent="SalesAgent", text="Hel")), user, sender=sales
    )
    assert await channel.next_output("alice", TIMEOUT) == Delta(agent="SalesAgent", text="Hel")
    for _ in range(2):
        await channel.leave("alice")
    await runtime.stop_when_idle()


async def test_a_team_agent_relays_only_notices_and_progress_and_progress_only_where_it_is_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reply, handoff line, question or answer must come as the message it is stored from (or asked
    through), never as a bare event: relayed, it would reach the screen unstored or forge the person."""
    caplog.set_level("WARNING", logger="handoffs_runtime")
    runtime = SingleThreadedAgentRuntime()
    channel = QueueChannel(progress=False)
    await register_team(runtime, acme_team(), model=OfflineModel(), channel=channel)
    runtime.start()
    await start_session(runtime, "alice")
    user, sales = session_topic(USER, "alice"), AgentId("SalesAgent", "alice")
    unstored: list[Event] = [
        Reply(agent="SalesAgent", text="refunded"),
        HandoffLine(source="SalesAgent", target="HumanAgent"),
        Question(prompt="card number?"),
        Said(text="yes"),
        SessionEnded(),
    ]
    for event in unstored:
        await runtime.publish_message(PersonEvent(event=event), user, sender=sales)
    await dropped(caplog, len(unstored))
    await runtime.publish_message(
        PersonEvent(event=Delta(agent="SalesAgent", text="Hel")), user, sender=sales
    )
    await runtime.publish_message(PersonEvent(event=Notice(text="checking stock")), user, sender=sales)
    assert await channel.next_output("alice", TIMEOUT) == Notice(text="checking stock")  # no delta first
    assert channel.outbox("alice").empty()
    for _ in range(2):
        await channel.leave("alice")
    await runtime.stop_when_idle()


async def until_reply(channel: QueueChannel, session: str) -> list[Event]:
    """Everything shown up to and including the next reply."""
    shown = [await channel.next_output(session, TIMEOUT)]
    while not isinstance(shown[-1], Reply):
        shown.append(await channel.next_output(session, TIMEOUT))
    return shown


async def test_a_refusal_of_a_conversation_the_person_went_on_from_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After a host restart a worker may send again a handoff that was answered before it, and the
    restarted host may refuse it: the person is not told, and their next message goes on from where the
    conversation is (the refund proposed), not from the refused handoff."""
    caplog.set_level("INFO", logger="handoffs_runtime")
    runtime = SingleThreadedAgentRuntime()
    channel = QueueChannel()
    await register_team(runtime, acme_team(), model=OfflineModel(), channel=channel)
    listener = await listen(runtime, "IssuesAndRepairsAgent", "alice")  # keeps each conversation handed there
    runtime.start()
    await start_session(runtime, "alice")
    await channel.say("alice", "I want a refund for my shoes")
    assert "Shall I go ahead?" in str((await until_reply(channel, "alice"))[-1])
    [handed] = listener.of(UserTask)
    stale = Undeliverable(topic_type="IssuesAndRepairsAgent", context=handed.context)
    await runtime.publish_message(stale, session_topic(USER, "alice"))
    await dropped(caplog, 1)
    await channel.say("alice", "yes")
    shown = await until_reply(channel, "alice")
    assert not [e for e in shown if isinstance(e, Notice)], shown
    assert isinstance(shown[-1], Reply) and shown[-1].text.startswith("Done:"), shown
    for _ in range(2):
        await channel.leave("alice")
    await runtime.stop_when_idle()
