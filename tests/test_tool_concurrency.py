"""The regular tool calls of one response run at once (results in call order), as in the OpenAI Agents
SDK, in ``AIAgent`` and ``WorkerAgent`` alike; ``TeamPolicy(concurrent_tool_calls=False)`` runs them one
at a time; and concurrent tools never ask one person two questions at once."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from typing import Any

import pytest
from autogen_core.models import FunctionExecutionResultMessage, SystemMessage
from autogen_core.tools import FunctionTool

from handoffs_runtime import AgentSpec, TeamPolicy, TeamSpec, ask_person, tool_call
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Event, Person
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.tools.approval import requires_approval

from .support import ask_worker, run_sessions, texts

SLEEPS = {"a": 0.3, "b": 0.2, "c": 0.1}
"""Each call sleeps; the first called finishes last, so call order and finishing order differ."""


class Spans:
    """When each call of the ``wait`` tool started and ended (monotonic seconds)."""

    def __init__(self) -> None:
        self.spans: dict[str, tuple[float, float]] = {}

    async def wait(self, name: str) -> str:
        """Wait a moment, then say which call this was."""
        start = time.monotonic()
        await asyncio.sleep(SLEEPS[name])
        self.spans[name] = (start, time.monotonic())
        return f"done {name}"

    def overlap(self) -> bool:
        """Whether every call started before any call ended."""
        return max(s for s, _ in self.spans.values()) < min(e for _, e in self.spans.values())

    def one_at_a_time(self) -> bool:
        ordered = [self.spans[name] for name in SLEEPS]
        return all(prev_end <= start for (_, prev_end), (start, _) in itertools.pairwise(ordered))

    def span(self) -> float:
        return max(e for _, e in self.spans.values()) - min(s for s, _ in self.spans.values())


def three_calls() -> list[Any]:
    return [tool_call("wait", {"name": name}, call_id=f"call_{name}") for name in SLEEPS]


async def agent_run(concurrent: bool) -> tuple[Spans, list[tuple[str, str]]]:
    spans = Spans()
    tool = FunctionTool(spans.wait, description="Wait a moment.", name="wait")
    model = ScriptedModel([three_calls(), "all done"])
    policy = TeamPolicy(concurrent_tool_calls=concurrent)
    team = TeamSpec(name="t", entry="Clerk", policy=policy, agents=[AgentSpec("Clerk", tools=[tool])])
    channel = ScriptedChannel.for_sessions({"s1": ["wait three times"]})
    await run_sessions(team, channel, model=model)
    results = model.calls[1][0][-1]
    assert isinstance(results, FunctionExecutionResultMessage)
    assert texts(channel) == [("Clerk", "all done")]
    return spans, [(r.call_id, r.content) for r in results.content]


async def worker_run(concurrent: bool) -> tuple[Spans, list[tuple[str, str]]]:
    spans = Spans()
    tool = FunctionTool(spans.wait, description="Wait a moment.", name="wait")
    model = ScriptedModel([three_calls(), "all done"])
    config = WorkerAgentConfig(
        name="W",
        system_message=SystemMessage(content="You are W."),
        model=model,
        tools={tool.name: tool},
        policy=TeamPolicy(concurrent_tool_calls=concurrent),
    )
    answer = await ask_worker(config, "wait three times")
    assert (answer.text, answer.ok) == ("all done", True)
    results = model.calls[1][0][-1]
    assert isinstance(results, FunctionExecutionResultMessage)
    return spans, [(r.call_id, r.content) for r in results.content]


@pytest.mark.parametrize("run", [agent_run, worker_run], ids=["AIAgent", "WorkerAgent"])
async def test_calls_of_one_response_run_at_once_and_keep_their_order(run: Any) -> None:
    in_order = [(f"call_{name}", f"done {name}") for name in SLEEPS]

    together, results = await run(concurrent=True)
    assert together.overlap(), together.spans
    assert results == in_order

    one_by_one, results = await run(concurrent=False)
    assert one_by_one.one_at_a_time(), one_by_one.spans
    assert results == in_order
    assert together.span() < one_by_one.span()


class CountingChannel(ScriptedChannel):
    """A scripted channel whose answers take a moment, counting the questions open at once per session."""

    def __init__(self, customer: list[str]) -> None:
        super().__init__(customer={"s1": customer})
        self.open: dict[str, int] = defaultdict(int)
        self.most_open: dict[str, int] = defaultdict(int)

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        self.open[session_id] += 1
        self.most_open[session_id] = max(self.most_open[session_id], self.open[session_id])
        try:
            await asyncio.sleep(0.05)
            return await super().ask(session_id, prompt, person=person)
        finally:
            self.open[session_id] -= 1

    async def show(self, session_id: str, event: Event) -> None:
        await super().show(session_id, event)


async def confirm(item: str) -> str:
    """Ask the person to confirm an item."""
    answer = await ask_person(f"Keep {item}? y/n")
    return f"{item}: {answer}"


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@pytest.mark.parametrize("kind", ["ask_person", "requires_approval"])
async def test_concurrent_tools_ask_one_question_at_a_time(kind: str) -> None:
    if kind == "ask_person":
        tool = FunctionTool(confirm, description="Confirm an item.", name="confirm")
        calls = [tool_call("confirm", {"item": item}) for item in ("hat", "scarf", "gloves")]
        answers = ["y", "n", "y"]
        expected = ["hat: y", "scarf: n", "gloves: y"]
    else:
        tool = requires_approval(delete)  # type: ignore[assignment]
        calls = [tool_call("delete", {"path": path}) for path in ("a.txt", "b.txt", "c.txt")]
        answers = ["yes", "no", "yes"]
        expected = ["deleted a.txt", "Refused: the customer did not approve running delete.", "deleted c.txt"]
    model = ScriptedModel([calls, "done"])
    team = TeamSpec(name="t", entry="Clerk", agents=[AgentSpec("Clerk", tools=[tool])])
    channel = CountingChannel(["go", *answers])
    await run_sessions(team, channel, model=model)
    assert channel.most_open["s1"] == 1
    questions = [prompt for _, prompt in channel.asked["s1"] if prompt != "you"]
    assert len(questions) == 3, questions
    results = model.calls[1][0][-1]
    assert isinstance(results, FunctionExecutionResultMessage)
    # the questions waited their turn in call order, and each answer reached the call that asked
    assert [r.call_id for r in results.content] == [c.id for c in calls]
    assert [r.content for r in results.content] == expected


async def test_a_failing_call_among_concurrent_ones_is_an_error_result_in_its_place() -> None:
    async def fine(n: int) -> str:
        """Answer after a moment."""
        await asyncio.sleep(0.05)
        return f"fine {n}"

    async def broken(n: int) -> str:
        """Fail."""
        raise RuntimeError(f"broken {n}")

    tools = [FunctionTool(fine, description="Fine."), FunctionTool(broken, description="Broken.")]
    calls = [tool_call("fine", {"n": 1}), tool_call("broken", {"n": 2}), tool_call("fine", {"n": 3})]
    model = ScriptedModel([calls, "done"])
    team = TeamSpec(name="t", entry="Clerk", agents=[AgentSpec("Clerk", tools=tools)])
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    await run_sessions(team, channel, model=model)
    results = model.calls[1][0][-1]
    assert isinstance(results, FunctionExecutionResultMessage)
    assert [(r.content, bool(r.is_error)) for r in results.content] == [
        ("fine 1", False),
        ("Error: tool broken failed: RuntimeError: broken 2", True),
        ("fine 3", False),
    ]
    assert texts(channel) == [("Clerk", "done")]


async def test_a_worker_out_of_time_stops_all_its_concurrent_calls() -> None:
    stopped: list[str] = []

    async def slow(name: str) -> str:
        """Take very long."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.append(name)
            raise
        return name

    tool = FunctionTool(slow, description="Take very long.")
    config = WorkerAgentConfig(
        name="W",
        system_message=SystemMessage(content="You are W."),
        model=ScriptedModel([[tool_call("slow", {"name": n}) for n in ("x", "y", "z")]]),
        tools={tool.name: tool},
    )
    answer = await ask_worker(config, "go", timeout=0.3)
    assert (answer.text, answer.ok) == ("W ran out of time (0.3 s)", False)
    assert sorted(stopped) == ["x", "y", "z"]
