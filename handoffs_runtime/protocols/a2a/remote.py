"""A remote A2A agent as a member of a team: the agent's model is the remote agent, reached over A2A.

The project's A2A handoff convention, the calling side:

- **Context**: our session is the A2A ``contextId``. The first message of a context carries the
  conversation so far as a text part marked ``{"handoffs": "history"}`` in its metadata, then the person's
  words; later messages carry only the person's words (the remote keeps its context).
- **Task states**: ``input-required`` (or ``auth-required``): the remote agent waits for the person, who
  keeps talking to it; the task's id goes with their next message. ``completed``: its part is done, and
  the conversation goes back to the agent that handed it over, with the remote's words in its context.
  ``failed``, ``rejected``, ``canceled``, or no answer in time: the person is told in one sentence, and the
  conversation goes back too.
- **Hand back**: by the ``returns`` rule (:mod:`handoffs_runtime.handoffs.returns`); a handoff to a
  remote agent in a team file returns unless it says ``returns: false``.
- **As a tool** (``agent_tools``): each call is a context of its own (``<session>.ask.<id>``), one
  message, and its answer is the tool's result, whatever the task's state.

Being a model, the remote call gets what every model call gets: the turn's budget and loop guard, its
cancellation, a model span in the traces (its W3C trace context goes in the message's metadata, as
``traceparent`` and ``tracestate``), and the agent's per-call deadline.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Sequence
from typing import Unpack

import httpx
from a2a.client import A2ACardResolver, A2AClientError, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, Task, TaskState
from autogen_core import Component
from autogen_core.models import AssistantMessage, CreateResult, LLMMessage, RequestUsage, UserMessage
from google.protobuf.struct_pb2 import Struct
from pydantic import BaseModel, Field

from handoffs_runtime.models.local import CreateOptions, LocalModel, current_model_call
from handoffs_runtime.telemetry.propagation import carrier_of
from handoffs_runtime.tools.context import current_tool_context
from handoffs_runtime.topics import tool_agent_type

logger = logging.getLogger("handoffs_runtime")

HISTORY = "history"
WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
GAVE_UP = frozenset(
    {TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_CANCELED}
)
_ZERO = RequestUsage(prompt_tokens=0, completion_tokens=0)


class RemoteA2AConfig(BaseModel):
    """A remote A2A agent: where it is, the environment variable holding its bearer token (never the
    token itself), and how long one call may take."""

    url: str
    token_env: str | None = None
    timeout: float = Field(default=60.0, gt=0)
    name: str = ""
    """What the person reads for it when it cannot be reached (its card's name, else its address)."""


class RemoteA2AAgent(LocalModel, Component[RemoteA2AConfig]):
    """The remote agent behind a team member (see the module docstring). Its card is read at start."""

    component_type = "model"
    component_config_schema = RemoteA2AConfig
    label = "a2a"
    answers_promptly = False

    def __init__(
        self, url: str, *, token_env: str | None = None, timeout: float = 60.0, name: str = ""
    ) -> None:
        super().__init__()
        self.record_calls = False
        self.url = url.rstrip("/")
        self.token_env = token_env
        self.timeout = timeout
        self.name = name
        self.card: AgentCard | None = None
        self._tasks: dict[str, str] = {}
        """The task waiting for the person, by session."""
        self._started: set[str] = set()
        """Sessions whose context the remote agent has been given."""
        self._done: dict[str, bool] = {}
        self._read_card_now()

    # --- autogen component ---------------------------------------------------------------------------

    def _to_config(self) -> RemoteA2AConfig:
        return RemoteA2AConfig(url=self.url, token_env=self.token_env, timeout=self.timeout, name=self.name)

    @classmethod
    def _from_config(cls, config: RemoteA2AConfig) -> RemoteA2AAgent:
        return cls(config.url, token_env=config.token_env, timeout=config.timeout, name=config.name)

    # --- the remote call -----------------------------------------------------------------------------

    def part_done(self, session_id: str) -> bool | None:
        return self._done.pop(session_id, None)

    async def create(self, messages: Sequence[LLMMessage], **options: Unpack[CreateOptions]) -> CreateResult:
        """The remote agent's answer to the person's last words; ``options`` (tools, ...) are the remote's
        own business, so none is sent."""
        call = current_model_call()
        session = call.session_id if call is not None else "default"
        as_tool = _asked_as_tool()
        if as_tool:  # a one-off question: a context of its own, nothing kept
            session = f"{session}.ask.{uuid.uuid4().hex[:12]}"
        try:
            text, done = await asyncio.wait_for(self._send(session, messages), self.timeout)
        except (TimeoutError, A2AClientError, httpx.HTTPError, OSError) as exc:
            logger.warning("remote A2A agent at %s failed in session %s: %r", self.url, session, exc)
            self._tasks.pop(session, None)
            text, done = self._unreachable(isinstance(exc, TimeoutError)), True
        if as_tool:
            self._started.discard(session)
            self._tasks.pop(session, None)
        else:
            self._done[session] = done
        return CreateResult(finish_reason="stop", content=text, usage=_ZERO, cached=False)

    def _unreachable(self, slow: bool) -> str:
        who = self.name or (self.card.name if self.card is not None else "") or "The other team"
        why = "is not answering in time" if slow else "cannot be reached right now"
        return f"{who} {why}, so your conversation stays with us; please try again later."

    def _gave_up(self) -> str:
        who = self.name or (self.card.name if self.card is not None else "") or "The other team"
        return f"{who} could not help with that, so your conversation stays with us."

    async def _send(self, session: str, messages: Sequence[LLMMessage]) -> tuple[str, bool]:
        async with httpx.AsyncClient(headers=self._headers(), timeout=self.timeout) as http:
            if self.card is None:
                self.card = await A2ACardResolver(http, self.url).get_agent_card()
            client = await create_client(self.card, ClientConfig(streaming=False, httpx_client=http))
            message = self._message(session, messages)
            task: Task | None = None
            reply: Message | None = None
            async for response in client.send_message(SendMessageRequest(message=message)):
                if response.HasField("task"):
                    task = response.task
                elif response.HasField("message"):
                    reply = response.message
                elif response.HasField("status_update") and task is not None:
                    task.status.CopyFrom(response.status_update.status)
            await client.close()
        self._started.add(session)
        if task is None:  # a plain message: the remote agent answered and is done
            return (get_message_text(reply) if reply is not None else ""), True
        waiting = task.status.state in WAITING
        if waiting:
            self._tasks[session] = task.id
        else:
            self._tasks.pop(session, None)
        said = get_message_text(task.status.message)
        if task.status.state in GAVE_UP:
            return said or self._gave_up(), True
        return said or _last_words(task), not waiting

    def _message(self, session: str, messages: Sequence[LLMMessage]) -> Message:
        said = [m for m in messages if isinstance(m, UserMessage | AssistantMessage)]
        latest = next((m for m in reversed(said) if isinstance(m, UserMessage)), None)
        words = latest.content if latest is not None and isinstance(latest.content, str) else ""
        parts = []
        if session not in self._started:
            earlier = [_line(m) for m in said if m is not latest]
            if lines := [line for line in earlier if line]:
                marker = Struct()
                marker.update({"handoffs": HISTORY})
                parts.append(Part(text="\n".join(lines), metadata=marker))
        parts.append(Part(text=words or "(the conversation was handed to you)"))
        message = Message(
            role=Role.ROLE_USER,
            parts=parts,
            message_id=uuid.uuid4().hex,
            context_id=session,
            task_id=self._tasks.get(session, ""),
        )
        carrier = carrier_of()  # the trace goes on on the other side: W3C fields in the metadata
        if carrier is not None:
            message.metadata.update(carrier)
        return message

    def _headers(self) -> dict[str, str]:
        if not self.token_env:
            return {}
        token = os.environ.get(self.token_env, "")
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _read_card_now(self) -> None:
        """Read the card at start (bounded); a remote agent down now is tried again at the first call."""
        try:
            response = httpx.get(f"{self.url}/.well-known/agent-card.json", timeout=min(self.timeout, 5.0))
            response.raise_for_status()
            from a2a.client.card_resolver import parse_agent_card

            self.card = parse_agent_card(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            logger.warning("the card of the A2A agent at %s could not be read at start: %r", self.url, exc)


def _asked_as_tool() -> bool:
    """Whether the agent answers as another agent's tool (its ``<name>.tool`` worker) right now."""
    context = current_tool_context()
    if context is None or context.agent_id is None:
        return False
    return context.agent_id.type.startswith(tool_agent_type(context.agent))


def _line(message: UserMessage | AssistantMessage) -> str:
    if not isinstance(message.content, str) or not message.content:
        return ""
    who = "customer" if isinstance(message, UserMessage) else message.source
    return f"{who}: {message.content}"


def _last_words(task: Task) -> str:
    agent = [m for m in task.history if m.role == Role.ROLE_AGENT]
    return get_message_text(agent[-1]) if agent else ""
