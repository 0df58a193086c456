"""Whatever a model's response holds, the turn ends with a tool result or an apology; the session goes on.

The shapes here are what real servers and clients have sent: a tool call whose id is null, arguments
that are a number or null, a tool name that is not a string, content that is a number, unknown content
parts, fields missing, or no ``CreateResult`` at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, LLMMessage, RequestUsage, SystemMessage, UserMessage
from autogen_core.tools import FunctionTool, ToolSchema

from handoffs_runtime import (
    AgentSpec,
    HandoffsRuntime,
    TeamPolicy,
    TeamSpec,
    register_team,
    start_session,
)
from handoffs_runtime.agents.ai import MODEL_ERROR_REPLY
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Notice, WorkerResult
from handoffs_runtime.models.local import LocalModel

from .fake_openai import fake_openai
from .support import ask_worker, texts

_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


class _Bare:
    """A content part that is neither text nor a ``FunctionCall`` and has none of a call's fields."""


class _NameOnly:
    """A call-like part with fields missing."""

    name = "add"


def raw(content: Any) -> CreateResult:
    """A ``CreateResult`` built without validation, as a buggy client could hand one over."""
    return CreateResult.model_construct(finish_reason="stop", content=content, usage=_USAGE, cached=False)


MALFORMED: dict[str, Any] = {
    "content-number": raw(12345),
    "content-none": raw(None),
    "content-dict": raw({"text": "hi"}),
    "id-none": raw([FunctionCall(id=None, name="add", arguments='{"a": 1, "b": 2}')]),  # type: ignore[arg-type]
    "name-none": raw([FunctionCall(id="c1", name=None, arguments="{}")]),  # type: ignore[arg-type]
    "name-number": raw([FunctionCall(id="c1", name=7, arguments="{}")]),  # type: ignore[arg-type]
    "arguments-number": raw([FunctionCall(id="c1", name="add", arguments=5)]),  # type: ignore[arg-type]
    "arguments-none": raw([FunctionCall(id="c1", name="add", arguments=None)]),  # type: ignore[arg-type]
    "arguments-dict": raw([FunctionCall(id="c1", name="add", arguments={"a": 1, "b": 2})]),  # type: ignore[arg-type]
    "handoff-id-none": raw([FunctionCall(id=None, name="transfer_to_back", arguments="{}")]),  # type: ignore[arg-type]
    "unknown-parts": raw([_Bare(), 3.5, None]),
    "fields-missing": raw([_NameOnly()]),
    "call-as-dict": raw([{"name": "add", "arguments": '{"a": 2, "b": 2}'}]),
    "text-parts": raw(["part one", " and two"]),
    "not-a-result": None,
    "no-content": object(),
}


class RawModel(LocalModel):
    """Answers the person's first message with ``first`` (anything at all), then says ``ok``."""

    def __init__(self, first: Any) -> None:
        super().__init__()
        self.first = first

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> Any:  # type: ignore[override]
        self.calls.append((list(messages), []))
        last = messages[-1]
        if isinstance(last, UserMessage) and last.content == "first":
            return self.first
        return raw("ok")

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        raise AssertionError("create is overridden")


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def team(policy: TeamPolicy | None = None) -> TeamSpec:
    return TeamSpec(
        name="t",
        entry="Front",
        policy=policy or TeamPolicy(),
        agents=[
            AgentSpec("Front", tools=[add], handoffs=["Back"]),
            AgentSpec("Back", description="The back office."),
        ],
    )


@pytest.mark.parametrize("shape", list(MALFORMED), ids=list(MALFORMED))
async def test_a_malformed_response_never_ends_the_session(shape: str) -> None:
    model = RawModel(MALFORMED[shape])
    channel = ScriptedChannel.for_sessions({"s1": ["first", "second"]})
    runtime = HandoffsRuntime()
    await register_team(runtime, team(), model=model, channel=channel)
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    replies = texts(channel)
    assert len(replies) == 2, replies  # one answer per message of the person
    assert replies[-1][1] == "ok"
    assert all(isinstance(text, str) and text.strip() for _, text in replies)
    last = channel.shown["s1"][-1]
    assert isinstance(last, Notice) and last.text == "session s1 ended"
    assert runtime._instantiated_agents == {}  # the session's agents were released when it ended


@pytest.mark.parametrize("shape", list(MALFORMED), ids=list(MALFORMED))
async def test_a_worker_answers_whatever_its_model_returns(shape: str) -> None:
    tool = FunctionTool(add, description="Add two integers.")
    config = WorkerAgentConfig(
        name="W",
        system_message=SystemMessage(content="You are W."),
        model=RawModel(MALFORMED[shape]),
        tools={tool.name: tool},
    )
    result = await ask_worker(config, "first")
    assert isinstance(result, WorkerResult) and result.text.strip()


# --- the real CLI and the real openai client ---------------------------------------------------------


def _raw_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.mark.parametrize(
    "bad",
    [
        _raw_call(None, "transfer_to_sales_agent", "{}"),
        _raw_call("call_1", "transfer_to_sales_agent", 5),
        _raw_call(None, "transfer_to_issues_and_repairs", None),
    ],
    ids=["id-null", "arguments-5", "id-and-arguments-null"],
)
def test_chat_goes_on_after_a_malformed_tool_call_from_a_real_server(bad: dict[str, Any]) -> None:
    answers: list[Any] = [bad, "recovered", "still here"]
    with fake_openai(answers) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HANDOFFS_"))}
        chat = ["chat", "--store", ":memory:", "--model", "test-model", "--base-url", server.url]
        chat.append("--no-stream")  # the whole response at once: the malformed call reaches the agent
        done = subprocess.run(
            [sys.executable, "-m", "handoffs_runtime", *chat],
            input="hi\nand again\n",
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "› recovered" in out and "› still here" in out, out
    assert "you › and again" in out
    assert "ended" in out.splitlines()[-1]
    assert len(server.requests) == 3


# --- the one guard: a bug in any branch of a turn is logged and apologised for -----------------------


async def test_a_bug_inside_a_turn_is_logged_and_apologised_for(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    act = ToolLoop._act
    seen = 0

    async def buggy(self: ToolLoop, *args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen == 1:  # the first turn's tool calls hit the bug; later turns work
            raise KeyError("a bug in a branch")
        return await act(self, *args, **kwargs)

    monkeypatch.setattr(ToolLoop, "_act", buggy)
    model = RawModel(raw([FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')]))
    channel = ScriptedChannel.for_sessions({"s1": ["first", "first", "second"]})
    runtime = HandoffsRuntime()
    await register_team(runtime, team(), model=model, channel=channel)
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    assert texts(channel) == [("Front", MODEL_ERROR_REPLY), ("Front", "ok"), ("Front", "ok")]
    assert "turn of Front in session s1 failed" in caplog.text and "a bug in a branch" in caplog.text
    assert runtime._instantiated_agents == {}


async def test_a_bug_inside_a_worker_task_becomes_a_failed_result(monkeypatch: pytest.MonkeyPatch) -> None:
    async def buggy(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a bug in a branch")

    monkeypatch.setattr(ToolLoop, "run", buggy)
    config = WorkerAgentConfig(name="W", system_message=SystemMessage(content="W."), model=RawModel("x"))
    result = await ask_worker(config, "first")
    assert result == WorkerResult(text="W failed: KeyError: 'a bug in a branch'", ok=False)
