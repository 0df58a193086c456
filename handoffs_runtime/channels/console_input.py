"""Reading a person's lines at the console without ever blocking the event loop.

Two readers, picked by :class:`~handoffs_runtime.channels.ConsoleChannel`:

- :class:`LineEditor` on a terminal: prompt_toolkit's asynchronous prompt, so arrow keys move the cursor,
  Up and Down walk the history, and the keys are read by the event loop itself (no thread, no blocking
  read). Output from other sessions is printed above the prompt, keeping what the person is typing.
- :class:`PipedLines` for piped input and anything that is not a terminal: plain lines read on a thread.

Both answer ``None`` at, and after, end of input. Neither may be read by two questions at once; the
channel asks one question at a time. Ctrl-C at the editor's prompt raises :class:`Interrupted`, with
what had been typed.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession


class Interrupted(Exception):
    """Ctrl-C at the prompt: the line typed so far (``text``) is dropped."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class PipedLines:
    """Reads lines on a daemon thread, so waiting for a person never blocks the event loop.

    A daemon thread (not the loop's executor) so that Ctrl-C or ``exit`` can end the program while a
    read is pending.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lines: asyncio.Queue[str | None] | None = None
        self._wanted = threading.Semaphore(0)
        self._requested = False  # the thread is reading a line nobody has taken yet
        self._stale = False  # that line answers a question whose asker was cancelled
        self._eof = False

    def _start(self) -> asyncio.Queue[str | None]:
        if self._lines is None:
            self._loop = asyncio.get_running_loop()
            self._lines = asyncio.Queue()
            threading.Thread(target=self._run, name="handoffs-stdin", daemon=True).start()
        return self._lines

    def _run(self) -> None:
        assert self._loop is not None and self._lines is not None
        while True:
            self._wanted.acquire()
            try:
                line = self._stream.readline()
            except (OSError, ValueError):
                line = ""
            text: str | None = line.rstrip("\r\n") if line else None
            try:
                self._loop.call_soon_threadsafe(self._lines.put_nowait, text)
            except RuntimeError:  # loop closed
                return
            if text is None:
                return

    async def readline(self) -> str | None:
        """The next line, or ``None`` at (and after) end of input.

        If the caller is cancelled while waiting (a question timed out), the line typed for it is dropped
        rather than handed to the next question.
        """
        lines = self._start()
        while not self._eof:
            if not self._requested:
                self._requested = True
                self._wanted.release()
            try:
                line = await lines.get()
            except asyncio.CancelledError:
                self._stale = True
                raise
            self._requested = False
            if line is None:
                self._eof = True
            elif self._stale:
                self._stale = False
            else:
                return line
        return None


class LineEditor:
    """Line editing and history on a terminal, with prompt_toolkit's asynchronous prompt.

    The terminal is in raw mode only while a question is open, so Ctrl-C arrives as a key there and
    drops the line (:class:`Interrupted`), as in a shell; at any other moment Ctrl-C is SIGINT and ends
    the program. Ctrl-D on an empty line is end of input. The history lives as long as the process, in
    memory only. The event loop's exception handler stays the program's: prompt_toolkit's own would stop
    the chat on any error reported to the loop, to show it and wait for an Enter.
    """

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory
        from prompt_toolkit.input import create_input
        from prompt_toolkit.output import create_output

        self._session: PromptSession[str] = PromptSession(
            history=InMemoryHistory(), input=create_input(stdin), output=create_output(stdout)
        )
        self._stdin = stdin
        self._eof = False

    def drop_typed_ahead(self) -> None:
        """Forget what was typed before now and not yet read: the keys prompt_toolkit read past the last
        Enter, and those still in the terminal's buffer. A question asked now is answered by what is
        typed after it is shown, never by a "yes" typed ahead for another question."""
        import termios

        from prompt_toolkit.input.typeahead import clear_typeahead

        clear_typeahead(self._session.input)
        with contextlib.suppress(OSError, ValueError, termios.error):  # not a terminal: nothing buffered
            termios.tcflush(self._stdin.fileno(), termios.TCIFLUSH)

    @property
    def reading(self) -> bool:
        """A question is open on the terminal."""
        return self._session.app.is_running

    async def readline(self, prompt: str) -> str | None:
        """Show ``prompt`` (it may hold colour codes, nothing else) and return the edited line;
        :class:`Interrupted` on Ctrl-C."""
        from prompt_toolkit.formatted_text import ANSI

        if self._eof:
            return None
        try:
            return await self._session.prompt_async(ANSI(prompt), set_exception_handler=False)
        except EOFError:
            self._eof = True
            return None
        except KeyboardInterrupt:
            raise Interrupted(self._session.default_buffer.text) from None

    async def print_above(self, write: Callable[[], None]) -> None:
        """Run ``write`` with the open question lifted off the screen, then draw the question again."""
        from prompt_toolkit.application import run_in_terminal
        from prompt_toolkit.application.current import set_app

        with set_app(self._session.app):  # the question runs in another task's context
            await run_in_terminal(write)
