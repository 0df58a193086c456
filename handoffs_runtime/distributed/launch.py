"""Start a host and workers as child processes and wait until they are ready (notebooks, tests).

Readiness is read from what each process prints (``listening on HOST:PORT``, ``worker ready``), never
guessed with a sleep. Children import this same copy of the package.

Example::

    host, address = await launch_host()                      # a free port on loopback
    triage = await launch_worker(address, agents=["TriageAgent"])
    ...
    await asyncio.gather(triage.stop(), host.stop())
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from handoffs_runtime.errors import DistributedError

PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent
READY_TIMEOUT = 60.0


class ChildProcess:
    """A child process whose stdout is read line by line; stderr is kept for error messages."""

    def __init__(self, proc: asyncio.subprocess.Process, args: Sequence[str]) -> None:
        self.proc = proc
        self.args = list(args)
        self.lines: list[str] = []

    @staticmethod
    def environment() -> dict[str, str]:
        """This process's environment, with this copy of the package first on the import path."""
        path = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        return {**os.environ, "PYTHONPATH": path}

    @classmethod
    async def start(cls, *args: str) -> ChildProcess:
        """``python ARGS...`` with this package importable."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *args,
            cwd=PACKAGE_ROOT,
            env=cls.environment(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc, args)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def expect(self, pattern: str, timeout: float = READY_TIMEOUT) -> re.Match[str]:
        """Read stdout until a line matches ``pattern``; raise with what the process said otherwise."""
        regex = re.compile(pattern)
        assert self.proc.stdout is not None
        try:
            while True:
                raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
                if not raw:
                    raise DistributedError(
                        f"{self} exited without printing {pattern!r}: {await self._stderr()}"
                    )
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                match = regex.search(line)
                if match:
                    return match
        except TimeoutError:
            raise DistributedError(
                f"{self} did not print {pattern!r} in {timeout}s; it printed {self.lines}"
            ) from None

    async def _stderr(self) -> str:
        assert self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode()[-2000:]

    async def kill(self) -> None:
        """SIGKILL: a crash, as far as everyone else can tell."""
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()

    async def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; the exit status is 0 when the process shut down cleanly."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            await self.kill()
            raise DistributedError(f"{self} did not stop within {timeout}s; killed it") from None

    def __str__(self) -> str:
        return f"process {self.proc.pid} ({' '.join(self.args)})"


async def launch_host(address: str = "127.0.0.1:0", *options: str) -> tuple[ChildProcess, str]:
    """``handoffs host`` in a child process; returns it and the address it listens on."""
    host = await ChildProcess.start("-m", "handoffs_runtime", "host", "--address", address, *options)
    try:
        match = await host.expect(r"listening on (\S+)")
    except BaseException:
        await host.kill()
        raise
    return host, match[1]


async def launch_worker(
    address: str,
    *,
    agents: Sequence[str] | None = None,
    shard: tuple[int, int] | None = None,
    options: Sequence[str] = (),
    command: Sequence[str] = ("-m", "handoffs_runtime", "worker"),
) -> ChildProcess:
    """``handoffs worker`` in a child process, returned once its agents are registered with the host."""
    args = [*command, "--host", address, *options]
    if agents is not None:
        args += ["--agents", ",".join(agents)]
    if shard is not None:
        args += ["--shard", f"{shard[0]}/{shard[1]}"]
    worker = await ChildProcess.start(*args)
    try:
        await worker.expect(r"^worker ready")
    except BaseException:
        await worker.kill()
        raise
    return worker
