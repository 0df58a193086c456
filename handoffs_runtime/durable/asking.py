"""A person in the middle of an agent step: the question ends the step, its next try gets the answers.

No step ever waits on a person: the channel's ``ask`` ends the step with the question
(:class:`PersonNeeded` unwinds the turn); the engine waits for the answer and runs the step again with
the answers so far, which the channel gives back when the same question is asked again.

The agents see the step's channel through :class:`StepPerson`, which lends them the session store for
the effect ledger: an irreversible call that ran before the question is recorded as done, so the step's
next try gets its recorded result instead of running it again. A question asked from inside an
irreversible tool (its confirmation, an operator's approval) comes before the tool acts, as in the
in-process engine; so its intent, recorded just before, is settled as not done when the step ends for
the question, and the next try, with the answer, runs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from handoffs_runtime.agents.person import PersonChannel
from handoffs_runtime.messages import AgentResponse, Event, HandoffEvent, Notice, Person, UserTask
from handoffs_runtime.sessions.effects import EffectLedger
from handoffs_runtime.tools.context import effect_key

Answer = tuple[str, str | None]
"""A question put to a person during the step, and their answer."""

ASKED_FIRST = "not run yet: it asked the person first, and runs on their answer"
"""What the ledger keeps for an irreversible call whose step ended at its question."""


class PersonNeeded(BaseException):
    """Unwinds a turn that needs a person: a ``BaseException``, so no tool or agent turns it into a
    result or an apology on the way out."""


class _QuietQuestions(logging.Filter):
    """autogen-core logs, with its traceback, whatever leaves a message handler; a step that ends for
    its question is no error, so that record is dropped (every other one is kept)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], PersonNeeded))


def quiet_questions() -> None:
    """Keep a step's question out of autogen-core's error log (once per process)."""
    logger = logging.getLogger("autogen_core")
    if not any(isinstance(f, _QuietQuestions) for f in logger.filters):
        logger.addFilter(_QuietQuestions())


@dataclass
class Turn:
    """What one running step has caught so far."""

    agent: str
    answers: tuple[Answer, ...]
    done: asyncio.Future[UserTask | AgentResponse | None]
    events: list[HandoffEvent] = field(default_factory=list)
    asked: list[Answer] = field(default_factory=list)
    question: tuple[str, Person] | None = None
    notices: list[str] = field(default_factory=list)
    """What a tool told the person (a server restarted, an action whose outcome is unknown)."""


class StepChannel:
    """The channel of a step's agent: questions end the step unless the person answered them already.
    The person is shown what the step stored: of what the agent shows, only notices are kept, stored
    with the step (replies and handoffs are stored from the step's result)."""

    shows_progress = False

    def __init__(self, turns: Mapping[str, Turn], ledger: EffectLedger | None) -> None:
        self._turns = turns
        self._ledger = ledger

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        turn = self._turns.get(session_id)
        if turn is None:
            return None
        given = [a for p, a in turn.answers if p == prompt]
        used = sum(1 for p, _ in turn.asked if p == prompt)
        if used < len(given):
            turn.asked.append((prompt, given[used]))
            return given[used]
        await self._asked_first(session_id)  # before the step ends: its next try must find it settled
        turn.question = (prompt, person)
        if not turn.done.done():
            turn.done.set_result(None)
        raise PersonNeeded(prompt)

    async def _asked_first(self, session_id: str) -> None:
        """Settle the irreversible call asking this question (if any) as not done: it acts on the answer."""
        running = effect_key()
        if running is None or self._ledger is None:
            return
        for effect in await self._ledger.effects(session_id):
            if effect.key.id == running and effect.status == "pending":
                await self._ledger.record_outcome(effect.key, "not_done", ASKED_FIRST)

    async def show(self, session_id: str, event: Event) -> None:
        turn = self._turns.get(session_id)
        if turn is not None and isinstance(event, Notice):
            turn.notices.append(event.text)


class StepPerson(PersonChannel):
    """The step's channel as its agents see it: the store for the effect ledger, and no question kept on
    record here (the step stores the questions answered with its end, fenced)."""

    async def ask_on_record(
        self, session_id: str, prompt: str, *, person: Person = "customer", asker: str = ""
    ) -> str | None:
        return await self.ask(session_id, prompt, person=person)
