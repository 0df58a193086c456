"""One model reply and one tool result are capped (``TeamPolicy.max_reply_chars``): cut, said so, stored cut.

Through the real ``openai`` client against a local server, so the 20 MB travel as a real answer would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from handoffs_runtime import AgentSpec, SQLiteSessionStore, TeamPolicy, TeamSpec, openai_model
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import TeamConfigError

from .fake_openai import fake_openai
from .support import run_sessions, texts

TWENTY_MB = 20 * 1024 * 1024


def huge_result() -> str:
    """Returns twenty megabytes."""
    return "r" * TWENTY_MB


def length(text: str) -> int:
    """Counts characters."""
    return len(text)


def team(policy: TeamPolicy) -> TeamSpec:
    agents = [AgentSpec("Front", tools=[huge_result, length])]
    return TeamSpec(name="t", entry="Front", policy=policy, agents=agents)


async def run(answers: list[Any], policy: TeamPolicy, store_path: Path) -> tuple[ScriptedChannel, Any]:
    store = SQLiteSessionStore(store_path)
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    with fake_openai(answers) as server:
        model = openai_model("test-model", base_url=server.url, api_key="k")
        await run_sessions(team(policy), channel, model=model, store=store)
        await model.close()
    entries = await store.entries("s1")
    await store.close()
    return channel, (server.requests, entries)


async def test_a_20_mb_reply_is_cut_for_the_person_and_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    channel, (_, entries) = await run(["x" * TWENTY_MB], TeamPolicy(), path)
    [(_, text)] = texts(channel)
    head, note, tail = text.split("\n\n")
    assert (head, tail) == ("x" * (192 * 1024), "x" * (64 * 1024))  # 256 Ki characters kept in all
    left_out = f"{TWENTY_MB - 256 * 1024:,} characters in the middle are left out"
    assert note == f"[cut: the reply was {TWENTY_MB:,} characters long; {left_out}]"
    stored = [e.text for e in entries if e.kind == "reply"]
    assert stored == [text]
    stored_bytes = sum(os.path.getsize(p) for p in tmp_path.glob("s.db*"))
    assert stored_bytes < 4 * 256 * 1024  # the transcript and the context: twice the cut text


async def test_a_20_mb_tool_result_is_cut_before_the_model_sees_it(tmp_path: Path) -> None:
    policy = TeamPolicy(max_reply_chars=1000)
    answers: list[Any] = [[("huge_result", {})], "done"]
    channel, (requests, entries) = await run(answers, policy, tmp_path / "s.db")
    assert texts(channel) == [("Front", "done")]
    tool_message = requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    head, note, tail = tool_message["content"].split("\n\n")
    assert (head, tail) == ("r" * 750, "r" * 250)
    assert note.startswith(f"[cut: the result was {TWENTY_MB:,} characters long")
    assert max(len(json.dumps(e.body)) for e in entries) < 2000


async def test_huge_tool_arguments_reach_the_tool_whole(tmp_path: Path) -> None:
    policy = TeamPolicy(max_reply_chars=1000)
    answers: list[Any] = [[("length", {"text": "a" * TWENTY_MB})], "done"]
    _, (requests, _) = await run(answers, policy, tmp_path / "s.db")
    assert requests[1]["messages"][-1]["content"] == str(TWENTY_MB)


@pytest.mark.parametrize("bad", [0, -5])
def test_the_cap_must_be_positive(bad: int) -> None:
    with pytest.raises(TeamConfigError, match="max_reply_chars"):
        TeamPolicy(max_reply_chars=bad)
