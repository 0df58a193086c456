"""Human approval on any tool, asked through the session's channel."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from autogen_core.models import FunctionExecutionResultMessage, LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import (
    AgentSpec,
    FunctionModel,
    OfflineModel,
    ScriptedChannel,
    ScriptedModel,
    TeamSpec,
    tool_call,
    worker_tools,
)
from handoffs_runtime.channels import Person
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.models import Reply
from handoffs_runtime.tools.approval import ApprovalTool, requires_approval
from handoffs_runtime.tools.code import SandboxLimits
from handoffs_runtime.tools.orchestrator import orchestrator_team

from .support import run_sessions, texts


def _deleter(log: list[str]) -> ApprovalTool:
    def delete_file(path: str) -> str:
        """Delete a file."""
        log.append(path)
        return f"deleted {path}"

    return requires_approval(delete_file)


async def _run(
    answers: list[str], log: list[str], *, person: str = "customer"
) -> tuple[ScriptedChannel, str]:
    tool = (
        _deleter(log) if person == "customer" else requires_approval(_deleter(log).inner, person="operator")
    )
    team = TeamSpec(name="t", entry="Clerk", agents=[AgentSpec("Clerk", tools=[tool])])
    model = ScriptedModel([[tool_call("delete_file", {"path": "a.txt"})], "finished"])
    customer = ["delete a.txt", *answers] if person == "customer" else ["delete a.txt"]
    channel = ScriptedChannel(
        customer={"s1": customer}, operator={"s1": answers if person == "operator" else []}
    )
    await run_sessions(team, channel, model=model)
    last = model.calls[-1][0][-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    return channel, last.content[0].content


async def test_approval_granted_runs_the_tool() -> None:
    log: list[str] = []
    channel, result = await _run(["yes"], log)
    assert result == "deleted a.txt"
    assert log == ["a.txt"]
    assert ("customer", 'Allow delete_file(path="a.txt")? y/n') in channel.asked["s1"]
    assert texts(channel) == [("Clerk", "finished")]


@pytest.mark.parametrize("answer", ["no", "n", "maybe later"])
async def test_approval_refused_does_not_run_the_tool(answer: str) -> None:
    log: list[str] = []
    _, result = await _run([answer], log)
    assert result == "Refused: the customer did not approve running delete_file."
    assert log == []


async def test_a_person_who_left_cannot_approve() -> None:
    log: list[str] = []
    _, result = await _run([], log)
    assert result == "Refused: delete_file was not run because nobody could approve it."
    assert log == []


async def test_the_operator_can_be_the_one_who_approves() -> None:
    log: list[str] = []
    channel, result = await _run(["y"], log, person="operator")
    assert result == "deleted a.txt"
    assert ("operator", 'Allow delete_file(path="a.txt")? y/n') in channel.asked["s1"]


async def test_invalid_arguments_are_reported_without_asking() -> None:
    log: list[str] = []
    team = TeamSpec(name="t", entry="Clerk", agents=[AgentSpec("Clerk", tools=[_deleter(log)])])
    model = ScriptedModel([[tool_call("delete_file", {"wrong": 1})], "finished"])
    channel = ScriptedChannel.for_sessions({"s1": ["delete"]})
    await run_sessions(team, channel, model=model)
    result = model.calls[-1][0][-1].content[0]  # type: ignore[index, union-attr]
    assert result.is_error and "invalid arguments for delete_file" in result.content
    assert [p for p, _ in channel.asked["s1"]] == ["customer", "customer"]  # the message and the next turn


def test_the_wrapped_tool_looks_the_same_to_the_model() -> None:
    tool = _deleter([])
    assert tool.name == "delete_file"
    assert tool.schema == tool.inner.schema
    assert requires_approval(tool) is tool
    with pytest.raises(TeamConfigError, match="needs a Tool or a function"):
        requires_approval("delete_file")  # type: ignore[arg-type]


async def test_code_runs_in_a_worker_only_after_the_person_approves() -> None:
    team = orchestrator_team(sandbox=SandboxLimits(timeout=5), approve_code=True)
    channel = ScriptedChannel.for_sessions(
        {"s1": ["run this python: print(6*7)", "yes", "run this python: print('never')", "no"]}
    )
    await run_sessions(team, channel, model=OfflineModel())
    prompts = [text for person, text in channel.asked["s1"] if text.startswith("Allow")]
    assert prompts == [
        'Allow execute_python_code(code="print(6*7)")? y/n',
        "Allow execute_python_code(code=\"print('never')\")? y/n",
    ]
    (_, first), (_, second) = texts(channel)
    assert "<stdout>42\n</stdout>" in first
    assert "Refused: the customer did not approve running execute_python_code" in second


class _CountingChannel(ScriptedChannel):
    """Says yes to every approval and records how many questions were open at once."""

    def __init__(self) -> None:
        super().__init__(customer={"s1": ["go"]})
        self.open = 0
        self.most_open = 0

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if not prompt.startswith("Allow"):
            return await super().ask(session_id, prompt, person=person)
        self.asked[session_id].append((person, prompt))
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        for _ in range(5):  # let the other worker run while this question is open
            await asyncio.sleep(0)
        self.open -= 1
        return "yes"


async def test_parallel_workers_ask_for_approval_one_at_a_time() -> None:
    log: list[str] = []
    team = TeamSpec(
        name="t",
        entry="Boss",
        agents=[
            AgentSpec("Boss", tools=worker_tools("Worker")),
            AgentSpec("Worker", tools=[_deleter(log)], kind="worker"),
        ],
    )
    boss = ScriptedModel([[tool_call("create_workers", {"task_descriptions": ["a.txt", "b.txt"]})], "done"])

    def worker(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        if isinstance(messages[-1], FunctionExecutionResultMessage):
            return str(messages[-1].content[0].content)
        return [tool_call("delete_file", {"path": str(messages[1].content)})]  # after the system message

    channel = _CountingChannel()
    await run_sessions(team, channel, models={"Boss": boss, "Worker": FunctionModel(worker)})
    assert sorted(log) == ["a.txt", "b.txt"]
    assert len([p for _, p in channel.asked["s1"] if p.startswith("Allow")]) == 2
    assert channel.most_open == 1
