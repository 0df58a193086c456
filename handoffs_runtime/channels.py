"""How a person is reached: the customer and the human operator talk to agents through a ``Channel``.

Agents never call ``input()`` or ``print()``: they await a channel, so a person who takes their time
stalls only their own session. The console, notebooks (an asyncio queue), a web page and the tests each
bring their own channel.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol, TextIO, runtime_checkable

from .console_input import LineEditor, PipedLines
from .messages import HandoffEvent, PersonProgress
from .text import printable

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


# --- scripted: tests ---------------------------------------------------------------------------------


@dataclass
class ScriptedChannel:
    """Answers from fixed scripts per session, and records everything shown. For tests.

    A session whose script runs out has left (``ask`` returns ``None``).
    """

    customer: dict[str, list[str]] = field(default_factory=dict)
    operator: dict[str, list[str]] = field(default_factory=dict)
    shown: dict[str, list[Output]] = field(default_factory=lambda: defaultdict(list))
    asked: dict[str, list[tuple[Person, str]]] = field(default_factory=lambda: defaultdict(list))

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

    async def show(self, session_id: str, output: Output) -> None:
        self.shown[session_id].append(output)

    def replies(self, session_id: str) -> list[AgentReply]:
        return [o for o in self.shown[session_id] if isinstance(o, AgentReply)]

    def events(self, session_id: str) -> list[HandoffEvent]:
        return [o.event for o in self.shown[session_id] if isinstance(o, Notice) and o.event is not None]


# --- asyncio queues: notebooks, web pages, tests that type as they go --------------------------------


class QueueChannel:
    """Each session has an inbox per person and one outbox, as asyncio queues.

    ``await channel.say(session, "hi")`` types a line as the customer; ``await channel.next_output(session)``
    reads what the team shows. ``channel.leave(session)`` ends the session as closing a window would: every
    later question to that person gets ``None`` too. ``channel.close(session)`` frees a finished session's
    queues (call it from ``register_team(..., on_session_end=...)`` in a long-running server).
    With ``progress=True`` the outbox also yields ``TextDelta`` and ``ToolActivity`` items as they happen.
    """

    def __init__(self, *, progress: bool = False) -> None:
        self._inboxes: dict[tuple[str, Person], asyncio.Queue[str | None]] = {}
        self._outboxes: dict[str, asyncio.Queue[Output | Progress]] = {}
        self._gone: set[tuple[str, Person]] = set()
        self._progress = progress

    def _inbox(self, session_id: str, person: Person) -> asyncio.Queue[str | None]:
        return self._inboxes.setdefault((session_id, person), asyncio.Queue())

    def outbox(self, session_id: str) -> asyncio.Queue[Output | Progress]:
        return self._outboxes.setdefault(session_id, asyncio.Queue())

    async def say(self, session_id: str, text: str, *, person: Person = "customer") -> None:
        await self._inbox(session_id, person).put(text)

    async def leave(self, session_id: str, *, person: Person = "customer") -> None:
        await self._inbox(session_id, person).put(None)

    async def next_output(self, session_id: str, timeout: float | None = None) -> Output | Progress:
        return await asyncio.wait_for(self.outbox(session_id).get(), timeout)

    async def next_reply(self, session_id: str, timeout: float | None = None) -> AgentReply:
        """Skip notices and prompts and return the next agent reply."""
        while True:
            output = await self.next_output(session_id, timeout)
            if isinstance(output, AgentReply):
                return output

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if (session_id, person) in self._gone:
            return None
        if person == "operator" or prompt != USER_PROMPT:
            await self.outbox(session_id).put(Prompt(prompt, person))
        answer = await self._inbox(session_id, person).get()
        if answer is None:
            self._gone.add((session_id, person))
        return answer

    def close(self, session_id: str) -> None:
        """Forget a finished session's queues."""
        self._outboxes.pop(session_id, None)
        for person in ("customer", "operator"):
            self._inboxes.pop((session_id, person), None)
            self._gone.discard((session_id, person))

    async def show(self, session_id: str, output: Output) -> None:
        await self.outbox(session_id).put(output)

    async def progress(self, session_id: str, item: Progress) -> None:
        if self._progress:
            await self.outbox(session_id).put(item)


# --- console -----------------------------------------------------------------------------------------


class ConsoleChannel:
    """One person at a terminal, playing the customer and, when asked, the human operator.

    Colour, a spinner and line editing with history on a terminal; plain text when output is piped. When
    input is piped, the lines read are echoed so the transcript reads like a conversation. Everything
    shown passes through :func:`~handoffs_runtime.text.printable`: what a model or another process wrote
    cannot move the cursor, clear the screen or rename the window. One question is open at a time: a
    second one waits until the first is answered.
    """

    _COLOURS: ClassVar[dict[str, str]] = {
        "agent": "\033[1;36m",
        "you": "\033[1;32m",
        "notice": "\033[2;33m",
        "operator": "\033[1;35m",
    }
    _RESET = "\033[0m"

    def __init__(
        self,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        colour: bool | None = None,
        echo_input: bool | None = None,
        line_editing: bool | None = None,
    ) -> None:
        """``line_editing`` (default: when both ``stdin`` and ``stdout`` are terminals) turns on arrow
        keys and history; without it lines are read as they come, which is what piped input needs."""
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        tty = _isatty(self._out)
        self._colour = tty if colour is None else colour
        self._echo = (not _isatty(self._in)) if echo_input is None else echo_input
        editing = (tty and _isatty(self._in)) if line_editing is None else line_editing
        self._editor = LineEditor(self._in, self._out) if editing else None
        self._reader = PipedLines(self._in)
        self._one_question = asyncio.Lock()
        self._spinner: asyncio.Task[None] | None = None
        self._spin = tty
        self._prompt: str | None = None

    def _paint(self, role: str, text: str) -> str:
        return f"{self._COLOURS[role]}{text}{self._RESET}" if self._colour else text

    def write(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        async with self._one_question:
            self._stop_spinner()
            label = "you" if person == "customer" else "operator"
            above, _, question = printable(prompt).rpartition("\n")
            if above:  # printed once, in full, into the scrollback: an editor shows only what fits
                self.write(self._paint(label, above))
            shown = self._paint(label, f"{question} › ")
            line = await (self._edit(shown) if self._editor is not None else self._read(shown))
        if line is not None and person == "customer" and not is_exit(line):
            self._start_spinner()
        return line

    async def _edit(self, prompt: str) -> str | None:
        assert self._editor is not None
        line = await self._editor.readline(prompt)
        if line is None:
            self.write("")
        return line

    async def _read(self, prompt: str) -> str | None:
        self._prompt = prompt
        self._out.write(prompt)
        self._out.flush()
        try:
            line = await self._reader.readline()
        finally:
            self._prompt = None
        if line is None:
            self._out.write("\n")
        elif self._echo:
            self._out.write(printable(line) + "\n")
        self._out.flush()
        return line

    async def show(self, session_id: str, output: Output) -> None:
        self._stop_spinner()
        if isinstance(output, AgentReply):
            agent = printable(output.agent, multiline=False)
            line = f"{self._paint('agent', agent)} › {printable(output.text)}"
        else:
            line = self._paint("notice", f"  {printable(output.text)}")
        if self._editor is not None and self._editor.reading:
            await self._editor.print_above(lambda: self.write(line))
            return
        if self._prompt is not None:  # a question is waiting: print above it, then ask again
            self._out.write("\r\033[K" if self._spin else "\n")
        self.write(line)
        if self._prompt is not None:
            self._out.write(self._prompt)
            self._out.flush()
        elif isinstance(output, Notice) and output.event is not None and output.event.outcome == "handoff":
            self._start_spinner()

    def _start_spinner(self) -> None:
        if self._spin and self._spinner is None:
            self._spinner = asyncio.get_running_loop().create_task(self._run_spinner())

    def _stop_spinner(self) -> None:
        """Synchronous, so that stopping the spinner never lets another session's output jump ahead."""
        if self._spinner is not None:
            self._spinner.cancel()
            self._spinner = None
            self._out.write("\r\033[K")
            self._out.flush()

    async def _run_spinner(self) -> None:
        for frame in itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"):
            self._out.write(f"\r{frame} thinking…")
            self._out.flush()
            await asyncio.sleep(0.1)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
