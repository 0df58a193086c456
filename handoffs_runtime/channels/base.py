"""How a person is reached: the ``Channel`` protocol and what a channel is shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from handoffs_runtime.messages import HandoffEvent, PersonProgress

Person = Literal["customer", "operator"]


@dataclass(frozen=True, slots=True)
class AgentReply:
    """An agent's answer, labelled with the agent (its topic type)."""

    agent: str
    text: str


@dataclass(frozen=True, slots=True)
class Notice:
    """A line from the runtime itself: a handoff, a session starting or ending, a warning."""

    text: str
    event: HandoffEvent | None = None


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question waiting for a person's answer (a confirmation, the operator's turn)."""

    text: str
    person: Person = "customer"


Output = AgentReply | Notice | Prompt


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of an agent's reply as the model writes it (``TeamPolicy(stream=True)``).

    The ``AgentReply`` that follows holds the whole text and replaces the pieces: a stream cut in the
    middle ends with the apology as its reply, and a reply that turned into tool calls has none.
    """

    agent: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolActivity:
    """A regular tool call of ``agent`` starting (``result is None``) or finished with its result."""

    agent: str
    tool: str
    call_id: str
    arguments: str
    result: str | None = None
    is_error: bool = False


Progress = TextDelta | ToolActivity
"""What a channel sees while a turn is under way, if it has a ``progress`` method (see below)."""


@runtime_checkable
class ShowsProgress(Protocol):
    """A channel that shows a turn as it happens: the optional part of a channel (see below)."""

    async def progress(self, session_id: str, item: Progress) -> None: ...


async def report_progress(channel: Channel | None, session_id: str, item: Progress) -> None:
    """Give ``item`` to channels that show progress (``async def progress(session_id, item)``).

    Optional, so that channels without it (the console, scripts) keep working unchanged and pay nothing.
    """
    progress = getattr(channel, "progress", None)
    if progress is not None:
        await progress(session_id, item)


def progress_message(item: Progress) -> PersonProgress:
    """``item`` as the message that carries it to the person's process (``RelayChannel``)."""
    if isinstance(item, TextDelta):
        return PersonProgress(agent=item.agent, text=item.text)
    return PersonProgress(
        agent=item.agent,
        tool=item.tool,
        call_id=item.call_id,
        arguments=item.arguments,
        result=item.result,
        is_error=item.is_error,
    )


def progress_item(message: PersonProgress) -> Progress:
    """What ``progress_message`` carried, for the person's channel."""
    if not message.tool:
        return TextDelta(message.agent, message.text)
    return ToolActivity(
        message.agent, message.tool, message.call_id, message.arguments, message.result, message.is_error
    )


USER_PROMPT = "you"
"""The prompt of an ordinary turn; channels show other prompts as questions."""


@runtime_checkable
class Channel(Protocol):
    """The two things the runtime needs from the people in a session."""

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        """Wait for the person's next line; ``None`` means they left (end of input, closed window)."""
        ...

    async def show(self, session_id: str, output: Output) -> None:
        """Show the customer something (agent replies, handoff lines, notices)."""
        ...


EXIT_WORDS = frozenset({"exit", "quit", "/exit", "/quit"})


def is_exit(text: str | None) -> bool:
    return text is None or text.strip().lower() in EXIT_WORDS
