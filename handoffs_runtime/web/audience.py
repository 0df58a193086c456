"""An event as each page receives it: the operator console all of it, a customer's page no internals.

A web customer is a stranger: they read what was said, that a request is being worked on and who has
the conversation now, in plain words, and never a tool's name, arguments or result, a refused handoff's
reason, a notice's detail (a file's path, another process's pid and host), or the operator's side of an
approval. The operator console gets every event whole (:func:`~handoffs_runtime.messages.event_json`).
"""

from __future__ import annotations

from typing import Any

from handoffs_runtime.messages import (
    Event,
    HandoffLine,
    Notice,
    Question,
    Said,
    ToolFinished,
    ToolStarted,
    event_json,
    shown_name,
)

WORKING = "is working on your request…"
"""What a customer reads while an agent runs a tool, after the agent's name."""


def operator_json(event: Event) -> dict[str, Any]:
    """``event`` as the operator console receives it: whole."""
    return event_json(event)


def customer_json(event: Event) -> dict[str, Any] | None:
    """``event`` as a customer's page receives it, or ``None`` for what a customer does not see."""
    match event:
        case ToolStarted(agent=agent, label=label):
            text = f"{shown_name(label, agent)} {WORKING}"
            return {"type": "tool_started", "agent": agent, "label": label, "text": text}
        case ToolFinished():
            return None  # the reply that follows says what came of it
        case HandoffLine(outcome="handoff"):
            return {
                "type": "handoff",
                "source": event.source,
                "target": event.target,
                "source_label": event.source_label,
                "target_label": event.target_label,
                "outcome": "handoff",
            }
        case HandoffLine():
            return None  # a refused handoff or a stopped loop is the team's own business
        case Notice(text=text, recap=recap):
            return {"type": "notice", "text": text, "recap": recap}
        case Question(person="operator") | Said(person="operator"):
            return None  # an approval and its answer, an operator's "/handoff X": the staff's side
        case _:
            return event_json(event)
