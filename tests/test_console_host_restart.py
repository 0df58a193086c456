"""``handoffs chat --host`` on a terminal outlives a host restart: the prompt comes back, with a line that
says so, and what was typed meanwhile is answered.

Real host and worker processes, the chat on a pseudo-terminal (line editing on), and the two causes of
the lock-up it once had: the connection attempts that failed while the host was down left tasks pending
(destroyed later by the garbage collector, which asyncio reports), and the line editor, owning the event
loop's exception handler, stopped the chat to show that report and waited for an Enter it never got.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from handoffs_runtime.distributed import Backoff
from handoffs_runtime.distributed.worker_runtime import WorkerRuntime
from handoffs_runtime.errors import DistributedError

from .distributed_support import Process, free_port, start_host, start_worker
from .pty_support import CTRL_D, Terminal, python_on, start_on

REFUND_PROPOSAL = "ACME repairs › I can execute refund"


async def _until(terminal: Terminal, text: str, timeout: float = 60) -> str:
    return await asyncio.to_thread(terminal.read_until, text, timeout)


async def test_the_prompt_comes_back_after_the_host_restarts_and_a_line_typed_meanwhile_is_answered(
    terminal: Terminal, processes: list[Process], tmp_path: Path
) -> None:
    address = f"127.0.0.1:{free_port()}"
    host, _ = await start_host(address)
    processes.append(host)
    processes.append(await start_worker(address, "TriageAgent,IssuesAndRepairsAgent"))
    store = str(tmp_path / "s.db")
    chat = start_on(terminal, "chat", "--host", address, "--session", "tty", "--no-colour", "--store", store)
    try:
        await _until(terminal, "you ›")
        terminal.type("hello\r")
        await _until(terminal, "ACME assistant › ")
        await _until(terminal, "you ›")

        await host.kill()
        await _until(terminal, f"lost the host at {address}; reconnecting")
        terminal.type("I want a refund for my shoes\r")  # typed while there is no host
        host, _ = await start_host(address)
        processes.append(host)
        await _until(terminal, f"reconnected to the host at {address}")
        await _until(terminal, REFUND_PROPOSAL)  # what was typed meanwhile is answered
        await _until(terminal, "you ›")  # and the prompt is back

        for _ in range(3):  # it stays back: several turns, seconds after the restart
            terminal.type("no\r")
            await _until(terminal, "ACME repairs ›")
            await _until(terminal, "you ›")
        terminal.type(CTRL_D)
        assert await asyncio.to_thread(terminal.wait, chat) == 0
    finally:
        chat.kill()
    screen = terminal.drain()
    assert "Unhandled exception" not in screen and "Press ENTER" not in screen
    assert "Task was destroyed" not in screen


async def test_failed_connection_attempts_leave_no_task_pending() -> None:
    """Nothing for the garbage collector to find and asyncio to report: each attempt closes what it opened."""
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))
    try:
        runtime = WorkerRuntime(
            f"127.0.0.1:{free_port()}", backoff=Backoff(initial=0.01, maximum=0.02, give_up_after=0.3)
        )
        with pytest.raises(DistributedError, match="cannot reach a handoffs host"):
            await runtime.start()
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0.05)
    finally:
        loop.set_exception_handler(None)
    assert [c.get("message") for c in reported] == []


_REPORTED_WHILE_ASKING = """
import asyncio
from handoffs_runtime import ConsoleChannel, Notice

async def main():
    console = ConsoleChannel(colour=False)
    loop = asyncio.get_running_loop()

    def report():
        loop.call_exception_handler({"message": "Task was destroyed but it is pending!"})
        loop.create_task(console.show("s", Notice(text="reported")))

    loop.call_later(0.5, report)
    print("answer:", await console.ask("s", "you"))

asyncio.run(main())
"""


def test_an_error_reported_to_the_event_loop_does_not_take_the_terminal(terminal: Terminal) -> None:
    """Whatever reaches the loop's exception handler while a question is open, the person keeps typing."""
    process = python_on(terminal, "-c", _REPORTED_WHILE_ASKING)
    try:
        terminal.read_until("you ›")
        terminal.read_until("reported")
        terminal.type("still typing\r")
        terminal.read_until("answer: still typing")
        assert terminal.wait(process) == 0
    finally:
        process.kill()
    assert "Press ENTER" not in terminal.drain()
