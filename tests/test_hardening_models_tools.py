"""One model response cannot run every tool call it names at once: calls per response and sandboxed runs
at once are capped, and what is past a cap gets a plain refusal as its result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import FunctionExecutionResultMessage, LLMMessage, SystemMessage, UserMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import AgentSpec, TeamSpec, tool_call
from handoffs_runtime.agents.replies import MAX_CALLS_PER_RESPONSE, too_many_calls
from handoffs_runtime.agents.toolloop import CONCURRENT_CALLS, ToolLoop
from handoffs_runtime.agents.turn import ModelFailed
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel, ScriptedModel
from handoffs_runtime.tools.context import ToolContext
from handoffs_runtime.tools.sandbox.slots import SLOTS
from handoffs_runtime.tools.sandbox.tool import python_code_tool

from .support import run_sessions, texts


class Counter:
    """A tool that counts its runs and the most that ran at the same time."""

    def __init__(self) -> None:
        self.runs = 0
        self.now = 0
        self.peak = 0

    async def count(self, n: int) -> str:
        """Count one call."""
        self.runs += 1
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return f"counted {n}"


def calls_then_results(calls: list[FunctionCall]) -> tuple[FunctionModel, list[list[str]]]:
    """A model that sends ``calls`` in one response, then says which results it got back."""
    seen: list[list[str]] = []

    def respond(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        last = messages[-1]
        if not isinstance(last, FunctionExecutionResultMessage):
            return calls
        seen.append([r.content for r in last.content])
        return "done"

    return FunctionModel(respond), seen


async def test_a_response_of_ten_thousand_calls_runs_only_the_first_few_at_a_bounded_pace() -> None:
    counter = Counter()
    made = 10_000
    model, seen = calls_then_results([tool_call("count", {"n": n}) for n in range(made)])
    team = TeamSpec(name="t", entry="A", agents=[AgentSpec("A", tools=[counter.count])])
    channel = ScriptedChannel.for_sessions({"s1": ["count them"]})
    await run_sessions(team, channel, model=model)
    assert texts(channel) == [("A", "done")]
    assert counter.runs == MAX_CALLS_PER_RESPONSE
    assert counter.peak <= CONCURRENT_CALLS
    [results] = seen
    assert len(results) == made  # every call has a result, in call order
    assert results[:2] == ["counted 0", "counted 1"]
    assert set(results[MAX_CALLS_PER_RESPONSE:]) == {f"Error: {too_many_calls(made)}"}


async def test_sandboxed_runs_past_the_process_cap_are_refused_in_plain_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(SLOTS, "most", 2)
    codes = [f"import time; time.sleep(2); print('ran', {i})" for i in range(5)]  # five runs, none repeated
    model, seen = calls_then_results([tool_call("execute_python_code", {"code": code}) for code in codes])
    team = TeamSpec(name="t", entry="A", agents=[AgentSpec("A", tools=[python_code_tool()])])
    channel = ScriptedChannel.for_sessions({"s1": ["run them"]})
    await run_sessions(team, channel, model=model)
    [results] = seen
    ran = [r for r in results if "ran" in r and "not run" not in r]
    refused = [r for r in results if r == SLOTS.busy()]
    assert len(ran) == 2 and len(refused) == 3, results
    assert SLOTS.running == 0  # every slot is given back


async def test_a_failed_model_call_is_described_to_a_worker_s_caller_with_credentials_masked() -> None:
    url = "postgresql://admin:S3cretPw@db.internal:5432/prod?sslkey=x&token=t0k3n"
    loop = ToolLoop("W", SystemMessage(content="work"), ScriptedModel([RuntimeError(f"down: {url}")]))
    end = await loop.run(
        [UserMessage(content="go", source="boss")], ToolContext("s1", "W", None), CancellationToken()
    )
    assert isinstance(end, ModelFailed)
    assert (
        end.error
        == "RuntimeError: down: postgresql://[redacted]@db.internal:5432/prod?sslkey=x&token=[redacted]"
    )
