"""Issue 37: a turn has a deadline of its own. A model that keeps calling tools with slow replies is cut
once the turn's time is spent: no new model call or tool round starts, the person reads an honest
sentence (or the human agent takes over), and the turn lasts at most its deadline plus one call. The
bounds are read from the scripted models' own delays (how many calls started), never from a tight
wall-clock limit."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from autogen_core.models import LLMMessage, SystemMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import AgentSpec, TeamPolicy, TeamSpec, ask_person, tool_call
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.cli.options import add_model_options, choose_model
from handoffs_runtime.durable.fenced import open_state, record_said
from handoffs_runtime.durable.step import AgentSteps, StepRequest
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.policy import TURN_DEADLINE_CALLS
from handoffs_runtime.messages import Person
from handoffs_runtime.models.deadline import SLOW_MODEL_REPLY, TURN_TIME_REPLY
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel, ScriptedModel
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.team.files import TeamFileError, load_team_file
from handoffs_runtime.team.spec import human_agent
from handoffs_runtime.tools.functions import function_tool

from .support import ask_worker, run_sessions, texts

LATENCY = 0.2
"""Seconds each scripted model call takes."""
TURN = 0.5
"""The turn's deadline in these tests: room for a few calls, never for the many the model wants."""
ASKS_AGAIN = ("again", "another way", "rephrase", "repeat")

LOOKED_UP: list[str] = []


def look_up_item(search_query: str) -> str:
    """Find the item id for a description or keywords."""
    LOOKED_UP.append(search_query)
    return f"item for {search_query}"


class Looper:
    """A model that never stops asking for a new look-up (so no progress guard stops it), slowly."""

    def __init__(self, first: Sequence[Reply] = ()) -> None:
        self.first = list(first)
        self.queries = itertools.count(1)
        self.model = FunctionModel(self.respond, latency=LATENCY)

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        if self.first:
            return self.first.pop(0)
        return [tool_call("look_up_item", {"search_query": f"item {next(self.queries)}"})]

    @property
    def calls(self) -> int:
        return len(self.model.calls)


def shop(*, human: bool = False, on_loop: str = "message", turn_deadline: float | None = TURN) -> TeamSpec:
    agents = [
        AgentSpec("Desk", tools=[look_up_item], handoffs=["Stock"]),
        AgentSpec("Stock", tools=[look_up_item]),
    ]
    policy = TeamPolicy(max_tool_rounds=40, turn_deadline=turn_deadline, on_loop=on_loop)  # type: ignore[arg-type]
    return TeamSpec(
        name="shop", entry="Desk", agents=[*agents, human_agent("Human")] if human else agents, policy=policy
    )


@pytest.fixture(autouse=True)
def _fresh() -> None:
    LOOKED_UP.clear()


def within_the_deadline(calls: int) -> bool:
    """Whether ``calls`` calls of ``LATENCY`` each all started before the deadline: then the turn took at
    most the deadline plus one call (each call takes at least ``LATENCY``, so the last one started no
    earlier than ``(calls - 1) * LATENCY``)."""
    return calls >= 1 and (calls - 1) * LATENCY < TURN


async def test_a_model_that_keeps_calling_tools_is_cut_at_the_turns_deadline() -> None:
    looper = Looper()
    channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]})
    await run_sessions(shop(), channel, model=looper.model)
    assert within_the_deadline(looper.calls), f"{looper.calls} calls of {LATENCY} s in a {TURN} s turn"
    assert len(LOOKED_UP) <= looper.calls  # no tool round after the last call's answer came too late
    [(agent, said)] = texts(channel)
    assert (agent, said) == ("Desk", TURN_TIME_REPLY)
    assert not any(word in said.lower() for word in ASKS_AGAIN)


async def test_a_turn_out_of_time_goes_to_the_human_agent_where_the_team_escalates() -> None:
    looper = Looper()
    channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]}, operator=["Yes, we do."])
    await run_sessions(shop(human=True, on_loop="escalate"), channel, model=looper.model)
    assert within_the_deadline(looper.calls)
    assert texts(channel) == [("Human", "Yes, we do.")]


async def test_the_turns_clock_goes_on_across_a_handoff() -> None:
    """Two rounds at the desk, then the handoff: the stock desk gets what is left of the turn, not a
    deadline of its own."""
    desk = [[tool_call("look_up_item", {"search_query": "skates"})], [tool_call("transfer_to_stock")]]
    looper = Looper(desk)
    channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]})
    await run_sessions(shop(), channel, model=looper.model)
    assert within_the_deadline(looper.calls), f"{looper.calls} calls of {LATENCY} s in a {TURN} s turn"
    assert texts(channel) == [("Stock", TURN_TIME_REPLY)]


async def test_a_handoff_chosen_after_the_deadline_still_goes_and_its_target_ends_the_turn() -> None:
    """A handoff is no tool round: the conversation reaches the desk the person needs, which says the
    turn is out of time without calling its model, and the person's next message goes to it."""
    looks = [[tool_call("look_up_item", {"search_query": f"skates {n}"})] for n in (1, 2)]
    looper = Looper([*looks, [tool_call("transfer_to_stock")]])  # the handoff comes at 3 x LATENCY
    channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]})
    await run_sessions(shop(), channel, model=looper.model)
    assert looper.calls == 3 and not looper.first  # the stock desk's model was never called
    assert texts(channel) == [("Stock", TURN_TIME_REPLY)]


async def test_a_worker_that_keeps_calling_tools_stops_at_its_deadline() -> None:
    looper = Looper()
    tools = {"look_up_item": function_tool(look_up_item, owner="test")}
    policy = TeamPolicy(max_tool_rounds=40, turn_deadline=TURN)
    config = WorkerAgentConfig(
        "Finder", SystemMessage(content="Find things."), looper.model, tools, policy=policy
    )
    result = await ask_worker(config, "find skates")
    assert (result.ok, result.text) == (False, f"Finder did not finish within its {TURN:g} s")
    assert within_the_deadline(looper.calls), f"{looper.calls} calls of {LATENCY} s in a {TURN} s turn"


async def test_a_turn_within_its_time_is_not_cut() -> None:
    model = FunctionModel(_one_look_then_answer, latency=LATENCY)
    channel = ScriptedChannel.for_sessions({"s1": ["Do you sell skates?"]})
    await run_sessions(shop(turn_deadline=10.0), channel, model=model)
    assert texts(channel) == [("Desk", "Yes, we sell skates.")]


def _one_look_then_answer(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
    if LOOKED_UP:
        return "Yes, we sell skates."
    return [tool_call("look_up_item", {"search_query": "skates"})]


class SlowToAnswer(ScriptedChannel):
    """A person who takes a while over each yes/no question: longer than the turn's whole deadline."""

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if prompt.endswith("y/n"):
            await asyncio.sleep(2 * TURN)
        return await super().ask(session_id, prompt, person=person)


async def place_order(item: str) -> str:
    """Place an order, after the customer confirms it."""
    answer = await ask_person(f"Order {item}? y/n")
    return f"Ordered {item}." if answer == "yes" else "Nothing was ordered."


async def test_time_spent_waiting_for_the_person_does_not_count() -> None:
    ordering = [[tool_call("place_order", {"item": "anvil"})], "Your anvil is ordered."]
    model = ScriptedModel(ordering, latency=LATENCY)  # type: ignore[arg-type]
    team = TeamSpec(name="shop", entry="Desk", agents=[AgentSpec("Desk", tools=[place_order])])
    team = replace(team, policy=TeamPolicy(turn_deadline=TURN, on_loop="message"))
    channel = SlowToAnswer.for_sessions({"s1": ["buy an anvil", "yes"]})
    await run_sessions(team, channel, model=model)
    assert texts(channel) == [("Desk", "Your anvil is ordered.")]
    model.assert_done()


def test_the_default_is_derived_from_the_call_deadline() -> None:
    assert TeamPolicy(model_timeout=45).turn_limit() == TURN_DEADLINE_CALLS * 45
    assert TeamPolicy(model_timeout=45, turn_deadline=60).turn_limit() == 60
    assert TeamPolicy(model_timeout=None).turn_limit() is None
    assert TeamPolicy().turn_limit(call_deadline=False) is None  # an in-process model: no call deadline
    assert TeamPolicy(turn_deadline=5).turn_limit(call_deadline=False) == 5  # said explicitly: it holds
    for wrong in (0, -1, math.inf):
        with pytest.raises(TeamConfigError, match="turn_deadline"):
            TeamPolicy(turn_deadline=wrong)


def test_the_turn_sentence_is_not_the_slow_call_sentence() -> None:
    """A durable engine tries a step again after a slow call (``SLOW_MODEL_REPLY``); a turn that spent
    its time must not be tried again, or it would last twice its deadline."""
    assert TURN_TIME_REPLY != SLOW_MODEL_REPLY


def test_a_team_file_sets_the_turns_deadline(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text("name: t\npolicy: {model_timeout: 30, turn_deadline: 75}\nagents: [{name: Front}]\n")
    assert load_team_file(path).policy.turn_limit() == 75
    path.write_text("name: t\npolicy: {turn_deadline: 0}\nagents: [{name: Front}]\n")
    with pytest.raises(TeamFileError, match="turn_deadline"):
        load_team_file(path)


def test_the_command_line_sets_the_turns_deadline() -> None:
    parser = argparse.ArgumentParser()
    add_model_options(parser)
    args = parser.parse_args(["--turn-deadline", "30"])
    team = choose_model(args, shop(turn_deadline=None)).team
    assert team.policy.turn_limit() == 30
    derived = choose_model(parser.parse_args(["--model-timeout", "20"]), shop(turn_deadline=None)).team
    assert derived.policy.turn_limit() == TURN_DEADLINE_CALLS * 20  # from the client's deadline, not 20 + 5
    with pytest.raises(TeamConfigError, match="--turn-deadline"):
        choose_model(parser.parse_args(["--turn-deadline", "-1"]), shop())


# --- a durable engine's agent step -----------------------------------------------------------------


async def _said(store: SQLiteSessionStore, text: str) -> int:
    opened = await open_state(store, "s1", entry_agent="Desk", team="shop")
    return await record_said(store, "s1", text, agent="Desk", expected_seq=opened.seq)


async def test_an_agent_step_ends_at_the_turns_deadline_and_is_not_tried_again(tmp_path: Path) -> None:
    """A durable engine runs the same agents: the step ends with the sentence, as a reply, and not as a
    transient failure it would try again (which would double the turn)."""
    looper = Looper()
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    steps = await AgentSteps.start(shop(), store=store, model=looper.model, agents=["Desk"])
    try:
        seq = await _said(store, "Do you sell skates?")
        outcome = await steps.run(StepRequest("s1", "Desk", seq, last_try=False))
    finally:
        await steps.close()
        await store.close()
    assert outcome.kind == "reply" and TURN_TIME_REPLY in outcome.lines[-1], outcome
    assert within_the_deadline(looper.calls), f"{looper.calls} calls of {LATENCY} s in a {TURN} s turn"


async def test_a_handoff_step_carries_the_turns_clock_to_the_next_step(tmp_path: Path) -> None:
    desk = [[tool_call("look_up_item", {"search_query": "skates"})], [tool_call("transfer_to_stock")]]
    looper = Looper(desk)
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    steps = await AgentSteps.start(shop(), store=store, model=looper.model, agents=["Desk", "Stock"])
    try:
        seq = await _said(store, "Do you sell skates?")
        handed = await steps.run(StepRequest("s1", "Desk", seq, ("Desk",), last_try=False))
        assert handed.kind == "handoff" and handed.target == "Stock"
        assert handed.turn_spent >= 2 * LATENCY  # two calls of the desk's, each at least LATENCY
        request = StepRequest(
            "s1", "Stock", handed.seq, ("Desk", "Stock"), last_try=False, turn_spent=handed.turn_spent
        )
        outcome = await steps.run(request)
    finally:
        await steps.close()
        await store.close()
    assert outcome.kind == "reply" and TURN_TIME_REPLY in outcome.lines[-1], outcome
    assert within_the_deadline(looper.calls), f"{looper.calls} calls of {LATENCY} s in a {TURN} s turn"
