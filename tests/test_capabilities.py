"""Optional capabilities are Protocols: a delegating or wrapping tool, a prompt model are recognised by what
they have, through wrappers too; a channel says whether it shows progress."""

from __future__ import annotations

from autogen_core import CancellationToken
from autogen_core.models import SystemMessage, UserMessage
from autogen_core.tools import FunctionTool

from handoffs_runtime import (
    TeamPolicy,
    irreversible,
    requires_approval,
    tool_call,
    worker_tools,
)
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.turn import Replied
from handoffs_runtime.messages import Event, Person, ToolFinished, ToolStarted
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.tools.capabilities import delegate_of
from handoffs_runtime.tools.context import ToolContext
from handoffs_runtime.tools.effects import is_irreversible


def refund(item: str) -> str:
    """Refund an item."""
    return f"refunded {item}"


def test_what_a_tool_delegates_to_is_seen_through_an_approval_wrapper() -> None:
    create_worker = worker_tools("Worker")[0]
    assert delegate_of(create_worker) == "Worker"
    assert delegate_of(requires_approval(create_worker)) == "Worker"
    assert delegate_of(requires_approval(refund)) is None
    assert delegate_of(FunctionTool(refund, description="Refund.")) is None


def test_an_irreversible_mark_is_seen_through_wrappers() -> None:
    assert is_irreversible(requires_approval(requires_approval(irreversible(refund)).inner))
    assert is_irreversible(requires_approval(irreversible(refund)))
    assert not is_irreversible(requires_approval(refund))


class Remote(ScriptedModel):
    answers_promptly = False


def test_only_a_model_that_answers_promptly_skips_the_policy_timeout() -> None:
    policy = TeamPolicy(model_timeout=7.0)
    system = SystemMessage(content="A.")
    assert ToolLoop("A", system, ScriptedModel([]), policy=policy).model_timeout is None
    assert ToolLoop("A", system, Remote([]), policy=policy).model_timeout == 7.0


class QuietChannel:
    """A channel that does not show progress."""

    shows_progress = False

    def __init__(self) -> None:
        self.shown: list[Event] = []

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        return None

    async def show(self, session_id: str, event: Event) -> None:
        self.shown.append(event)


class WatchedChannel(QuietChannel):
    """A channel that also shows a turn as it happens."""

    shows_progress = True


async def _turn(channel: QuietChannel) -> None:
    tools = {"refund": FunctionTool(refund, description="Refund an item.")}
    model = ScriptedModel([[tool_call("refund", {"item": "shoes"}, call_id="c1")], "Done."])
    loop = ToolLoop("A", SystemMessage(content="A."), model, tools, channel=channel, shows_progress=True)
    history = [UserMessage(content="refund my shoes", source="User")]
    end = await loop.run(history, ToolContext("s1", "A", channel), CancellationToken())
    assert isinstance(end, Replied) and end.text == "Done."


async def test_tool_activity_goes_to_a_channel_that_shows_progress_and_others_work_without() -> None:
    watched = WatchedChannel()
    await _turn(watched)
    assert watched.shown == [
        ToolStarted(agent="A", tool="refund", call_id="c1", arguments='{"item": "shoes"}'),
        ToolFinished(agent="A", tool="refund", call_id="c1", result="refunded shoes", is_error=False),
    ]
    quiet = QuietChannel()
    await _turn(quiet)
    assert quiet.shown == []
