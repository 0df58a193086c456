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

The events, in the order a turn produces them: ``Question`` (the person's turn, or a confirmation),
``Said`` (the answer), ``ToolStarted`` / ``ToolFinished``, ``HandedOff`` / ``HandoffRefused`` /
``LoopStopped``, ``Delta`` (only with ``TeamPolicy(stream=True)``), ``Reply`` (the whole reply, which
replaces the deltas before it), ``Info`` (a line from the runtime) and, last, ``SessionEnded``.
``to_json`` gives each as a dict with a ``type`` field, the shape the web page reads.

Deltas and tool activity come straight from the agent at work, the other events from the session's
``UserAgent`` once they are stored; so a ``HandedOff`` or ``Info`` may arrive while the next agent's
reply is already streaming. A consumer keeps the deltas of a reply together until its ``Reply``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from handoffs_runtime.channels.base import (
    USER_PROMPT,
    AgentReply,
    Output,
    Person,
    Progress,
    Prompt,
    TextDelta,
    ToolActivity,
)


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of ``agent``'s reply as the model writes it."""

    type: ClassVar[str] = "delta"
    agent: str
    text: str


@dataclass(frozen=True, slots=True)
class Reply:
    """``agent``'s complete reply: what is stored, and what replaces the deltas shown before it."""

    type: ClassVar[str] = "reply"
    agent: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    type: ClassVar[str] = "tool_started"
    agent: str
    tool: str
    call_id: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call's result; ``is_error`` when it failed (the model is told, the session goes on)."""

    type: ClassVar[str] = "tool_finished"
    agent: str
    tool: str
    call_id: str
    result: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class HandedOff:
    type: ClassVar[str] = "handoff"
    source: str
    target: str
    tool: str


@dataclass(frozen=True, slots=True)
class HandoffRefused:
    """A handoff the runtime did not carry out (disabled, bad arguments, a second one); the model is told."""

    type: ClassVar[str] = "handoff_refused"
    source: str
    target: str
    tool: str
    reason: str


@dataclass(frozen=True, slots=True)
class LoopStopped:
    type: ClassVar[str] = "loop_stopped"
    source: str
    target: str
    reason: str


@dataclass(frozen=True, slots=True)
class Question:
    """A question waiting for ``person``; ``turn`` when it is the customer's ordinary turn to speak.

    ``choices`` are the answers offered as buttons (``yes``/``no`` for a ``... y/n`` confirmation).
    """

    type: ClassVar[str] = "question"
    prompt: str
    person: Person = "customer"
    turn: bool = False
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Said:
    """What ``person`` answered (an operator's ``/handoff AGENT`` too)."""

    type: ClassVar[str] = "said"
    text: str
    person: Person = "customer"


@dataclass(frozen=True, slots=True)
class Info:
    """A line from the runtime itself (session started, resumed, a warning)."""

    type: ClassVar[str] = "notice"
    text: str


@dataclass(frozen=True, slots=True)
class SessionEnded:
    type: ClassVar[str] = "ended"


Event = (
    Delta
    | Reply
    | ToolStarted
    | ToolFinished
    | HandedOff
    | HandoffRefused
    | LoopStopped
    | Question
    | Said
    | Info
    | SessionEnded
)

YES_NO = ("yes", "no")


def to_json(event: Event) -> dict[str, Any]:
    """``{"type": ..., **fields}``: the event as the web page receives it."""
    return {"type": event.type, **asdict(event)}


def question(prompt: str, person: Person) -> Question:
    """The ``Question`` for a channel's ``ask``: a ``... y/n`` prompt is offered as yes/no buttons."""
    turn = person == "customer" and prompt == USER_PROMPT
    choices = YES_NO if prompt.rstrip().lower().endswith("y/n") else ()
    return Question(prompt, person, turn, choices)


def event_of(output: Output | Progress) -> Event:
    """The event for what a channel is given to show."""
    if isinstance(output, AgentReply):
        return Reply(output.agent, output.text)
    if isinstance(output, TextDelta):
        return Delta(output.agent, output.text)
    if isinstance(output, ToolActivity):
        if output.result is None:
            return ToolStarted(output.agent, output.tool, output.call_id, output.arguments)
        return ToolFinished(output.agent, output.tool, output.call_id, output.result, output.is_error)
    if isinstance(output, Prompt):
        return question(output.text, output.person)
    handoff = output.event
    if handoff is None:
        return Info(output.text)
    if handoff.outcome == "handoff":
        return HandedOff(handoff.source, handoff.target, handoff.tool)
    if handoff.outcome == "loop_stopped":
        return LoopStopped(handoff.source, handoff.target, handoff.reason)
    return HandoffRefused(handoff.source, handoff.target, handoff.tool, handoff.reason)


@dataclass
class _Session:
    events: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    answers: dict[Person, asyncio.Queue[str | None]] = field(default_factory=dict)
    waiting: dict[Person, Question] = field(default_factory=dict)
    gone: set[Person] = field(default_factory=set)
    ended: bool = False

    def inbox(self, person: Person) -> asyncio.Queue[str | None]:
        return self.answers.setdefault(person, asyncio.Queue())


class EventChannel:
    """A channel whose sessions are read as events and answered with :meth:`answer`. See the module doc.

    Pass :meth:`ended` as ``register_team(..., on_session_end=...)`` so that each stream ends with
    ``SessionEnded``; the session's queues are freed when its stream has been read to the end.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def _session(self, session_id: str) -> _Session:
        return self._sessions.setdefault(session_id, _Session())

    # --- the channel side: what the runtime calls ----------------------------------------------------

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        session = self._session(session_id)
        if session.ended or person in session.gone:
            return None
        asked = question(prompt, person)
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

    async def show(self, session_id: str, output: Output) -> None:
        self._session(session_id).events.put_nowait(event_of(output))

    async def progress(self, session_id: str, item: Progress) -> None:
        self._session(session_id).events.put_nowait(event_of(item))

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
        session = self._session(session_id)
        session.waiting.pop(person, None)
        session.events.put_nowait(Said(text, person))
        session.inbox(person).put_nowait(text)

    async def leave(self, session_id: str, *, person: Person = "customer") -> None:
        """``person`` left (a closed window): this and every later question to them gets ``None``."""
        self._session(session_id).inbox(person).put_nowait(None)
