"""A turn that gets no answer is reported to the person, who can say it again.

Between processes a message can be lost: a worker killed while it handled the turn, a host restarted
while the message crossed it. Without a watch the person would wait forever. The front end notes each
``UserTask`` it sends; anything the session hears back (a handoff, a question, a reply) shows the turn
is alive. After ``timeout`` seconds of silence the front end hands an ``Undeliverable`` straight to its
own ``UserAgent`` (not through the host, which may be the part that is down), which tells the person and
asks again, sending the next message to the same agent.

One prompt at a time: each sent ``UserTask`` admits one answer (an ``AgentResponse`` or an
``Undeliverable``), and none comes through while no turn waits. A reply to a turn given up is dropped
(it is known by its context, which extends that turn's), or the session would fork into two
conversations asking the person at once. If the person says the very same words again, the late reply
answers them, and the second reply is the one dropped.

The watch follows the turn from agent to agent (handoff events), so a notice names the agent that
actually missed it; after ``notice_after`` seconds of silence it says once which agent it is still
waiting for. An operator's answer that was the last thing the turn heard when it was given up (the
human agent's worker died with it) is kept and offered to the operator again at their next prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Unpack

from autogen_core import TopicId
from autogen_core.models import LLMMessage
from autogen_ext.runtimes.grpc.protos import cloudevent_pb2

from handoffs_runtime.channels.base import Channel
from handoffs_runtime.distributed.options import logger
from handoffs_runtime.distributed.redelivery import Redelivery
from handoffs_runtime.distributed.serializers import type_name
from handoffs_runtime.distributed.worker_runtime import Delivery, WorkerRuntime
from handoffs_runtime.messages import (
    PROGRESS,
    AgentResponse,
    Event,
    HandoffLine,
    Notice,
    Person,
    Reply,
    Undeliverable,
    UserTask,
    goes_on_from,
)
from handoffs_runtime.private.autogen_grpc import message_type_of
from handoffs_runtime.topics import session_topic

_REPLY = type_name(AgentResponse)
_UNDELIVERABLE = type_name(Undeliverable)
_ANSWERS = frozenset({_REPLY, _UNDELIVERABLE})
"""What ends a turn at the ``UserAgent`` (it then asks the person again)."""

TURN_PROMPT = "you"
"""The prompt of an ordinary turn: the ``UserAgent`` asking it means the previous turn is over."""


@dataclass
class _Turn:
    topic_type: str  # the agent the turn is with now
    context: list[LLMMessage]
    timer: asyncio.TimerHandle | None = None
    nudge: asyncio.TimerHandle | None = None
    nudged: bool = False
    operator_said: str | None = None  # the operator's answer, if it is the last thing the turn heard


class TurnWatch:
    """Timers per session, started by a sent ``UserTask`` and reset by anything heard back."""

    def __init__(
        self,
        runtime: WatchedRuntime,
        *,
        user_topic: str,
        timeout: float,
        channel: Channel | None = None,
        notice_after: float | None = None,
    ) -> None:
        self._runtime = runtime
        self._user_topic = user_topic
        self._timeout = timeout
        self._channel = channel  # for "still waiting" notices (None: none are shown)
        self._notice_after = notice_after if notice_after is not None and notice_after < timeout else None
        self._turns: dict[str, _Turn] = {}
        self._given_up: dict[str, list[LLMMessage]] = {}
        self._kept: dict[str, str] = {}
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
            loop = asyncio.get_running_loop()
            turn.timer = loop.call_later(self._timeout, self._expired, session_id)
            if self._notice_after is not None and self._channel is not None and not turn.nudged:
                turn.nudge = loop.call_later(self._notice_after, self._still_waiting, session_id)

    def pause(self, session_id: str) -> None:
        """The person is being asked something: their time does not count."""
        turn = self._turns.get(session_id)
        if turn is not None:
            for handle in (turn.timer, turn.nudge):
                if handle is not None:
                    handle.cancel()
            turn.timer = turn.nudge = None

    def moved(self, session_id: str, agent: str) -> None:
        """The turn was handed to ``agent``: a notice about it names that agent."""
        turn = self._turns.get(session_id)
        if turn is not None:
            turn.topic_type = agent

    def operator_answered(self, session_id: str, text: str | None) -> None:
        turn = self._turns.get(session_id)
        if turn is not None:
            turn.operator_said = text if text and text.strip() else None

    def take_kept(self, session_id: str) -> str | None:
        """The operator's answer that never arrived, to offer again (once)."""
        return self._kept.pop(session_id, None)

    def _still_waiting(self, session_id: str) -> None:
        turn = self._turns.get(session_id)
        if turn is None or self._channel is None:
            return
        turn.nudge, turn.nudged = None, True
        text = f"… still waiting for {turn.topic_type}"
        self._spawn(self._channel.show(session_id, Notice(text=text)))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def answered(self, session_id: str) -> None:
        self.pause(session_id)
        self._turns.pop(session_id, None)

    def admit(self, session_id: str, context: list[LLMMessage] | None) -> bool:
        """Whether an answer may go on to the ``UserAgent``: only while a turn waits for one, once, and not
        a reply (with its ``context``) that extends a turn given up rather than the one waiting."""
        turn = self._turns.get(session_id)
        if turn is None:
            return False
        given_up = self._given_up.get(session_id)
        late = given_up is not None and context is not None and goes_on_from(context, given_up)
        if late and context is not None and not goes_on_from(context, turn.context):
            return False
        self.answered(session_id)
        return True

    def forget(self, session_id: str) -> None:
        """The session ended: nothing of it is kept."""
        self.answered(session_id)
        self._given_up.pop(session_id, None)
        self._kept.pop(session_id, None)

    def _expired(self, session_id: str) -> None:
        turn = self._turns.pop(session_id, None)
        if turn is None:
            return
        self._given_up[session_id] = turn.context
        logger.warning("no answer from %s in session %s for %gs", turn.topic_type, session_id, self._timeout)
        reason = f"no answer for {self._timeout:g}s (a process may have restarted); please say it again"
        if turn.operator_said is not None:
            self._kept[session_id] = turn.operator_said
            reason += "; the operator's answer did not arrive either and is kept for them"
        notice = Undeliverable(topic_type=turn.topic_type, context=turn.context, reason=reason)
        self._spawn(self._runtime.deliver_here(notice, session_topic(self._user_topic, session_id)))

    def close(self) -> None:
        for session_id in list(self._turns):
            self.answered(session_id)


class WatchedRuntime(WorkerRuntime):
    """A front end's runtime: tells its ``TurnWatch`` about every ``UserTask`` it publishes, and lets
    through only the answers the watch admits."""

    watch: TurnWatch | None = None
    redelivery: Redelivery | None = None

    def admits(self, event: cloudevent_pb2.CloudEvent) -> bool:
        kind = message_type_of(event)
        if self.redelivery is not None and event.type == self._user_topic and kind in _ANSWERS:
            if kind == _REPLY:
                self.redelivery.delivered(event.source)
            else:
                notice = self.decode(event, kind)
                if isinstance(notice, Undeliverable) and self.redelivery.retry(event.source, notice):
                    return False  # the person's message goes out again shortly; the person was told
        if self.watch is not None and event.type == self._user_topic and kind in _ANSWERS:
            context = None
            if kind == _REPLY:
                reply = self.decode(event, kind)
                context = reply.context if isinstance(reply, AgentResponse) else None
            if not self.watch.admit(event.source, context):
                logger.warning("dropped a late %s in session %s: its turn was given up", kind, event.source)
                return False
        return True

    async def publish_message(self, message: Any, topic_id: TopicId, **options: Unpack[Delivery]) -> None:
        if self.watch is not None and isinstance(message, UserTask):
            self.watch.sent(topic_id.source, topic_id.type, message.context)
        if self.redelivery is not None and isinstance(message, UserTask):
            self.redelivery.sent(topic_id, message)
        await super().publish_message(message, topic_id, **options)


class WatchedChannel:
    """The front end's channel, reporting to the ``TurnWatch`` what the session hears.

    It takes progress whatever the inner channel shows (a delta shows the turn is alive) and passes it on
    only to an inner channel that shows it."""

    shows_progress = True

    def __init__(self, inner: Channel, watch: TurnWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        turn_over = person == "customer" and prompt == TURN_PROMPT
        if turn_over:
            self._watch.answered(session_id)
            return await self._inner.ask(session_id, prompt, person=person)
        kept = self._watch.take_kept(session_id) if person == "operator" else None
        if kept is not None:
            prompt = f"{prompt} (your answer “{kept}” did not arrive; press Enter to send it again)"
        self._watch.pause(session_id)
        try:
            answer = await self._inner.ask(session_id, prompt, person=person)
        finally:
            self._watch.progress(session_id)
        if kept is not None and answer is not None and not answer.strip():
            answer = kept
        if person == "operator":
            self._watch.operator_answered(session_id, answer)
        return answer

    async def show(self, session_id: str, event: Event) -> None:
        if isinstance(event, Reply):
            self._watch.answered(session_id)
        else:
            self._watch.progress(session_id)
            if isinstance(event, HandoffLine) and event.outcome == "handoff":
                self._watch.moved(session_id, event.target)
            if isinstance(event, PROGRESS) and not self._inner.shows_progress:
                return
        await self._inner.show(session_id, event)
