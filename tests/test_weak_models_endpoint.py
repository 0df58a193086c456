"""What an endpoint can do, learnt once per endpoint and kept for the process, or set in the team file;
and no refusal provoked by the project's own probing. Against the local fake server, through the real
``openai`` client."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoffs_runtime import AgentSpec, TeamPolicy, TeamSpec, openai_model
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.models.capabilities import capabilities_of, endpoint_key, set_capabilities
from handoffs_runtime.team.files import load_team_file

from .fake_openai import fake_openai
from .support import run_sessions, texts


def look_up_item(search_query: str) -> str:
    """Find the item id for a description or keywords."""
    return f"item for {search_query}"


def model_for(url: str, **options: object) -> object:
    return openai_model("gpt-4o-mini", base_url=url, api_key="k", max_retries=0, timeout=10, **options)  # type: ignore[arg-type]


def desk_team(policy: TeamPolicy) -> TeamSpec:
    desk = AgentSpec("Desk", system_message="You sell things.", tools=[look_up_item])
    return TeamSpec(name="shop", entry="Desk", agents=[desk], policy=policy)


LOOK = [("look_up_item", {"search_query": "skates"})]
LOOK_MORE = [("look_up_item", {"search_query": "anvil"})]


# --- 5. streaming tool calls: learnt once per endpoint, not per call --------------------------------


async def test_an_endpoint_that_cannot_stream_tool_calls_costs_one_thrown_away_call_per_process() -> None:
    # Each round offers tools; the server answers a streamed tool call with nothing. Once learnt, the
    # rounds after it (and the next session, with a client of its own) are asked without streaming.
    answers = [LOOK, LOOK, LOOK_MORE, "We have both.", "Anything else?"]
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        server.streams_tool_calls = False
        channel = ScriptedChannel.for_sessions({"s1": ["skates and an anvil?"], "s2": ["hello"]})
        team = desk_team(TeamPolicy(stream=True))
        await run_sessions(team, channel, model=model_for(server.url), sessions=["s1"])  # type: ignore[arg-type]
        await run_sessions(team, channel, model=model_for(server.url), sessions=["s2"])  # type: ignore[arg-type]
    assert texts(channel, "s1") == [("Desk", "We have both.")]
    assert texts(channel, "s2") == [("Desk", "Anything else?")]
    streamed = [bool(r.get("stream")) for r in server.requests]
    assert streamed == [True, False, False, False, False]  # one thrown-away stream, then plain
    assert len(server.requests) == 5  # unstreamed, the same conversations take 4: one more, not one a round
    assert capabilities_of(server.url).streams_tool_calls is False


async def test_calls_without_tools_still_stream_on_that_endpoint() -> None:
    with fake_openai(["Hi there!"]) as server:
        set_capabilities(server.url, streams_tool_calls=False)
        channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
        team = TeamSpec(name="t", entry="Front", agents=[AgentSpec("Front")], policy=TeamPolicy(stream=True))
        await run_sessions(team, channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Front", "Hi there!")]
    assert [bool(r.get("stream")) for r in server.requests] == [True]


def test_an_endpoint_has_one_name() -> None:
    assert endpoint_key("HTTP://Example.COM/v1/") == endpoint_key("http://example.com/v1")
    assert capabilities_of("http://a.test/v1/") is capabilities_of("http://a.test/v1")


# --- 6. no refusal provoked by our own probing ------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_new_process_provokes_no_refusal_on_a_server_that_refuses_null_content(stream: bool) -> None:
    with fake_openai([LOOK, "Skates, yes."]) as server:  # type: ignore[list-item]
        server.refuses_null_content = True
        channel = ScriptedChannel.for_sessions({"s1": ["skates?"]})
        await run_sessions(desk_team(TeamPolicy(stream=stream)), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", "Skates, yes.")]
    assert server.statuses == [200, 200]
    [call] = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
    assert call["content"] == ""


async def test_a_server_that_refuses_empty_content_gets_null_once_learnt() -> None:
    with fake_openai([LOOK, "Skates, yes.", LOOK, "Anvils too."]) as server:  # type: ignore[list-item]
        server.refuses_empty_content = True
        channel = ScriptedChannel.for_sessions({"s1": ["skates?", "anvils?"]})
        await run_sessions(desk_team(TeamPolicy()), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", "Skates, yes."), ("Desk", "Anvils too.")]
    assert server.statuses == [200, 400, 200, 200, 200]  # refused once, then null from the start
    assert capabilities_of(server.url).tool_call_content == "null"


# --- capabilities set in the team file --------------------------------------------------------------

TEAM_FILE = """
name: shop
policy:
  stream: true
  max_tokens: 64
  endpoint: {streams_tool_calls: false}
agents:
  - name: Desk
    system_message: You sell things.
    tools: ["tests.test_weak_models_endpoint:look_up_item"]
"""


async def test_the_team_file_says_what_the_endpoint_can_do(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(TEAM_FILE)
    team = load_team_file(path)
    assert team.policy.max_tokens == 64
    with fake_openai([LOOK, "Skates, yes."]) as server:  # type: ignore[list-item]
        channel = ScriptedChannel.for_sessions({"s1": ["skates?"]})
        await run_sessions(team, channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("Desk", "Skates, yes.")]
    assert [bool(r.get("stream")) for r in server.requests] == [False, False]  # nothing to learn
    assert [r.get("max_tokens") for r in server.requests] == [64, 64]


def test_a_wrong_endpoint_setting_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(TEAM_FILE.replace("streams_tool_calls", "streams_tools"))
    with pytest.raises(TeamConfigError, match="streams_tools"):
        load_team_file(path)


async def test_an_agent_may_bound_its_own_calls_in_tokens(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(TEAM_FILE.replace("    system_message: You sell things.", "    max_tokens: 16"))
    team = load_team_file(path)
    with fake_openai(["Skates, yes."]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["skates?"]})
        await run_sessions(team, channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert [r.get("max_tokens") for r in server.requests] == [16]  # the agent's, not the team's 64
