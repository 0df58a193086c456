"""A team as an A2A agent: each A2A context is a session of ours, each request one turn of the person.

The ``contextId`` names the session (hashed into our session ids, so the same context resumes the same
session from the store after a restart); the task's state says whether the team waits for the person
(``input-required``: a confirmation, a question) or is done with what was asked (``completed``). A request
over the limits is ``rejected`` with a sentence that says why; a turn that takes too long is ``failed``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message

from handoffs_runtime.protocols.a2a.bridge import A2ABridge

logger = logging.getLogger("handoffs_runtime")

SESSION_PREFIX = "a2a-"


@dataclass(frozen=True)
class A2ALimits:
    """What one A2A client may ask of a served team; the same numbers as the web chat's."""

    max_text_chars: int = 4000
    """The longest message a person may send."""
    messages_per_minute: int = 30
    """Messages one context may send a minute; beyond it each is rejected in words."""
    max_sessions: int = 1000
    """Sessions live in this process at once."""
    turn_seconds: float = 120.0
    """How long one request waits for the team's turn to end."""
    request_bytes: int = 64 * 1024
    """The largest request body read."""
    idle_seconds: float = 600.0
    """A session nobody wrote in this long is ended (kept in the store: its context resumes it)."""

    def __post_init__(self) -> None:
        for name in (
            "max_text_chars",
            "messages_per_minute",
            "max_sessions",
            "turn_seconds",
            "request_bytes",
            "idle_seconds",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")


def session_for(context_id: str) -> str:
    """Our session id for an A2A context: stable, and never one a web page or a console could choose."""
    return SESSION_PREFIX + hashlib.sha256(context_id.encode()).hexdigest()[:32]


class TeamExecutor(AgentExecutor):
    """Runs one turn of the session of the request's context (see the module docstring).

    ``start`` opens a session on the team's runtime (its ``UserAgent`` resumes it from the store).
    """

    def __init__(
        self, bridge: A2ABridge, start: Callable[[str], Awaitable[None]], limits: A2ALimits | None = None
    ) -> None:
        self._bridge = bridge
        self._start = start
        self.limits: Final = limits or A2ALimits()
        """What a client may ask of the team: this executor's checks, and the app's bound on a body."""
        self._recent: dict[str, deque[float]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id, context.context_id
        if message is None or task_id is None or context_id is None:  # not reached: the SDK fills them in
            raise ValueError("a request without a message, task id or context id")
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task_from_user_message(_with_ids(message, task_id, context_id))
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        text = _person_said(message)
        refused = self._refused(text, context_id)
        if refused is not None:
            await updater.reject(updater.new_agent_message([new_text_part(refused)]))
            return
        session = session_for(context_id)
        if not self._bridge.live(session):
            self._bridge.line(session)
            await self._start(session)
        await updater.start_work()
        try:
            end = await self._bridge.turn(session, text, timeout=self.limits.turn_seconds)
        except TimeoutError:
            logger.warning("A2A session %s: the turn took over %gs", session, self.limits.turn_seconds)
            late = "The team did not answer in time. Please send your message again in a moment."
            await updater.failed(updater.new_agent_message([new_text_part(late)]))
            return
        reply = updater.new_agent_message([new_text_part(end.text or "(no reply)")])
        if end.state == "completed":
            await updater.complete(reply)
        else:
            await updater.requires_input(reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """A turn under way is not stopped half-way (its tools may have acted): the task says so."""
        if context.task_id is None or context.context_id is None:
            return
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()

    def _refused(self, text: str, context_id: str) -> str | None:
        """Why a message is refused, in one sentence, or ``None``."""
        limits = self.limits
        if not text:
            return "Your message is empty: write something for the team to answer."
        if len(text) > limits.max_text_chars:
            return f"Your message is too long: at most {limits.max_text_chars:,} characters, please."
        session = session_for(context_id)
        if not self._bridge.live(session) and self._bridge.live_count() >= limits.max_sessions:
            return "The team is busy with too many conversations; please try again in a few minutes."
        now = time.monotonic()
        if len(self._recent) > limits.max_sessions * 4:  # forget the contexts quiet for a minute
            self._recent = {c: r for c, r in self._recent.items() if r and r[-1] >= now - 60}
        recent = self._recent.setdefault(context_id, deque())
        while recent and recent[0] < now - 60:
            recent.popleft()
        if len(recent) >= limits.messages_per_minute:
            return "You are sending messages too fast; please wait a minute and send it again."
        recent.append(now)
        return None


def _person_said(message: Message) -> str:
    """The person's words: the message's text parts but those marked as the conversation's history (this
    team keeps its own conversation per context; see ``remote``)."""
    said = [p.text for p in message.parts if p.text and p.metadata.fields.get("handoffs") is None]
    return "\n".join(said).strip()


def _with_ids(message: Message, task_id: str, context_id: str) -> Message:
    copy = Message()
    copy.CopyFrom(message)
    copy.task_id, copy.context_id = task_id, context_id
    return copy
