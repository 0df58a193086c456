"""A person's message that finds its agent unserved for a moment is sent again, not lost.

After a host restart the front end reconnects and sends what the person typed meanwhile, usually before
the workers have registered again, and the host answers ``Undeliverable``. For ``window`` seconds from
that first answer the front end sends the same ``UserTask`` again, with a growing pause, and tells the
person once that it is reconnecting; only when the window has passed does the ``Undeliverable`` go on to
the ``UserAgent``, which says the agent is not available. Only the person's own message is sent again
(the ``Undeliverable`` carries its context), never a stale one.

A lost connection sends again what it cannot tell arrived (see ``outbox``): under load gRPC may report a
message written only after its answer was read, so an earlier message, already answered, can reach the
restarted host too. Its refusal is dropped here: the person's last message goes on from its answer, and
telling them that the earlier one was not delivered would be false (and would turn their conversation
back to it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from autogen_core import TopicId

from handoffs_runtime.channels.base import Channel
from handoffs_runtime.distributed.options import logger
from handoffs_runtime.messages import Notice, Undeliverable, UserTask, goes_on_from

Publish = Callable[[Any, TopicId], Awaitable[None]]


@dataclass
class _Sent:
    topic: TopicId
    task: UserTask
    since: float | None = None  # when the host first said nobody serves the topic
    delay: float = 0.0


class Redelivery:
    """The last ``UserTask`` each session sent, ready to be sent again while its agent is away."""

    def __init__(
        self,
        publish: Publish,
        channel: Channel,
        *,
        window: float,
        initial_delay: float = 0.2,
        maximum_delay: float = 2.0,
    ) -> None:
        self._publish = publish
        self._channel = channel
        self._window = window
        self._initial = initial_delay
        self._maximum = maximum_delay
        self._sent: dict[str, _Sent] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def sent(self, topic: TopicId, task: UserTask) -> None:
        last = self._sent.get(topic.source)
        if last is not None and last.task is task:
            return  # our own resend: the window keeps counting from the first refusal
        self._sent[topic.source] = _Sent(topic, task, delay=self._initial)

    def delivered(self, session_id: str) -> None:
        """An answer came: nothing of the session needs sending again."""
        self._sent.pop(session_id, None)

    forget = delivered

    def retry(self, session_id: str, notice: Undeliverable) -> bool:
        """Whether ``notice`` is handled here: the person's message will be sent again shortly, or the
        refused message is an earlier one, answered already (see the module docstring)."""
        last = self._sent.get(session_id)
        if last is None or notice.reason:
            return False
        if goes_on_from(last.task.context, notice.context):
            logger.info(
                "dropped a refusal of an earlier message in session %s: it was answered before the host "
                "restarted",
                session_id,
            )
            return True
        if notice.topic_type != last.topic.type:
            return False
        if notice.context != last.task.context:
            return False  # not the person's message (a handoff between agents): not ours to resend
        loop = asyncio.get_running_loop()
        first = last.since is None
        if last.since is None:
            last.since = loop.time()
        if loop.time() - last.since + last.delay > self._window:
            del self._sent[session_id]
            return False
        delay, last.delay = last.delay, min(last.delay * 2, self._maximum)
        logger.info(
            "%s not served yet in session %s; sending again in %.2fs", last.topic.type, session_id, delay
        )
        task = loop.create_task(self._again(last, delay, announce=first))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _again(self, sent: _Sent, delay: float, *, announce: bool) -> None:
        session = sent.topic.source
        if announce:
            text = f"… {sent.topic.type} is not available yet (reconnecting); your message waits for it"
            await self._channel.show(session, Notice(text=text))
        await asyncio.sleep(delay)
        if self._sent.get(session) is sent:
            await self._publish(sent.task, sent.topic)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._sent.clear()
