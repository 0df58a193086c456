"""A session as a stream of typed events, for code, tests and web pages.

``EventChannel`` is a channel (see :mod:`handoffs_runtime.channels`): register a team with it and every
session becomes an async iterator of events, while the people's answers go in through
:meth:`EventChannel.answer`::

    channel = EventChannel()
    await register_team(runtime, team, model=model, channel=channel, on_session_end=channel.ended)
    runtime.start()
    await start_session(runtime, "s1")
    async for event in channel.events("s1"):
        if isinstance(event, Question) and event.person == "customer":
            await channel.answer("s1", "I want a refund")
        ...

The events (:data:`~handoffs_runtime.messages.Event`), in the order a turn produces them: ``Question``
(the person's turn, or a confirmation; either offers yes/no when it asks for one), ``Said`` (the
answer), ``ToolStarted`` / ``ToolFinished``, ``HandoffLine`` (carried out, refused, or a loop stopped),
``Delta`` (only with ``TeamPolicy(stream=True)``), ``Reply`` (the whole reply, which replaces the deltas
before it), ``Notice`` (a line from the runtime) and, last, ``SessionEnded``. A session opens with the
team's greeting, as a ``Reply`` of the entry agent. The operator answers with :meth:`EventChannel.answer`
too, and hands the conversation back with :meth:`EventChannel.hand_back`: a value the human agent reads
as such (:mod:`~handoffs_runtime.channels.handback`). ``messages.event_json(event)`` is the shape
the web page reads.

Deltas and tool activity come straight from the agent at work, the other events from the session's
``UserAgent`` once they are stored; so a ``HandoffLine`` or ``Notice`` may arrive while the next agent's
reply is already streaming. A consumer keeps the deltas of a reply together until its ``Reply``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from handoffs_runtime.channels.handback import HandBack, OperatorLine, read_line
from handoffs_runtime.messages import Event, Person, Question, Reply, Said, SessionEnded


@dataclass
class _Session:
    events: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    answers: dict[Person, asyncio.Queue[OperatorLine | None]] = field(default_factory=dict)
    waiting: dict[Person, Question] = field(default_factory=dict)
    gone: set[Person] = field(default_factory=set)
    left: set[Person] = field(default_factory=set)
    """Who said they left (:meth:`EventChannel.leave`), before any question took their ``None``."""
    ended: bool = False
    last_reply: str = ""
    """The reply the customer read last: a turn after one that asks yes or no offers yes/no."""

    def inbox(self, person: Person) -> asyncio.Queue[OperatorLine | None]:
        return self.answers.setdefault(person, asyncio.Queue())


class EventChannel:
    """A channel whose sessions are read as events and answered with :meth:`answer`. See the module doc.

    It shows everything, progress included (``shows_progress``), and its operator is not the customer
    (``operator_apart``: a human agent holds a live conversation, where both write at any time).

    Pass :meth:`ended` as ``register_team(..., on_session_end=...)`` so that each stream ends with
    ``SessionEnded``; the session's queues are freed when its stream has been read to the end.
    """

    shows_progress = True
    operator_apart = True

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def _session(self, session_id: str) -> _Session:
        return self._sessions.setdefault(session_id, _Session())

    # --- the channel side: what the runtime calls ----------------------------------------------------

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        answer = await self._ask(session_id, prompt, person)
        return answer.text() if isinstance(answer, HandBack) else answer  # relayed as text

    async def ask_operator(self, session_id: str, prompt: str) -> OperatorLine | None:
        """The operator's answer (see :class:`~handoffs_runtime.channels.handback.HandsBack`): a
        :meth:`hand_back` as it was given, text as it was typed."""
        answer = await self._ask(session_id, prompt, "operator")
        return read_line(answer) if isinstance(answer, str) else answer

    async def _ask(self, session_id: str, prompt: str, person: Person) -> OperatorLine | None:
        session = self._session(session_id)
        if session.ended or person in session.gone:
            return None
        asked = Question.asking(prompt, person, after=session.last_reply)
        if asked.turn:
            session.last_reply = ""
        session.waiting[person] = asked
        session.events.put_nowait(asked)
        try:
            answer = await session.inbox(person).get()
        finally:
            if session.waiting.get(person) is asked:
                del session.waiting[person]
        if answer is None:
            session.gone.add(person)
        return answer

    async def show(self, session_id: str, event: Event) -> None:
        session = self._session(session_id)
        if isinstance(event, Reply):
            session.last_reply = event.text
        session.events.put_nowait(event)

    def ended(self, session_id: str) -> None:
        """The session is over: its stream ends, and questions still open get ``None``."""
        session = self._session(session_id)
        if session.ended:
            return
        session.ended = True
        session.events.put_nowait(SessionEnded())
        for person in list(session.waiting):
            session.inbox(person).put_nowait(None)

    # --- the people's side ---------------------------------------------------------------------------

    async def events(self, session_id: str) -> AsyncIterator[Event]:
        """The session's events as they happen, ending with ``SessionEnded``."""
        session = self._session(session_id)
        while True:
            event = await session.events.get()
            yield event
            if isinstance(event, SessionEnded):
                if self._sessions.get(session_id) is session:
                    del self._sessions[session_id]
                return

    def waiting(self, session_id: str, person: Person = "customer") -> Question | None:
        """The question waiting for ``person`` in the session, if any."""
        session = self._sessions.get(session_id)
        return session.waiting.get(person) if session is not None else None

    async def answer(self, session_id: str, text: str, *, person: Person = "customer") -> None:
        """Answer the question waiting for ``person`` (or the next one asked).

        The question stops waiting at once, so :meth:`waiting` tells a second answer from a first.
        """
        self._answered(session_id, person, text)

    async def hand_back(self, session_id: str, agent: str) -> None:
        """The operator hands the conversation back to ``agent``: the answer to their waiting question."""
        self._answered(session_id, "operator", HandBack(agent))

    def _answered(self, session_id: str, person: Person, line: OperatorLine) -> None:
        session = self._session(session_id)
        session.waiting.pop(person, None)
        said = line.text() if isinstance(line, HandBack) else line
        session.events.put_nowait(Said(text=said, person=person))
        session.inbox(person).put_nowait(line)

    async def leave(self, session_id: str, *, person: Person = "customer") -> None:
        """``person`` left (a closed window): this and every later question to them gets ``None``."""
        session = self._session(session_id)
        session.left.add(person)
        session.inbox(person).put_nowait(None)

    def has_left(self, session_id: str, person: Person = "customer") -> bool:
        """Whether ``person`` left the session (:meth:`leave`), or it has ended."""
        session = self._sessions.get(session_id)
        return session is not None and (session.ended or person in session.left)
