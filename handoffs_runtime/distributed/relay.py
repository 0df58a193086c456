"""``RelayChannel``: how an agent on a worker reaches the person, who sits at the session's front end.

A tool that asks for a confirmation (``ask_person``) or the ``HumanAgent`` asking the operator must reach
the front end of that session, not the worker's own terminal. The question travels as an RPC to the
session's ``UserAgent`` (the host finds the front end that holds it), which asks its channel and returns
the answer; an event to show travels as a ``PersonEvent`` on the session's ``User`` topic, whose
``UserAgent`` shows notices and progress (``messages.RELAYED``) and drops anything else.

With a streaming team, ``StreamingRelayChannel`` shows progress too: each text delta and tool activity
travels as a ``PersonEvent`` the same way. The plain ``RelayChannel`` does not show progress, so agents
never build or send any.
"""

from __future__ import annotations

import asyncio

from autogen_core import AgentId, AgentRuntime, MessageHandlerContext

from handoffs_runtime.distributed.options import logger
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.messages import (
    PROGRESS,
    Event,
    Person,
    PersonAnswer,
    PersonEvent,
    PersonQuestion,
    new_question_id,
)
from handoffs_runtime.tools.context import current_tool_context
from handoffs_runtime.topics import USER, session_topic

DEFAULT_ASK_TIMEOUT = 900.0
"""Seconds a question waits for the person before the answer counts as ``None`` (as if they left)."""


class RelayChannel:
    """A worker's channel to the people of each session, through the session's front end."""

    shows_progress = False

    def __init__(
        self, runtime: AgentRuntime, *, user_topic: str = USER, timeout: float | None = DEFAULT_ASK_TIMEOUT
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise DistributedError(f"the ask timeout must be a positive number of seconds, got {timeout}")
        self._runtime = runtime
        self._user_topic = user_topic
        self._timeout = timeout

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        """The person's answer, or ``None`` if the session's front end is gone or no answer came within
        ``timeout`` seconds (as if they left)."""
        return await self._ask(session_id, PersonQuestion(prompt=prompt, person=person, id=new_question_id()))

    async def ask_on_record(
        self, session_id: str, prompt: str, *, person: Person = "customer", asker: str = ""
    ) -> str | None:
        """As ``ask``; the front end stores the question and its answer (it names the asking agent)."""
        question = PersonQuestion(prompt=prompt, person=person, on_record=True, id=new_question_id())
        return await self._ask(session_id, question)

    async def _ask(self, session_id: str, question: PersonQuestion) -> str | None:
        try:
            answer = await asyncio.wait_for(
                self._runtime.send_message(
                    question, AgentId(self._user_topic, session_id), sender=_asking_agent()
                ),
                self._timeout,
            )
        except Exception as exc:
            logger.warning("could not ask the person of session %s: %s", session_id, exc)
            return None
        if not isinstance(answer, PersonAnswer):
            return None
        if answer.question != question.id:  # an answer to some other question confirms nothing here
            logger.warning("session %s answered another question than the one asked: not taken", session_id)
            return None
        return answer.text

    async def show(self, session_id: str, event: Event) -> None:
        """Publish ``event`` to the session's front end. Progress is best effort: one that cannot be sent
        is logged and dropped, never fails the turn (the reply that follows holds the whole text)."""
        message = PersonEvent(event=event)
        topic = session_topic(self._user_topic, session_id)
        if not isinstance(event, PROGRESS):
            await self._runtime.publish_message(message, topic, sender=_asking_agent())
            return
        try:
            await self._runtime.publish_message(message, topic, sender=_asking_agent())
        except Exception as exc:
            logger.warning("could not relay progress to session %s: %s", session_id, exc)


class StreamingRelayChannel(RelayChannel):
    """A ``RelayChannel`` that also relays progress (text deltas, tool activity) as it happens."""

    shows_progress = True


def relay_channel(runtime: AgentRuntime, *, user_topic: str = USER, stream: bool = False) -> RelayChannel:
    """The channel of a worker's agents: with ``stream``, one that relays progress too."""
    kind = StreamingRelayChannel if stream else RelayChannel
    return kind(runtime, user_topic=user_topic)


def _asking_agent() -> AgentId | None:
    """The agent whose tool or handler is running: the person's side accepts only the team's agents as
    senders (and the host only this process's agent types)."""
    tool = current_tool_context()
    if tool is not None and tool.agent_id is not None:
        return tool.agent_id
    try:
        return MessageHandlerContext.agent_id()
    except RuntimeError:
        return None
