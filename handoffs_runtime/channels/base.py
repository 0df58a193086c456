"""How a person is reached: the ``Channel`` protocol, and each event as the line a terminal prints."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from handoffs_runtime.messages import (
    Delta,
    Event,
    HandoffLine,
    Notice,
    Person,
    Question,
    Reply,
    Said,
    SessionEnded,
    ToolFinished,
    ToolStarted,
    shown_name,
)
from handoffs_runtime.text import arguments_preview

STALE_ANSWER = (
    "That answer was for an earlier question, so it was not taken as your answer to this one: please "
    "answer the question shown now."
)
"""What a person is told when their answer names another question than the yes/no question waiting
(:meth:`~handoffs_runtime.messages.Question.answered_by`): refused, not read as an ordinary message,
because while a yes/no question waits, the person's next line *is* its answer."""


@runtime_checkable
class Channel(Protocol):
    """The three things the runtime needs from the people in a session.

    ``show`` is given every :data:`~handoffs_runtime.messages.Event` meant for the person; progress
    events (:data:`~handoffs_runtime.messages.PROGRESS`: deltas, tool activity) only when
    ``shows_progress`` is true, and agents build them only then, so a channel that does not show them
    pays nothing for them.
    """

    @property
    def shows_progress(self) -> bool:
        """Whether progress events are shown too."""
        ...

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        """Wait for the person's next line; ``None`` means they left (end of input, closed window)."""
        ...

    async def show(self, session_id: str, event: Event) -> None:
        """Show the session's people ``event`` (a reply, a handoff line, a notice, progress)."""
        ...


@runtime_checkable
class OnRecord(Protocol):
    """A channel that can keep a question and its answer in the session's transcript (an optional
    capability: ``ask_person`` uses it where a channel has it, so a confirmation is kept with its answer)."""

    async def ask_on_record(
        self, session_id: str, prompt: str, *, person: Person = "customer", asker: str = ""
    ) -> str | None:
        """As ``Channel.ask``; the question, its answer and ``asker`` (the agent asking) are stored."""
        ...


@runtime_checkable
class OperatorApart(Protocol):
    """A channel whose operator is a person apart from the customer, at a screen of their own (the web).

    A human agent on such a channel holds a live conversation: the customer and the operator each write
    whenever they like (see ``HumanAgent``). Without it (a console: one keyboard for both) the operator
    answers once per customer message.
    """

    operator_apart: bool


def operator_apart(channel: Channel) -> bool:
    return isinstance(channel, OperatorApart) and channel.operator_apart


@runtime_checkable
class Presence(Protocol):
    """A channel that knows when a person has left a session for good (a closed window that did not come
    back): an optional capability, read by :func:`has_left`."""

    def has_left(self, session_id: str, person: Person = "customer") -> bool: ...


def has_left(channel: object, session_id: str, person: Person = "customer") -> bool:
    """Whether ``channel``, or a channel it wraps (its ``inner``), knows that ``person`` left the session.

    An approval given for a customer who has gone is void: nobody is there to be served by it.
    """
    seen = 0
    while channel is not None and seen < 8:  # wrappers are few; a cycle must not hang a turn
        if isinstance(channel, Presence) and channel.has_left(session_id, person):
            return True
        channel, seen = getattr(channel, "inner", None), seen + 1
    return False


def describe(event: Event) -> str:
    """``event`` as one line of a console or a text transcript (raw: the printer makes it printable).

    Agents are named as people read them (display names, see :func:`~handoffs_runtime.messages.shown_name`).
    """
    match event:
        case Reply(text=text):
            return f"{shown_name(event.label, event.agent)} › {text}"
        case Said(person="customer", text=text):
            return f"you › {text}"
        case Said(text=text):
            return f"operator › {text}"
        case HandoffLine(outcome="handoff"):
            return f"↪ {shown_name(event.target_label, event.target)} has joined"
        case HandoffLine(outcome="loop_stopped"):
            return f"⚠ handoff loop stopped at {shown_name(event.source_label, event.source)}: {event.reason}"
        case HandoffLine():
            source = shown_name(event.source_label, event.source)
            target = shown_name(event.target_label, event.target)
            return f"✗ {source} could not hand over to {target}: {event.reason}"
        case ToolStarted():
            who = shown_name(event.label, event.agent)
            return f"{who} called {event.tool}({arguments_preview(event.arguments)})"
        case ToolFinished():
            return f"result of {event.tool}: {event.result}"
        case Question(prompt=prompt):
            return prompt
        case Notice(text=text, detail=detail) if detail:
            return f"{text}: {detail}"
        case Notice(text=text) | Delta(text=text):
            return text
        case SessionEnded():
            return "the session has ended"


EXIT_WORDS = frozenset({"exit", "quit", "/exit", "/quit"})


def is_exit(text: str | None) -> bool:
    return text is None or text.strip().lower() in EXIT_WORDS
