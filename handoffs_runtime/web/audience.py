"""An event as each page receives it: the operator console all of it, a customer's page no internals.

A web customer is a stranger: they read what was said, that a request is being worked on and who has
the conversation now, in plain words, and never a tool's name, arguments or result, a refused handoff's
reason, a notice's detail (a file's path, another process's pid and host), or the operator's side of an
approval. The operator console gets every event whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from handoffs_runtime.messages import (
    Delta,
    Event,
    HandoffLine,
    Notice,
    Question,
    Reply,
    Said,
    SessionEnded,
    ToolFinished,
    ToolStarted,
    shown_name,
)

WORKING = "is working on your request…"
"""What a customer reads while an agent runs a tool, after the agent's name."""


@dataclass(slots=True, kw_only=True)
class Working:
    """A customer's view of ``ToolStarted``: who is at work, in words (``text``), not which tool."""

    __pydantic_config__ = ConfigDict(extra="forbid")
    type: Literal["tool_started"] = "tool_started"
    agent: str
    label: str = ""
    text: str


@dataclass(slots=True, kw_only=True)
class HandedOver:
    """A customer's view of a handoff carried out: who has the conversation now, not through which tool."""

    __pydantic_config__ = ConfigDict(extra="forbid")
    type: Literal["handoff"] = "handoff"
    source: str
    target: str
    source_label: str = ""
    target_label: str = ""
    outcome: Literal["handoff"] = "handoff"


@dataclass(slots=True, kw_only=True)
class Told:
    """A customer's view of a ``Notice``: its text, without the detail for whoever runs the server."""

    __pydantic_config__ = ConfigDict(extra="forbid")
    type: Literal["notice"] = "notice"
    text: str
    recap: bool = False


CustomerView = Annotated[
    Reply | Delta | Working | HandedOver | Question | Said | Told | SessionEnded, Field(discriminator="type")
]
"""An event as a customer's page receives it."""


def customer_view(event: Event) -> CustomerView | None:
    """``event`` as a customer's page receives it, or ``None`` for what a customer does not see."""
    match event:
        case ToolStarted(agent=agent, label=label):
            return Working(agent=agent, label=label, text=f"{shown_name(label, agent)} {WORKING}")
        case ToolFinished():
            return None  # the reply that follows says what came of it
        case HandoffLine(outcome="handoff"):
            return HandedOver(
                source=event.source,
                target=event.target,
                source_label=event.source_label,
                target_label=event.target_label,
            )
        case HandoffLine():
            return None  # a refused handoff or a stopped loop is the team's own business
        case Notice(text=text, recap=recap):
            return Told(text=text, recap=recap)
        case Question(person="operator") | Said(person="operator"):
            return None  # an approval and its answer, an operator's hand-back: the staff's side
        case _:
            return event
