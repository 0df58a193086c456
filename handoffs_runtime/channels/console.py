"""The console channel: one person at a terminal, customer and operator."""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import ClassVar, TextIO

from handoffs_runtime.channels.base import describe, is_exit
from handoffs_runtime.channels.console_input import Interrupted, LineEditor, PipedLines
from handoffs_runtime.messages import USER_PROMPT, Event, HandoffLine, Person, Reply, shown_name
from handoffs_runtime.text import printable

HOW_TO_LEAVE = "(to leave, type 'exit' or press Ctrl-D)"

# --- console -----------------------------------------------------------------------------------------


class ConsoleChannel:
    """One person at a terminal, playing the customer and, when asked, the human operator.

    Colour, a spinner and line editing with history on a terminal; plain text when output is piped. When
    input is piped, the lines read are echoed so the transcript reads like a conversation. Everything
    shown passes through :func:`~handoffs_runtime.text.printable`: what a model or another process wrote
    cannot move the cursor, clear the screen or rename the window. One question is open at a time: a
    second one waits until the first is answered. On a terminal, a question other than the next-message
    prompt (a confirmation) drops the lines typed ahead of it: they were typed before it was asked, so
    they do not answer it.
    """

    _COLOURS: ClassVar[dict[str, str]] = {
        "agent": "\033[1;36m",
        "you": "\033[1;32m",
        "notice": "\033[2;33m",
        "operator": "\033[1;35m",
    }
    _RESET = "\033[0m"
    shows_progress = False

    def __init__(
        self,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        colour: bool | None = None,
        echo_input: bool | None = None,
        line_editing: bool | None = None,
    ) -> None:
        """``line_editing`` (default: when both ``stdin`` and ``stdout`` are terminals) turns on arrow
        keys and history; without it lines are read as they come, which is what piped input needs."""
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        self._err = stderr or sys.stderr
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
        self._asides: list[str] = []  # see ``aside``
        self._aside_tasks: set[asyncio.Task[None]] = set()

    def _paint(self, role: str, text: str) -> str:
        return f"{self._COLOURS[role]}{text}{self._RESET}" if self._colour else text

    def write(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    def aside(self, text: str) -> None:
        """Show ``text`` beside the conversation, on stderr (``--trace console`` writes each turn's tree
        here): above the open question on a terminal, else just before the next question, so it never
        lands in the middle of a line or of what the person is typing. Safe to call from any thread."""
        self._asides.append(printable(text))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another thread: the next question shows it
            return
        if self._editor is not None and self._editor.reading:
            task = loop.create_task(self._editor.print_above(self._write_asides))
            self._aside_tasks.add(task)
            task.add_done_callback(self._aside_tasks.discard)

    def _write_asides(self) -> None:
        asides, self._asides = self._asides, []
        if asides:
            self._out.flush()
            self._err.write("".join(f"{text}\n" for text in asides))
            self._err.flush()

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        async with self._one_question:
            self._stop_spinner()
            self._write_asides()
            label = "you" if person == "customer" else "operator"
            above, _, question = printable(prompt).rpartition("\n")
            if above:  # printed once, in full, into the scrollback: an editor shows only what fits
                self.write(self._paint(label, above))
            shown = self._paint(label, f"{question} › ")
            if self._editor is not None and prompt != USER_PROMPT:
                self._editor.drop_typed_ahead()
            line = await (self._edit(shown) if self._editor is not None else self._read(shown))
        if line is not None and person == "customer" and not is_exit(line):
            self._start_spinner()
        return line

    async def _edit(self, prompt: str) -> str | None:
        """The edited line. Ctrl-C drops what was typed and asks again, as a shell does; on an empty
        line it also says how to leave."""
        assert self._editor is not None
        while True:
            try:
                line = await self._editor.readline(prompt)
            except Interrupted as stop:
                if not stop.text.strip():
                    self.write(self._paint("notice", f"  {HOW_TO_LEAVE}"))
                continue
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

    async def show(self, session_id: str, event: Event) -> None:
        self._stop_spinner()
        if isinstance(event, Reply):
            agent = printable(shown_name(event.label, event.agent), multiline=False)
            line = f"{self._paint('agent', agent)} › {printable(event.text)}"
        else:
            line = self._paint("notice", f"  {printable(describe(event))}")
        if self._editor is not None and self._editor.reading:
            await self._editor.print_above(lambda: self.write(line))
            return
        if self._prompt is not None:  # a question is waiting: print above it, then ask again
            self._out.write("\r\033[K" if self._spin else "\n")
        self.write(line)
        if self._prompt is not None:
            self._out.write(self._prompt)
            self._out.flush()
        elif isinstance(event, HandoffLine) and event.outcome == "handoff":
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
