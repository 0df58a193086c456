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
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from autogen_core import JSON_DATA_CONTENT_TYPE, AgentId, CancellationToken, MessageContext, TopicId
from autogen_core.models import LLMMessage
from autogen_ext.runtimes.grpc import _constants as wire
from autogen_ext.runtimes.grpc.protos import cloudevent_pb2

from ..channels import AgentReply, Channel, Output, Person
from ..messages import AgentResponse, Undeliverable, UserTask
from ..topics import session_topic
from .options import logger
from .runtime import WorkerRuntime
from .serializers import type_name

_REPLY = type_name(AgentResponse)
_ANSWERS = frozenset({_REPLY, type_name(Undeliverable)})
"""What ends a turn at the ``UserAgent`` (it then asks the person again)."""

TURN_PROMPT = "you"
"""The prompt of an ordinary turn: the ``UserAgent`` asking it means the previous turn is over."""


@dataclass
class _Turn:
    topic_type: str
    context: list[LLMMessage]
    timer: asyncio.TimerHandle | None = None


def _extends(context: list[LLMMessage], turn: list[LLMMessage]) -> bool:
    return len(context) > len(turn) and context[: len(turn)] == turn


class TurnWatch:
    """Timers per session, started by a sent ``UserTask`` and reset by anything heard back."""

    def __init__(self, runtime: WatchedRuntime, *, user_topic: str, timeout: float) -> None:
        self._runtime = runtime
        self._user_topic = user_topic
        self._timeout = timeout
        self._turns: dict[str, _Turn] = {}
        self._given_up: dict[str, list[LLMMessage]] = {}
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

    def admit(self, session_id: str, context: list[LLMMessage] | None) -> bool:
        """Whether an answer may go on to the ``UserAgent``: only while a turn waits for one, once, and not
        a reply (with its ``context``) that extends a turn given up rather than the one waiting."""
        turn = self._turns.get(session_id)
        if turn is None:
            return False
        given_up = self._given_up.get(session_id)
        late = given_up is not None and context is not None and _extends(context, given_up)
        if late and context is not None and not _extends(context, turn.context):
            return False
        self.answered(session_id)
        return True

    def forget(self, session_id: str) -> None:
        """The session ended: nothing of it is kept."""
        self.answered(session_id)
        self._given_up.pop(session_id, None)

    def _expired(self, session_id: str) -> None:
        turn = self._turns.pop(session_id, None)
        if turn is None:
            return
        self._given_up[session_id] = turn.context
        logger.warning("no answer from %s in session %s for %gs", turn.topic_type, session_id, self._timeout)
        notice = Undeliverable(
            topic_type=turn.topic_type,
            context=turn.context,
            reason=f"no answer for {self._timeout:g}s (a process may have restarted); please say it again",
        )
        task = asyncio.get_running_loop().create_task(
            self._runtime.deliver_here(notice, session_topic(self._user_topic, session_id))
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for session_id in list(self._turns):
            self.answered(session_id)


class WatchedRuntime(WorkerRuntime):
    """A front end's runtime: tells its ``TurnWatch`` about every ``UserTask`` it publishes, and lets
    through only the answers the watch admits."""

    watch: TurnWatch | None = None

    async def _process_event(self, event: cloudevent_pb2.CloudEvent) -> None:
        schema = event.attributes.get(wire.DATA_SCHEMA_ATTR)
        kind = schema.ce_string if schema is not None else ""
        if self.watch is not None and event.type == self._user_topic and kind in _ANSWERS:
            context = None
            if kind == _REPLY:
                reply = self._serialization_registry.deserialize(
                    event.binary_data, type_name=kind, data_content_type=JSON_DATA_CONTENT_TYPE
                )
                context = reply.context if isinstance(reply, AgentResponse) else None
            if not self.watch.admit(event.source, context):
                logger.warning("dropped a late %s in session %s: its turn was given up", kind, event.source)
                return
        await super()._process_event(event)

    async def deliver_here(self, message: Any, topic_id: TopicId) -> None:
        """Hand ``message`` to this process's agents subscribed to ``topic_id``, without the host."""
        for agent_id in await self._subscription_manager.get_subscribed_recipients(topic_id):
            agent = await self._get_agent(agent_id)
            context = MessageContext(
                sender=None,
                topic_id=topic_id,
                is_rpc=False,
                cancellation_token=CancellationToken(),
                message_id=str(uuid.uuid4()),
            )
            await agent.on_message(message, ctx=context)

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
