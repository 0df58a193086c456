"""``RelayChannel``: how an agent on a worker reaches the person, who sits at the session's front end.

A tool that asks for a confirmation (``ask_person``) or the ``HumanAgent`` asking the operator must reach
the front end of that session, not the worker's own terminal. The question travels as an RPC to the
session's ``UserAgent`` (the host finds the front end that holds it), which asks its channel and returns
the answer; lines to show travel as ``PersonNotice`` on the session's ``User`` topic.
"""

from __future__ import annotations

from autogen_core import AgentId, AgentRuntime

from ..channels import AgentReply, Output, Person
from ..messages import PersonAnswer, PersonNotice, PersonQuestion
from ..topics import USER, session_topic
from .options import logger


class RelayChannel:
    """A worker's channel to the people of each session, through the session's front end."""

    def __init__(self, runtime: AgentRuntime, *, user_topic: str = USER) -> None:
        self._runtime = runtime
        self._user_topic = user_topic

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        """The person's answer, or ``None`` if the session's front end is gone (as if they left)."""
        try:
            answer = await self._runtime.send_message(
                PersonQuestion(prompt=prompt, person=person), AgentId(self._user_topic, session_id)
            )
        except Exception as exc:
            logger.warning("could not ask the person of session %s: %s", session_id, exc)
            return None
        return answer.text if isinstance(answer, PersonAnswer) else None

    async def show(self, session_id: str, output: Output) -> None:
        text = f"{output.agent} › {output.text}" if isinstance(output, AgentReply) else output.text
        await self._runtime.publish_message(
            PersonNotice(text=text), session_topic(self._user_topic, session_id)
        )
