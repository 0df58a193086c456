"""A turn that gets no answer is reported to the person, who can say it again.

Between processes a message can be lost: a worker killed while it handled the turn, a host restarted
while the message crossed it. Without a watch the person would wait forever. The front end notes each
``UserTask`` it sends; anything the session hears back (a handoff, a question, a reply) shows the turn
is alive. After ``timeout`` seconds of silence the front end delivers an ``Undeliverable`` to its own
``UserAgent``, which tells the person and asks again, sending the next message to the same agent.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from autogen_core import AgentId, CancellationToken, TopicId
from autogen_core.models import LLMMessage

from ..channels import AgentReply, Channel, Output, Person
from ..messages import Undeliverable, UserTask
from ..topics import session_topic
from .options import logger
from .runtime import WorkerRuntime

TURN_PROMPT = "you"
"""The prompt of an ordinary turn: the ``UserAgent`` asking it means the previous turn is over."""


@dataclass
class _Turn:
    topic_type: str
    context: list[LLMMessage]
    timer: asyncio.TimerHandle | None = None


class TurnWatch:
    """Timers per session, started by a sent ``UserTask`` and reset by anything heard back."""

    def __init__(self, runtime: WorkerRuntime, *, user_topic: str, timeout: float) -> None:
        self._runtime = runtime
        self._user_topic = user_topic
        self._timeout = timeout
        self._turns: dict[str, _Turn] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def sent(self, session_id: str, topic_type: str, context: list[LLMMessage]) -> None:
        self.answered(session_id)
        self._turns[session_id] = _Turn(topic_type, context)
        self.progress(session_id)

    def progress(self, session_id: str) -> None:
        """Something arrived for the turn: give it ``timeout`` more seconds."""
        turn = self._turns.get(session_id)
        if turn is not None:
            self.pause(session_id)
            turn.timer = asyncio.get_running_loop().call_later(self._timeout, self._expired, session_id)

    def pause(self, session_id: str) -> None:
        """The person is being asked something: their time does not count."""
        turn = self._turns.get(session_id)
        if turn is not None and turn.timer is not None:
            turn.timer.cancel()
            turn.timer = None

    def answered(self, session_id: str) -> None:
        self.pause(session_id)
        self._turns.pop(session_id, None)

    def _expired(self, session_id: str) -> None:
        turn = self._turns.pop(session_id, None)
        if turn is None:
            return
        logger.warning(
            "no answer from %s in session %s for %.0fs", turn.topic_type, session_id, self._timeout
        )
        notice = Undeliverable(
            topic_type=turn.topic_type,
            context=turn.context,
            reason=f"no answer for {self._timeout:.0f}s (a process may have restarted); please say it again",
        )
        task = asyncio.get_running_loop().create_task(
            self._runtime.publish_message(notice, session_topic(self._user_topic, session_id))
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for session_id in list(self._turns):
            self.answered(session_id)


class WatchedRuntime(WorkerRuntime):
    """A front end's runtime: tells its ``TurnWatch`` about every ``UserTask`` it publishes."""

    watch: TurnWatch | None = None

    async def publish_message(
        self,
        message: Any,
        topic_id: TopicId,
        *,
        sender: AgentId | None = None,
        cancellation_token: CancellationToken | None = None,
        message_id: str | None = None,
    ) -> None:
        if self.watch is not None and isinstance(message, UserTask):
            self.watch.sent(topic_id.source, topic_id.type, message.context)
        await super().publish_message(
            message, topic_id, sender=sender, cancellation_token=cancellation_token, message_id=message_id
        )


class WatchedChannel:
    """The front end's channel, reporting to the ``TurnWatch`` what the session hears."""

    def __init__(self, inner: Channel, watch: TurnWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        turn_over = person == "customer" and prompt == TURN_PROMPT
        if turn_over:
            self._watch.answered(session_id)
            return await self._inner.ask(session_id, prompt, person=person)
        self._watch.pause(session_id)
        try:
            return await self._inner.ask(session_id, prompt, person=person)
        finally:
            self._watch.progress(session_id)

    async def show(self, session_id: str, output: Output) -> None:
        if isinstance(output, AgentReply):
            self._watch.answered(session_id)
        else:
            self._watch.progress(session_id)
        await self._inner.show(session_id, output)
