"""Handing back by rule: a session's return stack, read from its handoff events.

A handoff declared ``returns=True`` pushes ``(caller, target)``; when the target's part is done, the
conversation goes back to the caller, recorded as a hand-back event. A part is done when the target's turn
ends in a reply that does not wait for the person: not a question (:func:`asks`), and for a remote agent
a task that completed rather than one that requires input.

The stack is nothing but a fold over the session's handoff events, so it is kept in the store
wherever the events are (every backend, in the same transaction as the reply that ends the part), and a
restarted process reads it back with the transcript.

>>> ev = HandoffEvent(session_id="s", source="Triage", target="Refunds", tool="t", returns=True)
>>> after((), ev)
(ReturnPoint(caller='Triage', target='Refunds'),)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from handoffs_runtime.messages import HandoffEvent

HAND_BACK_TOOL = "hand_back"
"""The tool name of a hand-back event: no model called it, the rule did."""
HAND_BACK_REASON = "its part is done"

ReturnStack = tuple["ReturnPoint", ...]


@dataclass(frozen=True, slots=True)
class ReturnPoint:
    """The agent that handed over with ``returns=True`` and the agent it waits for."""

    caller: str
    target: str


@runtime_checkable
class KnowsWhenDone(Protocol):
    """A model that knows whether its agent's part is done (a remote agent: its task's state), so the
    reply's words need not tell. Optional; read by the agent when its turn ends in a reply."""

    def part_done(self, session_id: str) -> bool | None:
        """Whether the last answer in ``session_id`` ended the part; ``None``: not known."""
        ...


def after(stack: ReturnStack, event: HandoffEvent) -> ReturnStack:
    """The stack after ``event``: a handoff from the awaited target back to its caller (by rule or by the
    target's own handoff) pops; a returning handoff pushes; anything else leaves it as it is."""
    if event.outcome != "handoff":
        return stack
    if stack and event.source == stack[-1].target and event.target == stack[-1].caller:
        return stack[:-1]
    if event.returns:
        return (*stack, ReturnPoint(event.source, event.target))
    return stack


def replay(events: Iterable[HandoffEvent]) -> ReturnStack:
    """The stack of a session whose handoff events, in order, are ``events``."""
    stack: ReturnStack = ()
    for event in events:
        stack = after(stack, event)
    return stack


_QUESTION = re.compile(r"\?\s*(\([^()]*\))?[\s\"'”’)]*$")
"""A text that ends in a question, maybe followed by the answers it takes: ``Shall I? (yes/no)``."""


def asks(text: str) -> bool:
    """Whether a reply waits for the person's answer (it ends in a question)."""
    return _QUESTION.search(text) is not None


def hand_back(
    stack: ReturnStack, session_id: str, agent: str, text: str, *, done: bool | None = None
) -> HandoffEvent | None:
    """The hand-back event due when ``agent`` ends its turn with the reply ``text``, or ``None`` when nobody
    waits for ``agent`` (the stack's top is another agent's, or empty) or its part is not done: ``done``
    says so when the agent knows (a remote task's state), else the reply's words (:func:`asks`)."""
    if not stack or stack[-1].target != agent:
        return None
    if not (done if done is not None else not asks(text)):
        return None
    return HandoffEvent(
        session_id=session_id,
        source=agent,
        target=stack[-1].caller,
        tool=HAND_BACK_TOOL,
        reason=HAND_BACK_REASON,
        kind=HAND_BACK_REASON,
    )
