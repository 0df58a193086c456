"""One model reply and one tool result are capped (``TeamPolicy.max_reply_chars``): cut, said so, stored cut.

Through the real ``openai`` client against a local server, so the 20 MB travel as a real answer would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from handoffs_runtime import (
    AgentSpec,
    HandoffsRuntime,
    ScriptedChannel,
    SQLiteSessionStore,
    TeamPolicy,
    TeamSpec,
    openai_model,
    register_team,
    start_session,
)
from handoffs_runtime.errors import TeamConfigError

from .fake_openai import fake_openai
from .support import texts

TWENTY_MB = 20 * 1024 * 1024


def huge_result() -> str:
    """Returns twenty megabytes."""
    return "r" * TWENTY_MB


def team(policy: TeamPolicy) -> TeamSpec:
    return TeamSpec(name="t", entry="Front", policy=policy, agents=[AgentSpec("Front", tools=[huge_result])])


async def run(answers: list[Any], policy: TeamPolicy, store_path: Path) -> tuple[ScriptedChannel, Any]:
    store = SQLiteSessionStore(store_path)
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    with fake_openai(answers) as server:
        runtime = HandoffsRuntime()
        model = openai_model("test-model", base_url=server.url, api_key="k")
        await register_team(runtime, team(policy), model=model, channel=channel, store=store)
        runtime.start()
        await start_session(runtime, "s1")
        await runtime.stop_when_idle()
        await model.close()
    entries = await store.entries("s1")
    await store.close()
    return channel, (server.requests, entries)


async def test_a_20_mb_reply_is_cut_for_the_person_and_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    channel, (_, entries) = await run(["x" * TWENTY_MB], TeamPolicy(), path)
    [(_, text)] = texts(channel)
    limit = 256 * 1024
    assert text.startswith("x" * limit) and not text.startswith("x" * (limit + 1))
    assert f"[cut: the reply was {TWENTY_MB:,} characters long; only the first {limit:,} are kept]" in text
    stored = [e.text for e in entries if e.kind == "reply"]
    assert stored == [text]
    stored_bytes = sum(os.path.getsize(p) for p in tmp_path.glob("s.db*"))
    assert stored_bytes < 4 * limit  # the transcript and the context: twice the cut text


async def test_a_20_mb_tool_result_is_cut_before_the_model_sees_it(tmp_path: Path) -> None:
    policy = TeamPolicy(max_reply_chars=1000)
    answers: list[Any] = [[("huge_result", {})], "done"]
    channel, (requests, entries) = await run(answers, policy, tmp_path / "s.db")
    assert texts(channel) == [("Front", "done")]
    tool_message = requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    content = tool_message["content"]
    assert content.startswith("r" * 1000) and not content.startswith("r" * 1001)
    assert f"[cut: the result was {TWENTY_MB:,} characters long" in content
    assert max(len(json.dumps(e.body)) for e in entries) < 2000


async def test_huge_tool_arguments_are_cut_and_the_model_is_told(tmp_path: Path) -> None:
    policy = TeamPolicy(max_reply_chars=1000)
    answers: list[Any] = [[("huge_result", {"padding": "p" * TWENTY_MB})], "done"]
    channel, (requests, _) = await run(answers, policy, tmp_path / "s.db")
    assert texts(channel) == [("Front", "done")]
    call = requests[1]["messages"][-2]["tool_calls"][0]
    arguments = call["function"]["arguments"]
    assert len(arguments) < 1200 and "[cut: the arguments were" in arguments
    result = requests[1]["messages"][-1]["content"]
    assert "too long and were cut" in result


@pytest.mark.parametrize("bad", [0, -5])
def test_the_cap_must_be_positive(bad: int) -> None:
    with pytest.raises(TeamConfigError, match="max_reply_chars"):
        TeamPolicy(max_reply_chars=bad)
