"""A real ``handoffs chat`` process driven through its stdin and stdout, for tests that kill or race it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAIT = 60  # seconds before a missing line fails the test instead of hanging it


class Chat:
    """A ``handoffs chat`` process and everything it has printed so far."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.output = ""

    @classmethod
    async def start(cls, store: Path | str, session: str, tmp_path: Path, *options: str) -> Chat:
        """``handoffs chat --store STORE --session SESSION OPTIONS`` (a file, or a PostgreSQL URL)."""
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "data")}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "handoffs_runtime", "chat", "--store", str(store), "--session", session,
            *options,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env,
        )  # fmt: skip
        return cls(process)

    async def wait_for(self, text: str, *, occurrence: int = 1) -> None:
        """Read stdout until ``text`` has appeared ``occurrence`` times."""
        assert self.process.stdout is not None
        while self.output.count(text) < occurrence:
            chunk = await asyncio.wait_for(self.process.stdout.read(4096), WAIT)
            if not chunk:
                raise AssertionError(f"chat ended before {text!r} appeared; it printed:\n{self.output}")
            self.output += chunk.decode()

    async def say(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        assert await self.process.wait() == -signal.SIGKILL

    async def finish(self) -> str:
        """Type ``exit`` and wait for the process to end normally."""
        await self.say("exit")
        out, err = await asyncio.wait_for(self.process.communicate(), WAIT)
        assert self.process.returncode == 0, err.decode()
        return self.output + out.decode()

    async def ended(self) -> tuple[int, str, str]:
        """Wait for the process to end by itself: its status, all it printed, and its stderr."""
        out, err = await asyncio.wait_for(self.process.communicate(), WAIT)
        assert self.process.returncode is not None
        return self.process.returncode, self.output + out.decode(), err.decode()
