"""Channels in memory: scripted answers for tests, asyncio queues for notebooks and pages."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from handoffs_runtime.channels.base import STALE_ANSWER
from handoffs_runtime.messages import USER_PROMPT, Event, HandoffLine, Notice, Person, Question, Reply

# --- scripted: tests ---------------------------------------------------------------------------------


@dataclass
class ScriptedChannel:
    """Answers from fixed scripts per session, and records every event shown. For tests.

    A session whose script runs out has left (``ask`` returns ``None``). Progress is not shown.
    """

    customer: dict[str, list[str]] = field(default_factory=dict)
    operator: dict[str, list[str]] = field(default_factory=dict)
    shown: dict[str, list[Event]] = field(default_factory=lambda: defaultdict(list))
    asked: dict[str, list[tuple[Person, str]]] = field(default_factory=lambda: defaultdict(list))
    shows_progress: bool = False

    @classmethod
    def for_sessions(cls, scripts: dict[str, Iterable[str]], operator: Iterable[str] = ()) -> ScriptedChannel:
        ops = list(operator)
        return cls(
            customer={s: list(lines) for s, lines in scripts.items()},
            operator={s: list(ops) for s in scripts},
        )

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        self.asked[session_id].append((person, prompt))
        lines = (self.customer if person == "customer" else self.operator).get(session_id, [])
        return lines.pop(0) if lines else None

    async def show(self, session_id: str, event: Event) -> None:
        self.shown[session_id].append(event)

    def replies(self, session_id: str) -> list[Reply]:
        return [e for e in self.shown[session_id] if isinstance(e, Reply)]

    def handoffs(self, session_id: str) -> list[HandoffLine]:
        return [e for e in self.shown[session_id] if isinstance(e, HandoffLine)]


# --- asyncio queues: notebooks, web pages, tests that type as they go --------------------------------


class QueueChannel:
    """Each session has an inbox per person and one outbox of events, as asyncio queues.

    ``await channel.say(session, "hi")`` types a line as the customer; ``await channel.next_output(session)``
    reads what the team shows (a question other than the customer's ordinary turn is shown too).
    ``channel.leave(session)`` ends the session as closing a window would: every later question to that
    person gets ``None`` too. ``channel.close(session)`` frees a finished session's queues (call it from
    ``register_team(..., on_session_end=...)`` in a long-running server). With ``progress=True`` the
    outbox also yields progress events (``Delta``, ``ToolStarted``, ``ToolFinished``) as they happen.
    """

    def __init__(self, *, progress: bool = False) -> None:
        self._inboxes: dict[tuple[str, Person], asyncio.Queue[tuple[str | None, str | None]]] = {}
        self._outboxes: dict[str, asyncio.Queue[Event]] = {}
        self._gone: set[tuple[str, Person]] = set()
        self.shows_progress = progress

    def _inbox(self, session_id: str, person: Person) -> asyncio.Queue[tuple[str | None, str | None]]:
        return self._inboxes.setdefault((session_id, person), asyncio.Queue())

    def outbox(self, session_id: str) -> asyncio.Queue[Event]:
        return self._outboxes.setdefault(session_id, asyncio.Queue())

    async def say(
        self, session_id: str, text: str, *, person: Person = "customer", question: str | None = None
    ) -> None:
        """Type ``text`` as ``person``; ``question``: the id of the question it answers (a ``Question``
        shown in the outbox). An answer naming another question than the yes/no question it meets is
        refused, with a notice (see ``Question.answered_by``); one naming none is taken, since a script
        types ahead of questions it cannot know."""
        await self._inbox(session_id, person).put((text, question))

    async def leave(self, session_id: str, *, person: Person = "customer") -> None:
        await self._inbox(session_id, person).put((None, None))

    async def next_output(self, session_id: str, timeout: float | None = None) -> Event:
        return await asyncio.wait_for(self.outbox(session_id).get(), timeout)

    async def next_reply(self, session_id: str, timeout: float | None = None) -> Reply:
        """Skip every other event and return the next agent reply."""
        while True:
            event = await self.next_output(session_id, timeout)
            if isinstance(event, Reply):
                return event

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if (session_id, person) in self._gone:
            return None
        asked = Question.asking(prompt, person)
        if person == "operator" or prompt != USER_PROMPT:
            await self.outbox(session_id).put(asked)
        while True:
            answer, question = await self._inbox(session_id, person).get()
            if answer is None or question is None or asked.answered_by(question):
                break
            await self.outbox(session_id).put(Notice(text=STALE_ANSWER))
        if answer is None:
            self._gone.add((session_id, person))
        return answer

    def close(self, session_id: str) -> None:
        """Forget a finished session's queues."""
        self._outboxes.pop(session_id, None)
        for person in ("customer", "operator"):
            self._inboxes.pop((session_id, person), None)
            self._gone.discard((session_id, person))

    async def show(self, session_id: str, event: Event) -> None:
        await self.outbox(session_id).put(event)
