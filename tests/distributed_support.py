"""Real processes for the distributed tests: a host, workers, and a way to wait for what they print."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 30.0
"""Upper bound on waiting for one line; a healthy run needs a fraction of it."""


class Process:
    """A child process whose stdout we read line by line (stderr is kept for failure messages)."""

    def __init__(self, proc: asyncio.subprocess.Process, args: Sequence[str]) -> None:
        self.proc = proc
        self.args = list(args)
        self.lines: list[str] = []

    @classmethod
    async def start(cls, *args: str) -> Process:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *args,
            cwd=ROOT,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc, args)

    async def expect(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        """Read stdout until a line matches ``pattern``; fail with what the process said otherwise."""
        regex = re.compile(pattern)
        assert self.proc.stdout is not None
        try:
            while True:
                raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
                if not raw:
                    raise AssertionError(
                        f"{self.args} exited without printing {pattern!r}: {await self._stderr()}"
                    )
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                match = regex.search(line)
                if match:
                    return match
        except TimeoutError:
            raise AssertionError(f"{self.args} did not print {pattern!r}; printed {self.lines}") from None

    async def _stderr(self) -> str:
        assert self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode()[-2000:]

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()

    async def stop(self) -> int:
        """SIGTERM, and the exit status (0 when it shut down cleanly)."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), TIMEOUT)


async def start_host(address: str = "127.0.0.1:0") -> tuple[Process, str]:
    host = await Process.start("-m", "handoffs_runtime", "host", "--address", address)
    match = await host.expect(r"listening on (\S+)")
    return host, match[1]


async def start_worker(
    address: str, *options: str, module: Sequence[str] = ("-m", "handoffs_runtime")
) -> Process:
    worker = await Process.start(*module, "worker", "--host", address, *options)
    await worker.expect(r"^worker ready")
    return worker


def free_port() -> int:
    """A port the system says is free now, for a host that must come back on the same address."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
