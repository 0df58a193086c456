"""The operator's hand-back as a value: ``HandBack(agent)``, and its text form where only text travels.

A human agent asks the operator for their next line; the answer is what they wrote, or that they hand the
conversation back to an agent. A channel that knows the difference (the web's event channel, where the
console has a button) returns the value itself from :meth:`HandsBack.ask_operator`; a channel that carries
only text (a terminal, a script, a question relayed from another process) carries ``/handoff AGENT``,
read into the value at that edge by :func:`ask_operator`::

    line = await ask_operator(channel, session_id, "HumanAgent input")
    if isinstance(line, HandBack):
        ...  # hand the conversation to line.agent
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from handoffs_runtime.channels.base import Channel

HANDOFF_COMMAND = "/handoff"
"""What a person types to hand the conversation back (``/handoff AGENT``); also the tool name a human
agent's handoff is recorded under."""


@dataclass(frozen=True)
class HandBack:
    """The operator hands the conversation back to ``agent`` (checked by the human agent, not here)."""

    agent: str

    def text(self) -> str:
        """The text form, for a channel that carries only text (``/handoff AGENT``)."""
        return f"{HANDOFF_COMMAND} {self.agent}"


OperatorLine = str | HandBack
"""What the operator answers: their words, or a hand-back."""


@runtime_checkable
class HandsBack(Protocol):
    """A channel whose operator hands back with a value rather than typed text (an optional capability)."""

    async def ask_operator(self, session_id: str, prompt: str) -> OperatorLine | None:
        """As ``Channel.ask(person="operator")``, with a hand-back as a :class:`HandBack`."""
        ...


def read_line(text: str) -> OperatorLine:
    """Typed text as the operator meant it: ``/handoff AGENT`` is a :class:`HandBack`, anything else words."""
    command, _, agent = text.strip().partition(" ")
    return HandBack(agent.strip()) if command == HANDOFF_COMMAND else text


async def ask_operator(channel: Channel, session_id: str, prompt: str) -> OperatorLine | None:
    """The operator's next line through ``channel``: a value where it has one, else typed text read."""
    if isinstance(channel, HandsBack):
        return await channel.ask_operator(session_id, prompt)
    answer = await channel.ask(session_id, prompt, person="operator")
    return None if answer is None else read_line(answer)
