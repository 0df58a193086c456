"""One's own team routes as well as ACME: by its agents' descriptions and by the example requests it lists."""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import AgentProfile, LocalModel, OfflineModel, current_model_call
from handoffs_runtime.channels.memory import ScriptedChannel

from .parcel_team import CLAIMS, PERSON, SHIPPING, TRACKING, TRACKING_EXAMPLES, parcel_team
from .support import run_sessions

BY_DESCRIPTION = [
    ("where is my parcel?", TRACKING),
    ("can you track my parcel", TRACKING),
    ("when will my parcel be delivered?", TRACKING),
    ("my parcel hasn't arrived", TRACKING),
    ("I need a courier", SHIPPING),
    ("send a new parcel to Oslo", SHIPPING),
    ("what destinations do you send to?", SHIPPING),
    ("my parcel is damaged", CLAIMS),
    ("you lost my parcel", CLAIMS),
    ("I want a postage refund", CLAIMS),
    ("I want to make a claim", CLAIMS),
    ("I need to talk to an agent", PERSON),
    ("let me speak to a person", PERSON),
    ("is my box still in transit", TRACKING),
    ("has my delivery been dispatched?", TRACKING),
    ("I need to ship a box to Rome", SHIPPING),
    ("I was charged twice for postage", CLAIMS),
]
"""Requests whose words or phrases (a status question, a billing problem) the agents' descriptions
cover: they route with or without examples."""

BY_EXAMPLE = [
    ("how much to post a letter abroad?", SHIPPING),
    ("do you deliver to Iceland?", SHIPPING),
    ("the box was crushed", CLAIMS),
    ("I want compensation", CLAIMS),
]
"""Requests only the listed examples explain (``crushed``, ``compensation``, ``post a letter``...)."""


async def _first_routes(examples: bool, table: list[tuple[str, str]]) -> dict[str, str | None]:
    sessions = {f"s{i}": [said] for i, (said, _) in enumerate(table)}
    channel = ScriptedChannel.for_sessions(sessions, operator=["Kim here."] * len(table))
    await run_sessions(parcel_team(examples=examples), channel, model=OfflineModel(), sessions=sessions)
    firsts = {s: next((e.target for e in channel.handoffs(s)), None) for s in sessions}
    return {said: firsts[f"s{i}"] for i, (said, _) in enumerate(table)}


async def test_a_second_team_routes_by_its_descriptions_and_its_examples() -> None:
    table = BY_DESCRIPTION + BY_EXAMPLE
    assert len(table) >= 20
    assert await _first_routes(True, table) == dict(table)


async def test_without_examples_descriptions_still_route_and_the_example_only_requests_do_not() -> None:
    routes = await _first_routes(False, BY_DESCRIPTION + BY_EXAMPLE)
    assert {said: routes[said] for said, _ in BY_DESCRIPTION} == dict(BY_DESCRIPTION)
    assert [said for said, agent in BY_EXAMPLE if routes[said] == agent] == []


class _Recording(LocalModel):
    """Records the profile each agent's model is given, and answers so that the conversation ends."""

    def __init__(self, told: list[AgentProfile] | None = None) -> None:
        super().__init__()
        self.told = told if told is not None else []

    def for_agent(self, profile: AgentProfile) -> _Recording:
        self.told.append(profile)
        return _Recording(self.told)

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        call = current_model_call()
        assert call is not None and call.agent == "Counter"
        return "noted"


async def test_the_examples_reach_the_model_by_handoff_tool_and_by_agent() -> None:
    model = _Recording()
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    await run_sessions(parcel_team(), channel, model=model)
    profile = next(p for p in model.told if p.name == "Counter")
    assert profile.examples["transfer_to_tracking"] == TRACKING_EXAMPLES
    assert profile.examples["transfer_to_clerk"] == ("a real person",)
    assert "Counter" not in profile.examples  # the counter lists none of its own
