"""Figure 4: what a long conversation sends to the model, with and without the context filters.

Twenty turns of the person with three agents; the agent holding the conversation hands it on at turns
4, 8, 12, 16 and 20 (five handoffs) and looks something up with a tool on odd turns. The same script
runs with the full context, with ``remove_all_tools`` on every handoff, and with nested history.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from autogen_core import AgentRuntime, SingleThreadedAgentRuntime
from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import (
    AgentSpec,
    TeamPolicy,
    TeamSpec,
    current_model_call,
    register_team,
    remove_all_tools,
    start_session,
    tool_call,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel

from .scenario import BenchmarkError

TURNS = 20
HANDOFF_EVERY = 4
AGENTS = ("triage", "sales", "repairs")
MODES: dict[str, TeamPolicy] = {
    "full context": TeamPolicy(),
    "remove_all_tools": TeamPolicy(input_filter=remove_all_tools),
    "nested history": TeamPolicy(nest_handoff_history=True),
}


def look_up_item(search_query: str) -> str:
    """Find an item in the catalogue by name."""
    return json.dumps(
        {
            "item_id": "item_132612938",
            "name": search_query,
            "price": 500,
            "stock": 7,
            "notes": "ships in two days; forward motion only",
        }
    )


def _team(policy: TeamPolicy) -> TeamSpec:
    return TeamSpec(
        name="context",
        entry=AGENTS[0],
        policy=policy,
        agents=[
            AgentSpec(
                name,
                system_message=f"You are the {name} agent of ACME Inc. Be concise and helpful.",
                description=f"The {name} department.",
                tools=[look_up_item],
                handoffs=[other for other in AGENTS if other != name],
            )
            for name in AGENTS
        ],
    )


def _responder(channel: ScriptedChannel, session: str) -> Any:
    """Decides by the turn (how often the person was asked) and the step within it, not by the context,
    which the filters change."""
    steps: Counter[int] = Counter()

    def respond(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        call = current_model_call()
        assert call is not None
        turn = len(channel.asked[session])
        step = steps[turn]
        steps[turn] += 1
        if step == 0 and turn % HANDOFF_EVERY == 0:
            targets = sorted(call.handoff_tools)
            return [tool_call(targets[(turn // HANDOFF_EVERY) % len(targets)])]
        if step == 0 and turn % 2 == 1:
            return [tool_call("look_up_item", {"search_query": f"rocket skates, size {turn}"})]
        return (
            f"{call.agent} here, answering turn {turn}: the rocket skates are in stock at $500, ship in two "
            "days, and only go forward. Anything else I can help you with today?"
        )

    return respond


def _bytes(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> int:
    payload = {"messages": [m.model_dump(mode="json") for m in messages], "tools": list(tools)}
    return len(json.dumps(payload, separators=(",", ":")).encode())


async def measure_mode(
    policy: TeamPolicy, runtime_factory: Callable[[], AgentRuntime] = SingleThreadedAgentRuntime
) -> dict[str, Any]:
    session = "context"
    lines = [
        f"Question {i + 1}: tell me more about rocket skates, please, size {i + 1}." for i in range(TURNS)
    ]
    channel = ScriptedChannel.for_sessions({session: lines})
    model = FunctionModel(_responder(channel, session))
    runtime = runtime_factory()
    await register_team(runtime, _team(policy), model=model, channel=channel)
    runtime.start()  # type: ignore[attr-defined]
    await start_session(runtime, session)
    await runtime.stop_when_idle()  # type: ignore[attr-defined]
    handoffs = [e for e in channel.handoffs(session) if e.outcome == "handoff"]
    replies = channel.replies(session)
    if len(handoffs) != TURNS // HANDOFF_EVERY or len(replies) != TURNS:
        raise BenchmarkError(
            f"context scenario: {len(handoffs)} handoffs and {len(replies)} replies, expected "
            f"{TURNS // HANDOFF_EVERY} and {TURNS}"
        )
    sizes = [_bytes(messages, tools) for messages, tools in model.calls]
    total = sum(sizes)
    return {"model_calls": len(sizes), "bytes": total, "est_tokens": total // 4, "last_call_bytes": sizes[-1]}


async def measure() -> dict[str, dict[str, Any]]:
    return {name: await measure_mode(policy) for name, policy in MODES.items()}
