"""Many sessions in one runtime: each sees only its own conversation, and a slow person stalls nobody."""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core import SingleThreadedAgentRuntime
from autogen_core.models import LLMMessage, UserMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import (
    QueueChannel,
    current_model_call,
    register_team,
    start_session,
    tool_call,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.teams.acme import acme_team

from .support import run_sessions

SESSIONS = 200
leaks: list[str] = []


def responder(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
    call = current_model_call()
    assert call is not None
    said = [m.content for m in messages if isinstance(m, UserMessage)]
    leaks.extend(s for s in said if isinstance(s, str) and not s.endswith(f"[{call.session_id}]"))
    if call.agent == "TriageAgent":
        return [tool_call("transfer_to_sales_agent")]
    return f"{call.session_id} heard: {said[-1]}"


async def test_200_sessions_at_once_see_only_their_own_messages() -> None:
    leaks.clear()
    sessions = [f"s{i}" for i in range(SESSIONS)]
    channel = ScriptedChannel.for_sessions({s: [f"buy one [{s}]", f"buy two [{s}]"] for s in sessions})
    await run_sessions(acme_team(), channel, model=FunctionModel(responder), sessions=sessions)
    assert leaks == []
    for s in sessions:
        assert [(r.agent, r.text) for r in channel.replies(s)] == [
            ("SalesAgent", f"{s} heard: buy one [{s}]"),
            ("SalesAgent", f"{s} heard: buy two [{s}]"),
        ]
        assert [(e.source, e.target) for e in channel.handoffs(s)] == [("TriageAgent", "SalesAgent")]


async def test_a_session_waiting_for_its_person_does_not_stall_the_others() -> None:
    channel = QueueChannel()
    runtime = SingleThreadedAgentRuntime()
    model = FunctionModel(lambda messages, tools: "hello")
    await register_team(runtime, acme_team(), model=model, channel=channel)
    runtime.start()
    await start_session(runtime, "slow")  # never types anything until the end
    others = [f"fast{i}" for i in range(20)]
    for s in others:
        await start_session(runtime, s)
        await channel.say(s, "hi")
    for s in others:
        reply = await channel.next_reply(s, timeout=30)
        assert reply.text == "hello"
        await channel.leave(s)
    await channel.leave("slow")
    await runtime.stop_when_idle()
    assert channel.outbox("slow").qsize() == 1  # only the 'session ended' notice
