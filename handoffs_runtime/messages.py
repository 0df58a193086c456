"""The message protocol that agents publish to each other.

These are pydantic models because they cross the gRPC wire in distributed mode. The whole conversation
travels inside the message (``context``), so agents hold no state between messages and any worker can
serve any session.
"""

from __future__ import annotations

from typing import Any, Literal

from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from pydantic import BaseModel, Field

from handoffs_runtime.usage import Usage


class UserLogin(BaseModel):
    """Starts a session: published to the ``User`` topic with the session id as the topic source."""


class UserTask(BaseModel):
    """A conversation handed to an agent, with everything said so far.

    ``turn_path`` lists the agents that have held the conversation since the person last spoke; the loop
    guard reads it to bound handoffs per turn and to spot ping-pong between two agents.
    """

    context: list[LLMMessage]
    turn_path: list[str] = Field(default_factory=list)
    trace: dict[str, str] | None = None
    """W3C trace context of the turn (``traceparent``, ``tracestate``), set only when telemetry is on."""
    usage: Usage = Usage.EMPTY
    """Tokens the session has used so far, by agent (see :mod:`.usage`)."""


class AgentResponse(BaseModel):
    """An agent's answer to the person; the person's next message goes to ``reply_to_topic_type``."""

    reply_to_topic_type: str
    context: list[LLMMessage]
    trace: dict[str, str] | None = None
    """W3C trace context of the turn, set only when telemetry is on."""
    usage: Usage = Usage.EMPTY
    """Tokens the session has used, by agent, including this turn's (see :mod:`.usage`)."""


HandoffOutcome = Literal["handoff", "refused", "loop_stopped"]


class HandoffEvent(BaseModel):
    """What observers (the console, a trace, a dashboard) learn about every handoff decision.

    ``said`` is the text the model wrote next to the handoff call ("I'll pass you to sales"), shown to
    the person with the handoff; it is model output, so it is shown as plain text only.
    """

    session_id: str
    source: str
    target: str
    tool: str
    outcome: HandoffOutcome = "handoff"
    arguments: dict[str, Any] | None = None
    hop: int = 0
    reason: str = ""
    kind: str = ""
    """``reason`` with nothing quoted from the conversation or the model (``validation failed: account``):
    what telemetry records unless content capture is on."""
    said: str = ""


class WorkerTask(BaseModel):
    """A task sent (RPC, not published) to a worker or an agent offered as a tool; see ``WorkerResult``.

    ``timeout`` travels with the task so the worker stops on its own even where cancellation cannot reach
    it (across a gRPC host).
    """

    session_id: str
    task: str
    caller: str
    depth: int = 1
    timeout: float | None = None
    trace: dict[str, str] | None = None
    """W3C trace context of the caller's tool call, set only when telemetry is on."""


class WorkerResult(BaseModel):
    """A worker's final answer, or why it has none (``ok=False``)."""

    text: str
    ok: bool = True
    usage: Usage = Usage.EMPTY
    """Tokens the worker (and the workers it created) used for this task, by agent."""


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


class PersonProgress(BaseModel):
    """A turn under way on another process, for the channel's ``progress`` of the session's person: a
    piece of ``agent``'s reply as the model writes it, or (``tool`` set) a tool call of ``agent``
    starting (``result`` None) or finished. Shown only, never stored: the reply that follows is."""

    agent: str
    text: str = ""
    tool: str = ""
    call_id: str = ""
    arguments: str = ""
    result: str | None = None
    is_error: bool = False


MESSAGE_TYPES: tuple[type[BaseModel], ...] = (
    UserLogin,
    UserTask,
    AgentResponse,
    HandoffEvent,
    WorkerTask,
    WorkerResult,
    Undeliverable,
    PersonQuestion,
    PersonAnswer,
    PersonNotice,
    PersonProgress,
)
"""Every message type of the protocol: a distributed worker registers a serializer for each."""


# --- building messages on the hot path ----------------------------------------------------------------
#
# The whole conversation travels in every UserTask and AgentResponse, and pydantic re-checks each item of
# ``context`` on construction: about 0.5 µs per message, so a 60-message conversation costs 30 µs per hop.
# When every item is already an LLMMessage instance (what the agents build), that check is all pydantic
# would do, so it is done here in one pass and the model is constructed without re-validation. Anything
# else (a filter that returned dicts, say) goes through full validation as before.

_LLM_MESSAGE_TYPES: tuple[type[BaseModel], ...] = (
    SystemMessage,
    UserMessage,
    AssistantMessage,
    FunctionExecutionResultMessage,
)


def _validated_already(context: object, *names: object) -> bool:
    return (
        type(context) is list
        and all(isinstance(m, _LLM_MESSAGE_TYPES) for m in context)
        and all(type(n) is str for n in names)
    )


def user_task(context: list[LLMMessage], turn_path: list[str], usage: Usage = Usage.EMPTY) -> UserTask:
    """``UserTask(context=..., turn_path=..., usage=...)``, without re-validating items that are
    LLMMessages already (``usage`` is a ``Usage``: valid by construction)."""
    if type(turn_path) is list and _validated_already(context, *turn_path):
        return UserTask.model_construct(context=context, turn_path=turn_path, trace=None, usage=usage)
    return UserTask(context=context, turn_path=turn_path, usage=usage)


def agent_response(
    context: list[LLMMessage], reply_to_topic_type: str, usage: Usage = Usage.EMPTY
) -> AgentResponse:
    """``AgentResponse(...)``, without re-validating items that are LLMMessages already."""
    if _validated_already(context, reply_to_topic_type):
        return AgentResponse.model_construct(
            context=context, reply_to_topic_type=reply_to_topic_type, trace=None, usage=usage
        )
    return AgentResponse(context=context, reply_to_topic_type=reply_to_topic_type, usage=usage)
