"""Token usage per session: stored with the replies, shown by ``handoffs sessions``, bounded by a budget;
and the ``Usage`` value that carries it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from autogen_core import JSON_DATA_CONTENT_TYPE
from autogen_core.models import RequestUsage, SystemMessage
from autogen_core.tools import FunctionTool
from pydantic import ValidationError

from handoffs_runtime import (
    AgentSpec,
    SQLiteSessionStore,
    TeamPolicy,
    TeamSpec,
    tool_call,
    worker_tools,
)
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed.serializers import decode, protocol_serializers
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.messages import AgentResponse, UserTask, WorkerResult
from handoffs_runtime.teams.acme import ITEM_ID, acme_team
from handoffs_runtime.usage import BUDGET_REPLY, Tokens, Usage

from .support import ReportingModel, ask_worker, run_sessions


def refund_models() -> dict[str, ReportingModel]:
    return {
        "TriageAgent": ReportingModel([[tool_call("transfer_to_issues_and_repairs")]], 50, 5),
        "IssuesAndRepairsAgent": ReportingModel(
            [
                "Sorry to hear that. Shall I refund your shoes?",
                [tool_call("look_up_item", {"search_query": "shoes"})],
                [tool_call("execute_refund", {"item_id": ITEM_ID, "reason": "too small"})],
                "Your refund is done.",
            ]
        ),
    }


async def chat(
    lines: list[str],
    models: dict[str, ReportingModel],
    store: SQLiteSessionStore | None = None,
    policy: TeamPolicy | None = None,
) -> ScriptedChannel:
    channel = ScriptedChannel.for_sessions({"s1": lines})
    await run_sessions(
        acme_team(policy=policy), channel, model=ReportingModel([]), models=models, store=store
    )
    return channel


def sessions(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HANDOFFS_", "OTEL_"))}
    result = subprocess.run(
        [sys.executable, "-m", "handoffs_runtime", "sessions", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_usage_is_stored_with_the_replies_and_shown_listed_and_exported(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    store = SQLiteSessionStore(str(path))
    await chat(["I want a refund for my shoes", "yes"], refund_models(), store)
    replies = [e for e in await store.entries("s1") if e.kind == "reply"]
    assert [e.body.get("usage") for e in replies] == [
        {"TriageAgent": [50, 5], "IssuesAndRepairsAgent": [100, 10]},  # turn 1: triage, then issues
        {"IssuesAndRepairsAgent": [300, 30]},  # turn 2: three calls of issues
    ]
    await store.close()

    shown = sessions("show", "s1", "--store", str(path))
    assert (
        "usage: IssuesAndRepairsAgent 400 in + 40 out · TriageAgent 50 in + 5 out · total 495 tokens"
        in shown.splitlines()  # the refund's effect is listed after it
    )
    header, row = sessions("list", "--store", str(path)).splitlines()
    assert header.split()[4] == "tokens" and row.split()[5] == "495"
    exported = json.loads(sessions("export", "s1", "--format", "json", "--store", str(path)))
    assert exported["session"]["usage"] == {"TriageAgent": [50, 5], "IssuesAndRepairsAgent": [400, 40]}


async def test_a_session_past_its_token_budget_gets_a_clear_message_instead_of_a_model_call() -> None:
    models = refund_models()
    channel = await chat(["I want a refund for my shoes", "yes"], models, policy=TeamPolicy(token_budget=100))
    assert [r.text for r in channel.replies("s1")] == [
        "Sorry to hear that. Shall I refund your shoes?",  # 55 tokens before this call: under 100
        BUDGET_REPLY,  # 165 after it: the next call is not made
    ]
    assert len(models["IssuesAndRepairsAgent"].calls) == 1


async def test_the_budget_counts_what_the_session_used_before_it_was_resumed(tmp_path: Path) -> None:
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    policy = TeamPolicy(token_budget=150)
    await chat(["I want a refund for my shoes"], refund_models(), store, policy)  # 165 tokens; then leaves
    again = refund_models()
    channel = await chat(["yes"], again, store, policy)  # resumed with IssuesAndRepairsAgent
    assert channel.replies("s1")[-1].text == BUDGET_REPLY
    assert again["IssuesAndRepairsAgent"].calls == []
    await store.close()


def test_a_budget_below_one_is_refused() -> None:
    with pytest.raises(TeamConfigError, match="token_budget"):
        TeamPolicy(token_budget=0)


def lab(policy: TeamPolicy | None = None) -> TeamSpec:
    return TeamSpec(
        name="lab",
        entry="Boss",
        agents=[AgentSpec("Boss", tools=worker_tools("Worker")), AgentSpec("Worker", kind="worker")],
        policy=policy or TeamPolicy(),
    )


async def run_lab(policy: TeamPolicy | None, store: SQLiteSessionStore | None = None) -> ReportingModel:
    boss = ReportingModel([[tool_call("create_worker", {"task_description": "compute 6*7"})], "42."], 100, 10)
    worker = ReportingModel(["42"], 1000, 100)
    channel = ScriptedChannel.for_sessions({"s1": ["what is 6*7?"]})
    await run_sessions(lab(policy), channel, model=boss, models={"Worker": worker}, store=store)
    return boss


async def test_the_tokens_of_workers_count_for_the_session_that_created_them(tmp_path: Path) -> None:
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    await run_lab(None, store)
    [reply] = [e for e in await store.entries("s1") if e.kind == "reply"]
    assert reply.body["usage"] == {"Boss": [200, 20], "Worker": [1000, 100]}
    await store.close()


async def test_workers_tokens_count_against_the_budget() -> None:
    boss = await run_lab(TeamPolicy(token_budget=500))  # 110 (boss) + 1100 (its worker) before its 2nd call
    assert len(boss.calls) == 1


async def test_a_worker_cut_short_by_its_timeout_still_reports_the_tokens_it_spent() -> None:
    async def hang() -> str:
        await asyncio.Event().wait()
        return "never"

    worker = ReportingModel([[tool_call("hang")]], 70, 7)
    config = WorkerAgentConfig(
        "W", SystemMessage(content="W."), worker, {"hang": FunctionTool(hang, description="Never ends.")}
    )
    result = await ask_worker(config, "go", timeout=0.5, caller="Boss", key="s1.1.1")
    assert isinstance(result, WorkerResult) and not result.ok and "ran out of time" in result.text
    assert result.usage == Usage.of("W", 70, 7)


def test_usage_adds_and_subtracts_by_agent() -> None:
    before = Usage.of("Triage", 50, 5)
    after = before + Usage.of("Sales", 100, 10) + Usage.of("Triage", 1, 2)
    assert after.by_agent == {"Triage": Tokens(51, 7), "Sales": Tokens(100, 10)}
    assert (after.input, after.output, after.total) == (151, 17, 168)
    assert after - before == Usage({"Triage": Tokens(1, 2), "Sales": Tokens(100, 10)})
    assert before - after == Usage.EMPTY  # never below zero
    assert Usage.of("Idle", 0, 0) == Usage.EMPTY and not Usage.EMPTY  # agents without tokens are left out
    assert Usage.sum([before, Usage.EMPTY, before]) == Usage.of("Triage", 100, 10)


def test_usage_is_an_immutable_value() -> None:
    a, b = Usage.of("A", 1, 2), Usage.of("B", 3, 4)
    total = a + b
    assert (a, b) == (Usage.of("A", 1, 2), Usage.of("B", 3, 4))  # the operands are unchanged
    assert hash(total) == hash(Usage({"B": (3, 4), "A": (1, 2)})) and total == Usage(
        {"B": (3, 4), "A": (1, 2)}
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        total.by_agent = {}  # type: ignore[misc]
    with pytest.raises(ValueError, match="whole numbers of at least 0"):
        Usage.of("A", -1, 2)


def test_a_model_reply_that_reports_no_tokens_costs_no_new_value() -> None:
    assert Usage.reported("A", RequestUsage(prompt_tokens=0, completion_tokens=0)) is Usage.EMPTY
    assert Usage.reported("A", RequestUsage(prompt_tokens=5, completion_tokens=-3)) == Usage.of("A", 5, 0)
    start = Usage.of("A", 1, 1)
    assert start + Usage.EMPTY is start and Usage.EMPTY + start is start


def test_usage_keeps_its_json_shape_in_the_store_and_on_the_wire() -> None:
    usage = Usage.of("Triage", 50, 5) + Usage.of("Sales", 100, 10)
    assert usage.to_json() == {"Triage": [50, 5], "Sales": [100, 10]}  # what stores already hold
    assert Usage.from_json(json.loads(json.dumps(usage.to_json()))) == usage
    registry = protocol_serializers()
    for message in (
        UserTask(context=[], turn_path=["Triage"], usage=usage),
        AgentResponse(context=[], reply_to_topic_type="Sales", usage=usage),
        WorkerResult(text="42", usage=usage),
    ):
        name = registry.type_name(message)
        payload = registry.serialize(message, type_name=name, data_content_type=JSON_DATA_CONTENT_TYPE)
        assert json.loads(payload)["usage"] == usage.to_json()
        assert decode(registry, payload, name) == message
    assert UserTask.model_validate_json('{"context": [], "usage": null}').usage == Usage.EMPTY


def test_counts_from_elsewhere_are_checked() -> None:
    assert Usage.from_json({"A": [-5, 3], "B": [1], "C": [0, 0]}) == Usage.of("A", 0, 3)  # another process
    stored = [{"A": [1, 2]}, None, {"A": "x"}, {"B": [1, "2"]}, "junk", {"A": [3, 4]}]  # bodies in a store
    assert Usage.sum(Usage.from_json(body) for body in stored) == Usage.of("A", 4, 6)
    with pytest.raises(ValidationError, match="usage must be"):
        UserTask.model_validate_json('{"context": [], "usage": "lots"}')
    assert Usage.EMPTY.describe() == "no tokens reported"
    assert (Usage.of("B", 1, 2) + Usage.of("A", 1_000, 5)).describe() == (
        "A 1,000 in + 5 out · B 1 in + 2 out · total 1,008 tokens"
    )
