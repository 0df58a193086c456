"""The team's channel as A2A sees it: a message answers the team's question; the turn ends at the next.

An A2A request carries one message of the person's; the team runs its turn and, when it is done, asks the
person again. What it asks tells the task's state: the customer's ordinary turn after a reply that does
not wait for an answer is ``completed``; a reply that asks something (``Shall I go ahead? (yes/no)``) or
any other question (a tool's confirmation) is ``input-required``. No blocking call: each session has its
own queues, so one slow client stalls nobody else.

>>> bridge = A2ABridge()
>>> bridge.shows_progress
False
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Literal

from handoffs_runtime.channels.base import describe
from handoffs_runtime.handoffs.returns import asks
from handoffs_runtime.messages import USER_PROMPT, Event, HandoffLine, Notice, Person, Reply

TurnState = Literal["completed", "input-required"]

NO_OPERATOR = "no operator is reachable over A2A"


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How one turn ended: its state, and the words the person is given (replies, a question)."""

    state: TurnState
    text: str
    agent: str = ""
    """The agent that spoke last (the session's active agent, unless a question came after it)."""


@dataclass
class _Line:
    answers: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    prompts: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    shown: list[Event] = field(default_factory=list)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One A2A request at a time per session: a second waits for the first's turn to end."""
    used: float = field(default_factory=time.monotonic)
    """When the session's last request came (``time.monotonic``)."""


class A2ABridge:
    """A :class:`~handoffs_runtime.channels.base.Channel` whose person is an A2A client (see the module)."""

    shows_progress = False

    def __init__(self) -> None:
        self._lines: dict[str, _Line] = {}

    def line(self, session_id: str) -> _Line:
        return self._lines.setdefault(session_id, _Line())

    def live(self, session_id: str) -> bool:
        return session_id in self._lines

    def live_count(self) -> int:
        return len(self._lines)

    def forget(self, session_id: str) -> None:
        self._lines.pop(session_id, None)

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if person == "operator":  # nobody answers for an operator here: the human agent says so
            await self.show(session_id, Notice(text=f"⚠ {NO_OPERATOR}"))
            return None
        line = self.line(session_id)
        await line.prompts.put(prompt)
        return await line.answers.get()

    async def show(self, session_id: str, event: Event) -> None:
        self.line(session_id).shown.append(event)

    async def turn(self, session_id: str, text: str, *, timeout: float) -> TurnEnd:
        """Give the session ``text`` once it asks, and wait (at most ``timeout`` seconds) for the turn's end.

        ``TimeoutError`` when the team does not ask again in time; the turn goes on, and what it says
        then is kept for the next request of the session.
        """
        line = self.line(session_id)
        line.used = time.monotonic()
        await asyncio.wait_for(line.turn.acquire(), timeout)  # another request of the context goes first
        try:
            await asyncio.wait_for(line.prompts.get(), timeout)  # the team's question this text answers
            line.shown.clear()  # a greeting, a recap of a resumed session: said before this message
            await line.answers.put(text)
            prompt = await asyncio.wait_for(line.prompts.get(), timeout)
            await line.prompts.put(prompt)  # the next request answers it
            shown, line.shown = line.shown, []
        finally:
            line.turn.release()
        return _end(shown, prompt)

    async def leave(self, session_id: str) -> None:
        """The session's person is gone: its next question gets no answer (the session ends)."""
        await self.line(session_id).answers.put(None)

    async def release_idle(self, seconds: float) -> list[str]:
        """End the sessions nobody wrote in for ``seconds`` and that wait for nothing: they are stored, and
        the next message of their context resumes them. Returns the sessions ended."""
        now = time.monotonic()
        idle = [s for s, line in self._lines.items() if now - line.used >= seconds and not line.turn.locked()]
        for session in idle:
            await self.leave(session)
        return idle


def _end(shown: list[Event], prompt: str) -> TurnEnd:
    words = [_said(event) for event in shown]
    text = "\n".join(w for w in words if w)
    replies = [e for e in shown if isinstance(e, Reply)]
    agent = replies[-1].agent if replies else ""
    if prompt != USER_PROMPT:
        return TurnEnd("input-required", "\n".join(w for w in (text, prompt) if w), agent)
    last = replies[-1].text if replies else ""
    return TurnEnd("input-required" if asks(last) else "completed", text, agent)


def _said(event: Event) -> str:
    """What the A2A client is told of ``event``: replies and notices; handoff lines only when refused."""
    if isinstance(event, Reply):
        return event.text
    if isinstance(event, Notice) and not event.recap:
        return event.text  # never its detail: a path, a host, a pid are nobody's business over A2A
    if isinstance(event, HandoffLine) and event.outcome != "handoff":
        return describe(event)
    return ""
