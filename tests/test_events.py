"""The event stream of a session (``EventChannel``): its order on the ACME paths, and questions."""

from __future__ import annotations

from typing import Any

import pytest

from handoffs_runtime import (
    HandoffLine,
    Notice,
    OfflineModel,
    Question,
    QueueChannel,
    Reply,
    Said,
    SessionEnded,
    TeamPolicy,
    ToolFinished,
    ToolStarted,
    register_team,
    start_session,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import PROGRESS, event_json
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.teams.acme import acme_team

from .event_support import REFUND_HANDOFF, run_events

TURN = Question(prompt="you", turn=True)


async def test_the_refund_path_as_events_in_order() -> None:
    events = await run_events(acme_team(), OfflineModel(), ["I want a refund for my shoes", "yes"])
    kinds = [type(e) for e in events]
    assert kinds == [
        Question,
        Said,
        HandoffLine,
        Reply,
        Question,
        Said,
        ToolStarted,
        ToolFinished,
        ToolStarted,
        ToolFinished,
        Reply,
        Question,
        Notice,
        SessionEnded,
    ]  # the last question got no answer: the person left
    assert events[0] == TURN
    assert events[1] == Said(text="I want a refund for my shoes")
    assert events[2] == REFUND_HANDOFF
    assert isinstance(events[3], Reply) and events[3].agent == "IssuesAndRepairsAgent"
    assert events[3].label == "ACME repairs"
    started, finished = events[8], events[9]
    assert isinstance(started, ToolStarted) and started.tool == "execute_refund"
    assert isinstance(finished, ToolFinished) and finished.call_id == started.call_id
    assert finished.result == "success" and not finished.is_error
    assert event_json(finished) == {
        "type": "tool_finished",
        "agent": "IssuesAndRepairsAgent",
        "tool": "execute_refund",
        "call_id": started.call_id,
        "result": "success",
        "is_error": False,
        "label": "ACME repairs",
    }


async def test_a_confirmation_is_a_yes_no_question() -> None:
    events = await run_events(acme_team(), OfflineModel(), ["I'd like to buy rocket skates", "yes", "y"])
    confirmations = [e for e in events if isinstance(e, Question) and not e.turn]
    assert len(confirmations) == 1
    assert confirmations[0].choices == ("yes", "no")
    assert confirmations[0].prompt.endswith("y/n")
    assert any(isinstance(e, ToolFinished) and e.result == "Success" for e in events)


async def test_the_operator_is_asked_through_the_same_stream() -> None:
    events = await run_events(
        acme_team(), OfflineModel(), ["let me talk to a person", "thanks"], operator=["Hello, I am Ann."]
    )
    asked = [e for e in events if isinstance(e, Question) and e.person == "operator"]
    assert asked and not asked[0].turn and asked[0].choices == ()
    assert Reply(agent="HumanAgent", text="Hello, I am Ann.", label="ACME operator") in events


async def test_a_queue_channel_shows_progress_only_when_asked_to() -> None:
    for progress in (False, True):
        channel = QueueChannel(progress=progress)
        runtime = HandoffsRuntime()
        await register_team(runtime, acme_team(), model=OfflineModel(), channel=channel)
        runtime.start()
        await start_session(runtime, "s1")
        await channel.say("s1", "I want a refund for my shoes")
        await channel.next_reply("s1", timeout=10)
        await channel.say("s1", "yes")
        seen = []
        while not isinstance(output := await channel.next_output("s1", timeout=10), Reply):
            seen.append(output)
        await channel.leave("s1")
        await runtime.stop_when_idle()
        activity = [o for o in seen if isinstance(o, PROGRESS)]
        assert len(activity) == (4 if progress else 0)


@pytest.mark.parametrize("shows_progress", [False, True])
async def test_progress_events_are_built_only_for_a_channel_that_shows_them(
    shows_progress: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hot path of a channel without progress (the console, scripts) pays nothing for it."""
    built: list[str] = []
    for kind in PROGRESS:

        def counted(event: Any, *args: Any, _init: Any = kind.__init__, **fields: Any) -> None:
            built.append(type(event).__name__)
            _init(event, *args, **fields)

        monkeypatch.setattr(kind, "__init__", counted)
    channel = ScriptedChannel.for_sessions({"s1": ["I want a refund for my shoes", "yes"]})
    channel.shows_progress = shows_progress
    team = acme_team(policy=TeamPolicy(stream=True))
    runtime = HandoffsRuntime()
    await register_team(runtime, team, model=OfflineModel(), channel=channel)
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    assert channel.replies("s1")[-1].text.startswith("Done:")  # the tools ran either way
    progress = [type(e).__name__ for e in channel.shown["s1"] if isinstance(e, PROGRESS)]
    assert sorted(built) == sorted(progress)
    assert bool(built) is shows_progress
