"""The console and weak models: a streamed reply that starts with a newline is printed once; a line
typed ahead does not answer a question asked after it."""

from __future__ import annotations

import asyncio
import io

import pytest

from handoffs_runtime.channels.console import ConsoleChannel
from handoffs_runtime.channels.console_stream import StreamingConsoleChannel
from handoffs_runtime.messages import USER_PROMPT, Delta, Reply

from .pty_support import Terminal


@pytest.mark.parametrize("first", ["\n", "\n\n  ", " \n"])
async def test_a_streamed_reply_that_starts_with_a_newline_is_printed_once(first: str) -> None:
    out = io.StringIO()
    console = StreamingConsoleChannel(stdin=io.StringIO(), stdout=out, colour=False)
    for piece in (first, "Hello! ", "How can I help?\n"):
        await console.show("s1", Delta(agent="TriageAgent", text=piece))
    await console.show("s1", Reply(agent="TriageAgent", text="Hello! How can I help?"))
    assert out.getvalue().splitlines() == ["TriageAgent › Hello! How can I help?"]


# --- 3. a "yes" answers only the question it was given to ------------------------------------------


async def test_a_line_typed_ahead_does_not_answer_a_question_asked_after_it(terminal: Terminal) -> None:
    with open(terminal.slave, closefd=False) as stdin, open(terminal.slave, "w", closefd=False) as out:
        console = ConsoleChannel(stdin=stdin, stdout=out, colour=False, line_editing=True)
        terminal.type("yes\r")  # typed while the agent was still working, for another question
        question = asyncio.ensure_future(console.ask("alice", "Allow execute_order(price=30)? y/n"))
        await asyncio.to_thread(terminal.read_until, "y/n ›")
        terminal.type("no\r")
        assert await asyncio.wait_for(question, 30) == "no"


async def test_a_message_typed_ahead_is_still_the_next_message(terminal: Terminal) -> None:
    with open(terminal.slave, closefd=False) as stdin, open(terminal.slave, "w", closefd=False) as out:
        console = ConsoleChannel(stdin=stdin, stdout=out, colour=False, line_editing=True)
        terminal.type("and a rope\r")  # the person's next message, typed while the reply was coming
        assert await asyncio.wait_for(console.ask("alice", USER_PROMPT), 30) == "and a rope"
