"""``execute_python_code``: run a model's Python in a separate, limited process and report what happened.

The code runs in a fresh ``python -I`` process, in its own process group and a temporary working
directory that is deleted afterwards, with:

- a wall-clock timeout (the whole process group is killed when it passes),
- CPU-time, address-space, file-size and core-dump limits (``resource.setrlimit`` in the child),
- an environment built from an allow-list (``PATH``, locale, ``HOME``/``TMPDIR`` set to the working
  directory), so the parent's API keys and tokens are not handed to it,
- stdout and stderr each cut to ``max_output_chars``, read as they come so a chatty child cannot fill
  the parent's memory.

It is **not** a container: the code runs as the same user, can read any file that user can read
(``/proc/<pid>/environ`` of the user's other processes included, so a secret in the parent's environment
is within its reach), can open network connections, and can talk to local services. See the README's
"Running code" section.

The limits are applied by a small bootstrap that sets them and then ``exec``s the script, rather than by
``preexec_fn``, which is unsafe in a process that has threads (ours has the store's and stdin's).

Example::

    result = await run_python("print(6*7)", limits=SandboxLimits(timeout=5))
    assert result.stdout == "42\\n"
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from autogen_core import CancellationToken
from autogen_core.tools import FunctionTool

from ..errors import TeamConfigError

_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
_READ_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """How much one run may take. ``timeout`` is wall-clock seconds; ``cpu_seconds`` defaults to it.

    ``memory_bytes`` limits address space, not resident memory: libraries that reserve a lot of virtual
    memory up front (numpy with many BLAS threads, for one) may need more than the default.
    """

    timeout: float = 10.0
    cpu_seconds: int | None = None
    memory_bytes: int = 512 * 1024 * 1024
    file_bytes: int = 16 * 1024 * 1024
    max_output_chars: int = 8000
    max_timeout: float = 60.0
    """The most a caller (a model) may ask for with the ``timeout`` argument."""

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.max_timeout <= 0:
            raise TeamConfigError("sandbox timeouts must be positive seconds")
        if self.memory_bytes < 32 * 1024 * 1024:
            raise TeamConfigError(
                "memory_bytes below 32 MiB cannot start Python; give at least 32 * 1024 * 1024"
            )
        if self.max_output_chars < 1:
            raise TeamConfigError("max_output_chars must be at least 1")


@dataclass(frozen=True, slots=True)
class CodeResult:
    """What a run produced. ``returncode`` is negative when a signal ended it (-9: killed)."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    timeout: float = 0.0
    truncated: bool = False

    def render(self) -> str:
        """The tool result a model reads (the AgentScope shape, plus a plain note on timeouts)."""
        text = (
            f"<returncode>{self.returncode}</returncode>"
            f"<stdout>{self.stdout}</stdout><stderr>{self.stderr}</stderr>"
        )
        if self.timed_out:
            text += f"<error>timed out after {self.timeout:g} s (wall clock); the process was killed</error>"
        elif self.returncode == -signal.SIGXCPU or self.returncode == -signal.SIGKILL:
            text += "<error>the process was killed: it used up its CPU-time limit</error>"
        return text


def sandbox_env(workdir: str, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: only allow-listed variables of ``parent``; nothing secret gets through."""
    source = os.environ if parent is None else parent
    env = {k: source[k] for k in _ENV_ALLOW if k in source}
    env.setdefault("PATH", os.defpath)
    env.update(HOME=workdir, TMPDIR=workdir, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    return env


_BOOTSTRAP = """\
import os, resource, sys
cpu, memory, files, script = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
os.execv(sys.executable, [sys.executable, "-I", script])
"""
"""Runs first in the child: sets its limits, then replaces itself with the script (limits survive exec)."""

_DRAIN_GRACE = 1.0
"""Seconds to finish reading output once the script has exited (a process it started may hold the pipes)."""


def _command(limits: SandboxLimits, timeout: float, script: str) -> list[str]:
    cpu = limits.cpu_seconds if limits.cpu_seconds is not None else max(1, int(timeout) + 1)
    return [
        sys.executable,
        "-I",
        "-c",
        _BOOTSTRAP,
        str(cpu),
        str(limits.memory_bytes),
        str(limits.file_bytes),
        script,
    ]


class _ExitAware(asyncio.subprocess.SubprocessStreamProtocol):
    """Tells when the process itself has exited, before every pipe is closed."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class _Capped:
    """Reads a pipe to the end, keeping the first ``limit`` characters and counting the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_READ_CHUNK):
            room = self.limit * 4 - len(self.data)  # bytes; decoded text is cut to `limit` characters below
            self.data += chunk[: max(room, 0)]
            self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> tuple[str, bool]:
        decoded = self.data.decode("utf-8", errors="replace")
        if len(decoded) <= self.limit and not self.dropped:
            return decoded, False
        return decoded[: self.limit] + "\n…[output truncated]", True


async def run_python(
    code: str, *, limits: SandboxLimits | None = None, timeout: float | None = None
) -> CodeResult:
    """Run ``code`` in a limited child process; on timeout or cancellation its process group is killed."""
    limits = limits or SandboxLimits()
    wall = min(timeout if timeout and timeout > 0 else limits.timeout, limits.max_timeout)
    with tempfile.TemporaryDirectory(prefix="handoffs-code-") as workdir:
        script = os.path.join(workdir, "main.py")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(code)
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _ExitAware(limit=_READ_CHUNK, loop=loop),
            *_command(limits, wall, script),
            cwd=workdir,
            env=sandbox_env(workdir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        out, err = _Capped(limits.max_output_chars), _Capped(limits.max_output_chars)
        drains = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(wall):
                    await protocol.exited.wait()  # not proc.wait(): that also waits for the pipes
            except TimeoutError:
                timed_out = True
            finally:
                _kill_group(proc)  # also whatever the script left running
                # Let asyncio reap it before closing the transport: closing first would reap it in
                # Popen.poll() and asyncio would then report an unknown child (returncode 255).
                await protocol.exited.wait()
            with contextlib.suppress(TimeoutError):  # the group is gone, so the pipes close soon
                await asyncio.wait_for(asyncio.shield(drains), _DRAIN_GRACE)
        finally:
            drains.cancel()
            transport.close()  # a process that left the group may still hold the pipes
        stdout, cut_out = out.text()
        stderr, cut_err = err.text()
        return CodeResult(proc.returncode or 0, stdout, stderr, timed_out, wall, cut_out or cut_err)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the child and anything it started (it leads its own session, so its group id is its pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def python_code_tool(
    *, limits: SandboxLimits | None = None, name: str = "execute_python_code"
) -> FunctionTool:
    """The ``execute_python_code(code, timeout)`` tool for an agent, with ``limits`` applied to every run."""
    chosen = limits or SandboxLimits()

    async def execute_python_code(
        code: Annotated[str, "the Python source to run; print what you want to see"],
        timeout: Annotated[float, "wall-clock seconds before the run is killed"] = chosen.timeout,
        cancellation_token: CancellationToken | None = None,
    ) -> str:
        task = asyncio.ensure_future(run_python(code, limits=chosen, timeout=timeout))
        if cancellation_token is not None:
            cancellation_token.link_future(task)
        return (await task).render()

    return FunctionTool(
        execute_python_code,
        name=name,
        description=(
            "Run Python code in a separate sandboxed process and return its return code, stdout and stderr. "
            f"Limits: {chosen.max_timeout:g} s at most, {chosen.memory_bytes // 2**20} MiB of memory, "
            "no secrets in the environment, a fresh temporary directory."
        ),
    )


execute_python_code = python_code_tool()
"""The tool with the default limits."""
