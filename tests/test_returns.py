"""``returns=True``: the conversation comes back to the agent that handed over when the target's part is
done, by rule (the model never asks), kept on a return stack the store holds with the transcript."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.handoffs.handoff import handoff
from handoffs_runtime.handoffs.returns import HAND_BACK_TOOL, ReturnPoint
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import ScriptedModel, Step
from handoffs_runtime.sessions.recording import resume
from handoffs_runtime.team.files import load_team_file
from handoffs_runtime.team.spec import AgentSpec, TeamSpec

from .store_backends import Backend
from .support import run_sessions, texts


def _team(*, returns: bool) -> TeamSpec:
    return TeamSpec(
        name="shop",
        entry="Front",
        agents=[
            AgentSpec("Front", "You greet.", handoffs=[handoff("Refunds", returns=returns), "Other"]),
            AgentSpec("Refunds", "You refund.", handoffs=["Other"]),
            AgentSpec("Other", "You do the rest.", handoffs=["Refunds"]),
        ],
    )


class Seen(ScriptedModel):
    """A scripted model that records the conversation it was given each time."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(steps)
        self.calls: list[list[LLMMessage]] = []

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        self.calls.append(list(messages))
        return super().respond(messages, tools)


async def test_a_returning_handoff_comes_back_to_the_caller_without_the_model_asking() -> None:
    front = Seen([[tool_call("transfer_to_refunds")], "Glad that is sorted. Anything else?"])
    channel = ScriptedChannel.for_sessions({"s1": ["refund my skates", "order 7", "thanks"]})
    refunds = ScriptedModel(["Which order? (number)", "Refund of $40 done."])
    await run_sessions(_team(returns=True), channel, models={"Front": front, "Refunds": refunds})
    assert texts(channel) == [
        ("Refunds", "Which order? (number)"),  # a question: its part is not done, the person answers it
        ("Refunds", "Refund of $40 done."),
        ("Front", "Glad that is sorted. Anything else?"),
    ]
    lines = [(h.source, h.target, h.tool) for h in channel.handoffs("s1")]
    assert lines == [("Front", "Refunds", "transfer_to_refunds"), ("Refunds", "Front", HAND_BACK_TOOL)]
    said = [m.content for m in front.calls[-1] if isinstance(m.content, str)]
    assert "Refund of $40 done." in said  # the target's result is in the caller's context
    assert said[-1] == "thanks"


async def test_without_returns_the_target_keeps_the_conversation() -> None:
    channel = ScriptedChannel.for_sessions({"s1": ["refund my skates", "thanks"]})
    await run_sessions(
        _team(returns=False),
        channel,
        models={
            "Front": ScriptedModel([[tool_call("transfer_to_refunds")]]),
            "Refunds": ScriptedModel(["Refund of $40 done.", "You're welcome."]),
        },
    )
    assert texts(channel) == [("Refunds", "Refund of $40 done."), ("Refunds", "You're welcome.")]
    assert [h.tool for h in channel.handoffs("s1")] == ["transfer_to_refunds"]


async def test_the_return_stack_is_kept_in_the_store_and_survives_a_restart(backend: Backend) -> None:
    """Front -(returns)-> Refunds -> Other, and the process stops; after the restart Other hands to
    Refunds, whose reply ends its part: the conversation is back with Front, read from the store."""
    store = backend.make()
    first = ScriptedChannel.for_sessions({"s1": ["refund my skates"]})
    await run_sessions(
        _team(returns=True),
        first,
        store=store,
        models={
            "Front": ScriptedModel([[tool_call("transfer_to_refunds")]]),
            "Refunds": ScriptedModel([[tool_call("transfer_to_other")]]),
            "Other": ScriptedModel(["Which order?"]),
        },
    )
    await store.close()

    store = backend.make()
    assert (await resume(store, "s1", entry_agent="Front")).returns == (ReturnPoint("Front", "Refunds"),)
    await store.close()
    store = backend.make()
    second = ScriptedChannel.for_sessions({"s1": ["order 7", "thanks"]})
    await run_sessions(
        _team(returns=True),
        second,
        store=store,
        models={
            "Front": ScriptedModel(["You're welcome."]),
            "Refunds": ScriptedModel(["Refund of $40 done."]),
            "Other": ScriptedModel([[tool_call("transfer_to_refunds")]]),
        },
    )
    assert texts(second) == [("Refunds", "Refund of $40 done."), ("Front", "You're welcome.")]
    state = await store.get_session("s1")
    assert state.active_agent == "Front"
    tools = [e.tool for entry in await store.entries("s1") if (e := entry.event()) is not None]
    assert tools[-1] == HAND_BACK_TOOL
    assert (await resume(store, "s1", entry_agent="Front")).returns == ()
    await store.close()


async def test_returns_in_a_team_file(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: shop
            model: {provider: offline}
            agents:
            - name: Front
              handoffs:
              - {target: Refunds, returns: true}
              - Other
            - name: Refunds
            - name: Other
            """
        )
    )
    team = load_team_file(path)
    by_target = {h.target: h.returns for h in team.agent("Front").handoffs if not isinstance(h, str)}
    assert by_target == {"Refunds": True, "Other": False}
