"""Weak models against the local fake server, through the real ``openai`` client: a tool asked the same
thing again is answered from memory and a turn that learns nothing ends early and honestly; an empty
reply is asked again in words; a reply that is just a tool's name is that call; calls are bounded in
tokens. No reply blames the person or asks them to say it again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult

from handoffs_runtime import AgentSpec, TeamPolicy, TeamSpec, openai_model
from handoffs_runtime.agents.ai import EMPTY_REPLY, TOO_MANY_ROUNDS_REPLY
from handoffs_runtime.agents.progress import REPEAT_NOTE, ProgressGuard, normalised_arguments
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Delta
from handoffs_runtime.models.deadline import SLOW_MODEL_REPLY
from handoffs_runtime.team.spec import human_agent

from .fake_openai import fake_openai
from .support import run_sessions, texts
from .test_model_deadline import trickling_server

LOOKED_UP: list[str] = []
ASKS_AGAIN = ("again", "another way", "rephrase", "repeat")


def look_up_item(search_query: str) -> str:
    """Find the item id for a description or keywords."""
    LOOKED_UP.append(search_query)
    return f"item_{sum(map(ord, search_query.strip().casefold()))}"


def model_for(url: str) -> object:
    return openai_model("gpt-4o-mini", base_url=url, api_key="k", max_retries=0, timeout=10)


def desk_team(*, stream: bool = False, human: bool = False, **policy: object) -> TeamSpec:
    agents = [AgentSpec("Desk", system_message="You sell things.", tools=[look_up_item])]
    return TeamSpec(
        name="shop",
        entry="Desk",
        agents=[*agents, human_agent("Human")] if human else agents,
        policy=TeamPolicy(stream=stream, **policy),  # type: ignore[arg-type]
    )


def looks(query: str) -> list[tuple[str, dict[str, object]]]:
    return [("look_up_item", {"search_query": query})]


@pytest.fixture(autouse=True)
def _fresh_lookups() -> None:
    LOOKED_UP.clear()


def test_arguments_that_mean_the_same_compare_equal() -> None:
    same = [
        '{"search_query": "rocket  skates", "n": 1}',
        '{"n": 1, "search_query": "Rocket skates "}',
        '{"n": 1, "search_query": "rocket&#32;skates"}',
    ]
    assert len({normalised_arguments(a) for a in same}) == 1
    assert normalised_arguments('{"q": "a"}') != normalised_arguments('{"q": "b"}')


# --- 1. a specialist that loops on an ordinary tool -------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_tool_asked_the_same_again_is_answered_from_memory_and_the_turn_ends_early(
    stream: bool,
) -> None:
    with fake_openai([looks("skates")] * 8 + ["never read"]) as server:  # type: ignore[list-item]
        channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]})
        await run_sessions(desk_team(stream=stream), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert LOOKED_UP == ["skates"]  # the tool ran once; the repeats were answered from memory
    assert len(server.requests) == 3  # the first result, then two rounds with nothing new: the end
    repeat = server.requests[2]["messages"][-1]
    assert repeat["role"] == "tool" and REPEAT_NOTE.format(name="look_up_item") in repeat["content"]
    [(agent, said)] = texts(channel)
    assert (agent, said) == ("Desk", TOO_MANY_ROUNDS_REPLY)
    assert not any(word in said for word in ASKS_AGAIN)


async def test_a_turn_that_makes_no_progress_goes_to_the_human_agent_where_the_team_has_one() -> None:
    with fake_openai([looks("skates"), looks("Skates "), looks("skates")]) as server:  # type: ignore[list-item]
        channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]}, operator=["Yes, we do."])
        await run_sessions(desk_team(human=True), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert LOOKED_UP == ["skates"]
    assert texts(channel) == [("Human", "Yes, we do.")]


async def test_new_information_each_round_is_not_a_stall() -> None:
    answers = [looks("skates"), looks("anvil"), looks("rope"), "We have all three."]
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        channel = ScriptedChannel.for_sessions({"s1": ["skates, an anvil and rope?"]})
        await run_sessions(desk_team(), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert LOOKED_UP == ["skates", "anvil", "rope"]
    assert texts(channel) == [("Desk", "We have all three.")]


# --- 2. an empty reply is the model's failure, not the person's -------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_an_empty_reply_is_asked_again_in_words(stream: bool) -> None:
    with fake_openai(["", "Hello! What can I do for you?"]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
        await run_sessions(desk_team(stream=stream), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", "Hello! What can I do for you?")]
    assert [r.get("tool_choice") for r in server.requests] == ["auto", "none"]
    assert server.requests[1]["messages"] == server.requests[0]["messages"]


async def test_an_empty_reply_twice_is_said_plainly_without_blaming_the_person() -> None:
    with fake_openai(["", "  ", "Back again."]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "hello?"]})
        await run_sessions(desk_team(), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", EMPTY_REPLY), ("Desk", "Back again.")]
    assert not any(word in EMPTY_REPLY for word in ASKS_AGAIN)
    assert len(server.requests) == 3  # asked once more, not more


# --- 7. a reply that is exactly an offered tool's name ---------------------------------------------


@pytest.mark.parametrize("said", ["functions.transfer_to_back:", "transfer_to_back:"])
async def test_a_reply_that_is_a_tool_name_is_that_call(said: str) -> None:
    team = TeamSpec(
        name="two",
        entry="Front",
        agents=[AgentSpec("Front", handoffs=["Back"]), AgentSpec("Back", description="The back office.")],
    )
    with fake_openai([said, "Back office here."]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["I need the back office"]})
        await run_sessions(team, channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Back", "Back office here.")]
    assert [(e.target, e.outcome) for e in channel.handoffs("s1")] == [("Back", "handoff")]


async def test_a_streamed_reply_that_is_a_tool_name_is_never_shown_as_it_streams() -> None:
    team = TeamSpec(
        name="two",
        entry="Front",
        agents=[AgentSpec("Front", handoffs=["Back"]), AgentSpec("Back", description="The back office.")],
        policy=TeamPolicy(stream=True),
    )
    with fake_openai(["functions.transfer_to_back:", "Back office here."]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["I need the back office"]})
        channel.shows_progress = True
        await run_sessions(team, channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Back", "Back office here.")]
    shown = [(e.agent, e.text) for e in channel.shown["s1"] if isinstance(e, Delta)]
    assert "".join(text for _, text in shown) == "Back office here."  # and nothing of the name
    assert {agent for agent, _ in shown} == {"Back"}


async def test_a_tool_name_whose_tool_needs_arguments_is_a_failed_call_the_model_reads() -> None:
    with fake_openai(["functions.look_up_item:", "Which item do you mean?"]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["look something up"]})
        await run_sessions(desk_team(), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", "Which item do you mean?")]
    assert LOOKED_UP == []
    [result] = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "search_query" in result["content"]


async def test_a_tool_name_nobody_offered_is_text() -> None:
    with fake_openai(["functions.fly_to_the_moon:"]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["hi"]})
        await run_sessions(desk_team(), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", "functions.fly_to_the_moon:")]


# --- 4. deadlines that tell the truth and bound the work --------------------------------------------


async def test_every_call_is_bounded_in_tokens_by_the_team_and_by_default() -> None:
    with fake_openai(["Hello!", "Hello again!"]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["hi"], "s2": ["hi"]})
        model = model_for(server.url)
        await run_sessions(desk_team(), channel, model=model, sessions=["s1"])  # type: ignore[arg-type]
        await run_sessions(desk_team(max_tokens=32), channel, model=model, sessions=["s2"])  # type: ignore[arg-type]
    assert [r.get("max_tokens") for r in server.requests] == [TeamPolicy().max_tokens, 32]


async def test_a_call_past_its_deadline_is_dropped_and_the_person_told_the_model_is_slow() -> None:
    with trickling_server() as server:
        model = openai_model("m", base_url=server.url, api_key="k", timeout=1.0, max_retries=2)
        channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
        await run_sessions(desk_team(model_timeout=None), channel, model=model)
        dropped = await asyncio.to_thread(server.dropped.wait, 30)
    [(_, said)] = texts(channel)
    assert said == SLOW_MODEL_REPLY
    assert "try again" not in said
    assert dropped and not server.sent_all  # the request in flight was abandoned, connection and all
    assert server.bodies[0]["max_tokens"] == TeamPolicy().max_tokens


async def test_a_failed_call_makes_the_turn_forget_what_it_remembered() -> None:
    """A failure can change what the tools see (a tool server restarted, a session expired), so a call
    repeated after one runs again instead of being answered from before it."""
    guard = ProgressGuard(stalled_rounds=3)
    runs: list[str] = []

    def run(
        name: str, content: str, is_error: bool = False
    ) -> Callable[[], Awaitable[FunctionExecutionResult]]:
        async def go() -> FunctionExecutionResult:
            runs.append(name)
            return FunctionExecutionResult(call_id=name, name=name, content=content, is_error=is_error)

        return go

    ask = FunctionCall(id="1", name="server_pid", arguments="{}")
    assert (await guard.run(ask, run("server_pid", "100"))).content == "100"
    again = await guard.run(ask, run("server_pid", "never run"))
    assert REPEAT_NOTE.format(name="server_pid") in again.content  # remembered while nothing failed
    bad = FunctionCall(id="3", name="change_flight", arguments='{"booking_ref": 1}')
    await guard.run(bad, run("change_flight", "Error: invalid arguments", is_error=True), ran=False)
    kept = await guard.run(ask, run("server_pid", "never run either"))
    assert REPEAT_NOTE.format(name="server_pid") in kept.content  # a refusal changed nothing
    crash = FunctionCall(id="2", name="crash", arguments="{}")
    await guard.run(crash, run("crash", "Error: the server stopped", is_error=True))
    assert (await guard.run(ask, run("server_pid", "200"))).content == "200"
    assert runs == ["server_pid", "change_flight", "crash", "server_pid"]
