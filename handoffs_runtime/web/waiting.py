"""An honest wait for a person: the customer hears when nobody can answer, operators see who waits.

A session whose customer asks for a person joins the operator queue (see ``web/queue``). With no operator
signed in, its customer is told so within ``NOBODY_SIGNED_IN_SECONDS``; with operators signed in, once
the team's ``TeamPolicy.operator_wait`` has passed without one taking it. The customer may then leave a
message with an address, keep writing (the person who takes the session reads it all) or go back to the
assistant; the session stays in the queue meanwhile. A customer who wrote and then left stays in the
queue as away, their last message there for an operator to read, until an operator dismisses it or
``away_seconds`` have passed; at most ``MAX_AWAY`` away messages are kept (the oldest leave first), and
operators are shown at most ``LISTED`` entries, those who are there first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from handoffs_runtime.messages import Event, HandoffLine, Question, Said
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.web.audience import Told
from handoffs_runtime.web.frames import CustomerEvent, Listed, QueueState, QueueStateName, WaitKind
from handoffs_runtime.web.queue import OperatorQueue, Waiting, left_in_store

WAITING_FOR_OPERATOR = "Please wait a moment: a person will answer you shortly."
NOBODY_AVAILABLE = (
    "Nobody can answer you right now. You can leave a message with your email address or phone number "
    "and we will get back to you, keep writing (the person who answers will read it all), or go back "
    "to the assistant."
)
PERSON_JOINED = "A person has joined the conversation."

MAX_AWAY = 200
"""Away customers' messages kept on the list at once: a flood of them pushes out the oldest."""
LISTED = 100
"""Entries an operator is sent at once: customers who are there first, then messages, oldest first."""

NOBODY_SIGNED_IN_SECONDS = 3.0
"""How long a customer waits to hear that nobody is signed in: an operator console that is reconnecting
(a reload, a network drop) is back within it."""

Frames = list[CustomerEvent | QueueState]
Tell = Callable[[str, Frames], Awaitable[None]]
"""Send frames to the customer pages of a session."""
Announce = Callable[[], Awaitable[None]]
"""Send every operator the waiting list again."""


def _state(session: str, state: QueueStateName) -> QueueState:
    """What the customer's page shows beside the conversation: ``waiting`` and ``unavailable`` offer the
    way back to the assistant; ``joined`` (a person took it) and ``over`` put it away."""
    return QueueState(session=session, state=state)


def told(session: str, text: str) -> CustomerEvent:
    """A line from the server to the session's customer."""
    return CustomerEvent(session=session, event=Told(text=text))


class Reception:
    """Keeps ``queue`` and the customers of ``team`` who wait in it informed: they hear that nobody has
    taken their session after ``team.policy.operator_wait`` seconds (``None``: only when nobody is
    signed in)."""

    def __init__(
        self,
        queue: OperatorQueue,
        team: TeamSpec,
        *,
        tell: Tell,
        announce: Announce,
        away_seconds: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.away_seconds = away_seconds
        self.people = frozenset(a.name for a in team.agents if a.kind == "human")
        """The team's human agents."""
        self.operator_wait = team.policy.operator_wait
        self._tell = tell
        self._announce = announce
        self._clock = clock
        self._operators = 0
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._telling: set[asyncio.Task[None]] = set()
        self._last: dict[str, str] = {}
        """What each live session's customer said last."""
        self._origin: dict[str, str] = {}
        """The agent that passed each live session to a person: where the customer's way back leads."""

    # --- sessions ------------------------------------------------------------------------------------

    async def waits(self, session: str, question: Question, *, since: float | None = None) -> None:
        """``question`` for an operator is open in ``session`` and nobody holds it; ``since``: when the
        session first asked, as the store keeps it (default: now)."""
        kind: WaitKind = "approval" if question.choices else "escalation"
        prompt = question.prompt if question.choices else ""  # an escalation's is the console's wording
        last = self._last.get(session, "")
        before = self.queue.get(session)
        if before is not None and before.away:
            self._cancel(session)  # back: their message no longer expires
        entry = self.queue.join(Waiting(session, kind, since or self._clock(), prompt, last))
        if kind == "escalation" and (before is None or before.away):
            entry.told = False
            await self._tell(session, [told(session, WAITING_FOR_OPERATOR), _state(session, "waiting")])
            self._schedule(entry, self.operator_wait if self._operators else NOBODY_SIGNED_IN_SECONDS)
        await self._announce()

    def observe(self, session: str, event: Event) -> bool:
        """Follow what the customer says and who passes them to a person; whether the waiting list
        changed (it shows the customer's last words)."""
        if isinstance(event, HandoffLine) and event.outcome == "handoff" and event.target in self.people:
            self._origin[session] = event.source
        if not (isinstance(event, Said) and event.person == "customer"):
            return False
        self._last[session] = event.text
        entry = self.queue.get(session)
        if entry is None or entry.away:
            return False
        entry.last_message = event.text
        entry.wrote += 1
        return True

    def way_back(self, session: str, agents: list[str], entry: str) -> str | None:
        """The agent a customer waiting for a person goes back to: the one that passed them on, else
        ``entry``, else the first of ``agents`` (``None``: the team has no AI agent)."""
        for agent in (self._origin.get(session), entry, *agents[:1]):
            if agent in agents:
                return agent
        return None

    async def taken(self, session: str) -> None:
        """An operator took the session: the customer hears that a person is there."""
        entry = self._leave(session)
        if entry is not None and entry.kind == "escalation":
            await self._tell(session, [told(session, PERSON_JOINED), _state(session, "joined")])
        await self._announce()

    async def done(self, session: str) -> None:
        """The session waits for nobody any more (handed back to an agent)."""
        entry = self._leave(session)
        await self._tell(session, [_state(session, "over")])
        if entry is not None:
            await self._announce()

    async def ended(self, session: str) -> None:
        """The session ended: if its customer wrote while waiting, their message stays (away)."""
        self._last.pop(session, None)
        self._origin.pop(session, None)
        entry = self.queue.get(session)
        if entry is None:
            return
        self._cancel(session)
        if entry.kind == "escalation" and entry.wrote:
            entry.away, entry.left = True, self._clock()
            loop = asyncio.get_running_loop()  # it leaves by itself, announced, once its time is up
            self._timers[session] = loop.call_later(self.away_seconds, self._expired, session)
            self._prune()
        else:
            self.queue.leave(session)
        await self._announce()

    async def dismiss(self, session: str) -> bool:
        """An operator has read the message an away customer left: it leaves the list."""
        entry = self.queue.get(session)
        if entry is None or not entry.away:
            return False
        self.queue.leave(session)
        await self._announce()
        return True

    async def restore(self, store: SessionStore) -> None:
        """Sessions the store shows waiting when the server starts (see ``queue.left_in_store``)."""
        for entry in await left_in_store(store, self.people) if self.people else []:
            if self.queue.get(entry.session) is None:
                self.queue.join(entry).away = True
        self._prune()

    def customer_frames(self, session: str) -> Frames:
        """What a customer page that (re)attaches to ``session`` is told of its wait."""
        entry = self.queue.get(session)
        if entry is None or entry.away or entry.kind != "escalation":
            return []
        if entry.told:
            return [told(session, NOBODY_AVAILABLE), _state(session, "unavailable")]
        return [told(session, WAITING_FOR_OPERATOR), _state(session, "waiting")]

    def listing(self) -> list[Listed]:
        """The list operators are shown: those who are there, then away messages; ``LISTED`` at most."""
        self._prune()
        now = self._clock()
        entries = self.queue.entries()
        shown = [e for e in entries if not e.away] + [e for e in entries if e.away]
        return [entry.listed(now) for entry in shown[:LISTED]]

    def _prune(self) -> None:
        """Away messages older than ``away_seconds`` leave, and the oldest beyond ``MAX_AWAY``."""
        away = sorted((e for e in self.queue.entries() if e.away), key=lambda e: e.left)
        too_old = self._clock() - self.away_seconds
        for entry in away[: max(0, len(away) - MAX_AWAY)] + [e for e in away if e.left <= too_old]:
            self._leave(entry.session)

    # --- operators -----------------------------------------------------------------------------------

    async def operator_in(self) -> None:
        """An operator signed in. The first one: customers who heard that nobody is there hear that
        someone is, and every waiting customer gets the team's ``operator_wait`` from now."""
        self._operators += 1
        if self._operators > 1:
            return
        for entry in self._customers_waiting():
            if entry.told:
                entry.told = False
                await self._tell(entry.session, self.customer_frames(entry.session))
            self._schedule(entry, self.operator_wait)

    def operator_out(self) -> None:
        """An operator left: with nobody signed in, every waiting customer hears so soon."""
        self._operators -= 1
        if self._operators > 0:
            return
        for entry in self._customers_waiting():
            if not entry.told:
                self._schedule(entry, NOBODY_SIGNED_IN_SECONDS)

    # --- timers --------------------------------------------------------------------------------------

    def _customers_waiting(self) -> list[Waiting]:
        return [e for e in self.queue.entries() if e.kind == "escalation" and not e.away]

    def _schedule(self, entry: Waiting, delay: float | None) -> None:
        self._cancel(entry.session)
        if delay is not None:
            loop = asyncio.get_running_loop()
            self._timers[entry.session] = loop.call_later(delay, self._expired, entry.session)

    def _cancel(self, session: str) -> None:
        timer = self._timers.pop(session, None)
        if timer is not None:
            timer.cancel()

    def _leave(self, session: str) -> Waiting | None:
        self._cancel(session)
        return self.queue.leave(session)

    def _expired(self, session: str) -> None:
        """Nobody took the session in time (the timers follow the operators signing in and out), or an
        away customer's message has been on the list long enough."""
        self._timers.pop(session, None)
        entry = self.queue.get(session)
        if entry is not None and entry.away:
            self._prune()
            self._later(self._announce())
            return
        if entry is None or entry.told:
            return
        entry.told = True
        self._later(self._tell_again(session))

    def _later(self, work: Awaitable[None]) -> None:
        task = asyncio.get_running_loop().create_task(_run(work))
        self._telling.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._telling.discard)

    async def _tell_again(self, session: str) -> None:
        await self._tell(session, self.customer_frames(session))


async def _run(work: Awaitable[None]) -> None:
    await work
