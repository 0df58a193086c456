"""The typed turn: the loop sorts a response's calls, runs the regular ones, asks the agent's decider once
about the handoff calls, and ends in one member of a closed union that each agent matches in full."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import get_args

from autogen_core import CancellationToken
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import FunctionTool

from handoffs_runtime import handoff, tool_call
from handoffs_runtime.agents import turn
from handoffs_runtime.agents.ai import AIAgent
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.turn import (
    GuardStop,
    HandedOff,
    HandoffCalls,
    HandoffDecision,
    LoopStopped,
    Replied,
    Transfer,
    TurnEnd,
)
from handoffs_runtime.agents.worker import WorkerAgent
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.tools.context import ToolContext

SALES = handoff("Sales").resolved("Sells shoes.")
HISTORY: list[LLMMessage] = [UserMessage(content="I want shoes", source="User")]


def _matched_classes(method: object) -> set[str]:
    """The class names in the case patterns of the one ``match`` statement of ``method``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))  # type: ignore[arg-type]
    [match] = [node for node in ast.walk(tree) if isinstance(node, ast.Match)]
    return {node.cls.id for node in ast.walk(match) if isinstance(node, ast.MatchClass)}  # type: ignore[attr-defined]


def test_the_turn_end_union_is_closed_and_each_agent_matches_all_of_it() -> None:
    members = {kind.__name__ for kind in get_args(TurnEnd)}
    assert members == {
        "Replied",
        "HandedOff",
        "LoopStopped",
        "ModelFailed",
        "OutOfRounds",
        "OverBudget",
        "OutOfTime",
    }
    ends = {kind.__name__ for kind in turn._Ended.__subclasses__()}
    assert ends == members  # no kind of end outside the union
    assert _matched_classes(AIAgent._end_turn) == members
    assert _matched_classes(WorkerAgent._result) == members


class RecordingDecider:
    """A decider that hands off on the first call, noting what it was asked and what had run by then."""

    def __init__(self, ran: list[str], *, guard: bool = False) -> None:
        self.ran = ran
        self.guard = guard
        self.requests: list[HandoffCalls] = []

    async def decide(self, request: HandoffCalls) -> HandoffDecision:
        self.requests.append(request)
        self.ran.append("decide")
        first = request.calls[0]
        ending: Transfer | GuardStop = (
            GuardStop(SALES, first, "ping-pong") if self.guard else Transfer(SALES, first, None, request.said)
        )
        results = [
            FunctionExecutionResult(call_id=c.id, name=c.name, content=f"decided {c.id}")
            for c in request.calls
        ]
        return HandoffDecision(results, ending)


def _loop(model: ScriptedModel, ran: list[str]) -> ToolLoop:
    async def look_up(item: str) -> str:
        ran.append("look_up")
        return f"{item}: in stock"

    tools = {"look_up": FunctionTool(look_up, description="Look an item up.")}
    return ToolLoop("Triage", SystemMessage(content="Triage."), model, tools, {SALES.tool_name: SALES})


async def test_regular_calls_run_then_the_decider_is_asked_once_and_results_keep_call_order() -> None:
    calls = [
        tool_call("transfer_to_sales", call_id="h1"),
        tool_call("look_up", {"item": "shoes"}, call_id="r1"),
        tool_call("nobody", call_id="u1"),
        tool_call("transfer_to_sales", call_id="h2"),
    ]
    ran: list[str] = []
    decider = RecordingDecider(ran)
    end = await _loop(ScriptedModel([calls]), ran).run(
        HISTORY, ToolContext("s1", "Triage", None), CancellationToken(), decider=decider
    )
    assert ran == ["look_up", "decide"]
    [request] = decider.requests
    assert [c.id for c in request.calls] == ["h1", "h2"] and request.enabled == {"transfer_to_sales"}
    assert isinstance(end, HandedOff) and end.transfer.call.id == "h1"
    said, done = end.new
    assert isinstance(said, AssistantMessage) and said.content == calls
    assert done.type == "FunctionExecutionResultMessage"
    assert [(r.call_id, r.content.split(":")[0]) for r in done.content] == [
        ("h1", "decided h1"),
        ("r1", "shoes"),
        ("u1", "Error"),
        ("h2", "decided h2"),
    ]
    assert "there is no tool named 'nobody'; available: look_up, transfer_to_sales" in done.content[2].content


async def test_a_guard_stop_from_the_decider_ends_the_turn_as_loop_stopped() -> None:
    ran: list[str] = []
    end = await _loop(ScriptedModel([[tool_call("transfer_to_sales")]]), ran).run(
        HISTORY,
        ToolContext("s1", "Triage", None),
        CancellationToken(),
        decider=RecordingDecider(ran, guard=True),
    )
    assert isinstance(end, LoopStopped) and end.stop.reason == "ping-pong" and len(end.new) == 2


async def test_without_a_decider_a_handoff_call_is_a_call_to_an_unknown_tool_and_the_loop_goes_on() -> None:
    ran: list[str] = []
    model = ScriptedModel([[tool_call("transfer_to_sales", call_id="h1")], "Let me help you myself."])
    end = await _loop(model, ran).run(HISTORY, ToolContext("s1", "Triage", None), CancellationToken())
    assert isinstance(end, Replied) and end.text == "Let me help you myself."
    result_message = end.new[1]
    assert result_message.type == "FunctionExecutionResultMessage"
    [result] = result_message.content
    assert result.is_error and "there is no tool named 'transfer_to_sales'" in result.content
    assert ran == []
