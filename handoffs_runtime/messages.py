"""The message protocol that agents publish to each other.

These are pydantic models because they cross the gRPC wire in distributed mode. The whole conversation
travels inside the message (``context``), so agents hold no state between messages and any worker can
serve any session.
"""

from __future__ import annotations

from typing import Any, Literal

from autogen_core.models import LLMMessage
from pydantic import BaseModel, Field


class UserLogin(BaseModel):
    """Starts a session: published to the ``User`` topic with the session id as the topic source."""


class UserTask(BaseModel):
    """A conversation handed to an agent, with everything said so far.

    ``turn_path`` lists the agents that have held the conversation since the person last spoke; the loop
    guard reads it to bound handoffs per turn and to spot ping-pong between two agents.
    """

    context: list[LLMMessage]
    turn_path: list[str] = Field(default_factory=list)

    @property
    def hops(self) -> int:
        """Handoffs made since the person last spoke."""
        return max(len(self.turn_path) - 1, 0)


class AgentResponse(BaseModel):
    """An agent's answer to the person; the person's next message goes to ``reply_to_topic_type``."""

    reply_to_topic_type: str
    context: list[LLMMessage]


HandoffOutcome = Literal["handoff", "refused", "loop_stopped"]


class HandoffEvent(BaseModel):
    """What observers (the console, a trace, a dashboard) learn about every handoff decision."""

    session_id: str
    source: str
    target: str
    tool: str
    outcome: HandoffOutcome = "handoff"
    arguments: dict[str, Any] | None = None
    hop: int = 0
    reason: str = ""


class Undeliverable(BaseModel):
    """A conversation could not reach ``topic_type``; sent to the session's ``User`` topic.

    The host sends it when no worker serves the topic; a worker sends it with a ``reason`` when the
    message was over the size limit. ``context`` is what could not be handed over, so the person can
    try again.
    """

    topic_type: str
    context: list[LLMMessage] = Field(default_factory=list)
    reason: str = ""


class PersonQuestion(BaseModel):
    """A question for the session's person (a confirmation, the operator's turn), asked by an agent on
    another process; the session's ``UserAgent`` answers it with a ``PersonAnswer``."""

    prompt: str
    person: Literal["customer", "operator"] = "customer"


class PersonAnswer(BaseModel):
    """The person's answer; ``None`` when they left."""

    text: str | None = None


class PersonNotice(BaseModel):
    """A line for the session's person from an agent on another process."""

    text: str


MESSAGE_TYPES: tuple[type[BaseModel], ...] = (
    UserLogin,
    UserTask,
    AgentResponse,
    HandoffEvent,
    Undeliverable,
    PersonQuestion,
    PersonAnswer,
    PersonNotice,
)
"""Every message type of the protocol: a distributed worker registers a serializer for each."""
