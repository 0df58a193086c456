"""``execute_python_code``: run a model's Python in a separate, limited process; report what happened.

The code runs in a fresh ``python -I`` process under a supervisor (``supervisor.py``) that contains
every process it starts (a new PID namespace on Linux where allowed, else a child subreaper; the process
group elsewhere), in a temporary working directory that is deleted afterwards, with:

- a wall-clock timeout; when it passes, when the script exits or when the call is cancelled, every
  process of the run is killed, including those that called ``setsid`` or forked twice,
- CPU-time, address-space, file-size and core-dump limits per process (``resource.setrlimit``),
- totals for the whole run, measured by the parent every ``_SAMPLE_EVERY`` seconds (``resources.py``):
  resident memory summed over its processes, the number of processes, the working directory's size
  (walked with two descriptors at most, however the code shapes it; a directory that cannot be read
  stops the run); past one the run is killed and the result says which,
- on Linux, no way to gain privileges (``no_new_privs``) and, when the host runs as root, no
  capabilities at all (so it cannot unmount its private ``/proc`` or mount anything),
- a reserve of file descriptors in the host process that a run never takes: a run is refused, not
  started, when fewer than ``_DESCRIPTOR_RESERVE`` would be left,
- an environment built from an allow-list (``PATH``, locale, ``HOME``/``TMPDIR`` set to the working
  directory), so the parent's API keys and tokens are not handed to it,
- stdout and stderr each cut to ``max_output_chars``, read as they come so a chatty child cannot fill
  the parent's memory, and escaped in the result so that they cannot forge its structure.

It is **not** a container: the code runs as the same user, can read any file that user can read, can
open network connections, and can talk to local services. See docs/orchestrator.md, "Running code".

The limits are applied by the supervisor in the child and not by ``preexec_fn``, which is unsafe in a
process that has threads (ours has the store's and stdin's).

Example::

    result = await run_python("print(6*7)", limits=SandboxLimits(timeout=5))
    assert result.stdout == "42\\n"
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import math
import os
import signal
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal, cast

from autogen_core import CancellationToken
from autogen_core.tools import FunctionTool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.tools.effects import runs_code
from handoffs_runtime.tools.sandbox.resources import Usage, check_descriptor_reserve, measure
from handoffs_runtime.tools.sandbox.slots import SLOTS
from handoffs_runtime.tools.sandbox.supervisor import PROC_AVAILABLE, children, descendants, kill_all
from handoffs_runtime.tools.sandbox.tree import Unmeasurable, remove_tree

_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
_READ_CHUNK = 65536
_SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")
_SAMPLE_EVERY = 0.05
"""Seconds between two measurements of a run; a run can pass a total limit for about this long."""
_MIB = 2**20
Containment = Literal["pidns", "subreaper", "group"]
"""How a run's processes are contained, strongest first (see ``supervisor.py`` and docs/orchestrator.md)."""
_STRONGEST_CONTAINMENT: Containment = "pidns"
"""Where the supervisor starts trying; the tests lower it to try the weaker ways on any Linux."""

StopReason = Literal["timeout", "cpu", "memory", "disk", "processes"]
"""Which limit ended a run: the wall clock, the script's CPU time, or one of the run's totals."""


def _check_seconds(name: str, value: object) -> float:
    """``value`` as positive, finite seconds, or one clear error (NaN and infinity compare oddly)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")


def _check_count(name: str, value: object, least: int, why: str = "") -> None:
    """``value`` is a whole number (not NaN, not 2.5, not True) of at least ``least``, or one clear error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        message = f"SandboxLimits.{name} must be a whole number, at least {least}{why}; got {value!r}"
        raise TeamConfigError(message)


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """How much one run may take. ``timeout`` is wall-clock seconds; ``cpu_seconds`` defaults to it.

    ``memory_bytes``, ``cpu_seconds`` and ``file_bytes`` bound each process (``setrlimit``);
    ``total_memory_bytes`` (resident memory summed over the run's processes), ``max_processes`` and
    ``disk_bytes`` (the working directory) bound the run as a whole: past one, every process is killed.

    ``memory_bytes`` limits address space, not resident memory: libraries that reserve a lot of virtual
    memory up front (numpy with many BLAS threads, for one) may need more than the default.
    """

    timeout: float = 10.0
    cpu_seconds: int | None = None
    memory_bytes: int = 512 * _MIB
    file_bytes: int = 16 * _MIB
    max_output_chars: int = 8000
    max_timeout: float = 60.0
    """The most a caller (a model) may ask for with the ``timeout`` argument."""
    total_memory_bytes: int = 1024 * _MIB
    max_processes: int = 64
    disk_bytes: int = 256 * _MIB

    def __post_init__(self) -> None:
        for name in ("timeout", "max_timeout"):
            try:
                _check_seconds(f"SandboxLimits.{name}", getattr(self, name))
            except ValueError as exc:
                raise TeamConfigError(str(exc)) from None
        if self.cpu_seconds is not None:
            _check_count("cpu_seconds", self.cpu_seconds, 1)
        _check_count("memory_bytes", self.memory_bytes, 32 * _MIB, " (32 MiB: less cannot start Python)")
        _check_count("total_memory_bytes", self.total_memory_bytes, 32 * _MIB, " (32 MiB)")
        _check_count("file_bytes", self.file_bytes, 1)
        _check_count("disk_bytes", self.disk_bytes, _MIB, " (1 MiB: the script itself is stored there)")
        _check_count("max_processes", self.max_processes, 1)
        _check_count("max_output_chars", self.max_output_chars, 1)

    def exceeded_by(self, usage: Usage) -> StopReason | None:
        """The total limit that ``usage`` passes, if any."""
        if usage.processes > self.max_processes:
            return "processes"
        if usage.memory_bytes > self.total_memory_bytes:
            return "memory"
        if usage.disk_bytes > self.disk_bytes:
            return "disk"
        return None


@dataclass(frozen=True, slots=True)
class CodeResult:
    """What a run produced. ``returncode`` is negative when a signal ended it (-9: killed).

    ``stopped_by`` names the limit that ended the run, if one did; ``unenforced`` lists the limits this
    platform could not enforce for it, and the rendered result says so too.
    """

    returncode: int
    stdout: str
    stderr: str
    stopped_by: StopReason | None = None
    timeout: float = 0.0
    truncated: bool = False
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    unenforced: tuple[str, ...] = ()
    containment: Containment | None = None
    """How the run's processes were contained (docs/orchestrator.md); None if the supervisor never said."""
    unmeasurable: str | None = None
    """Why the working directory could not be measured, when that is what stopped the run (``disk``)."""

    @property
    def timed_out(self) -> bool:
        return self.stopped_by == "timeout"

    def render(self) -> str:
        """The tool result a model reads (the AgentScope shape, plus plain notes on limits).

        The output is escaped (``&``, ``<``, ``>``), so nothing the code prints can pose as an element.
        """
        text = (
            f"<returncode>{self.returncode}</returncode>"
            f"<stdout>{_escape(self.stdout)}</stdout><stderr>{_escape(self.stderr)}</stderr>"
        )
        if error := self._error():
            text += f"<error>{error}</error>"
        text += "".join(f"<note>not enforced on this platform: {note}</note>" for note in self.unenforced)
        return text

    def _error(self) -> str | None:
        limits = self.limits
        if self.stopped_by == "timeout":
            return f"timed out after {self.timeout:g} s (wall clock); the process was killed"
        if self.stopped_by == "memory":
            return (
                f"stopped: the run's processes held more than {limits.total_memory_bytes / _MIB:g} MiB of "
                "memory together; all of them were killed"
            )
        if self.stopped_by == "processes":
            return f"stopped: the run started more than {limits.max_processes} processes; all were killed"
        if self.stopped_by == "disk" and self.unmeasurable:
            return (
                f"stopped: the working directory could not be measured ({self.unmeasurable}); "
                "all of the run's processes were killed"
            )
        if self.stopped_by == "disk":
            return (
                f"stopped: the working directory grew past {limits.disk_bytes / _MIB:g} MiB; "
                "all of the run's processes were killed"
            )
        if self.stopped_by == "cpu":
            return "the process was killed: it used up its CPU-time limit"
        return None


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def sandbox_env(workdir: str, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: only allow-listed variables of ``parent``; nothing secret gets through."""
    source = os.environ if parent is None else parent
    env = {k: source[k] for k in _ENV_ALLOW if k in source}
    env.setdefault("PATH", os.defpath)
    env.update(HOME=workdir, TMPDIR=workdir, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    return env


_DRAIN_GRACE = 1.0
"""Seconds to finish reading output once the script has exited (a process it started may hold the pipes)."""
_EXIT_GRACE = 5.0
"""Seconds for the supervisor to exit once its run is killed, before it is killed itself."""
_DESCRIPTOR_RESERVE = 64
"""File descriptors of the host process that no run takes: the host must still open files and accept
connections (a run itself holds about eight: its pipes, and two while its directory is measured)."""


def _command(limits: SandboxLimits, timeout: float, script: str, report_fd: int) -> list[str]:
    cpu = limits.cpu_seconds if limits.cpu_seconds is not None else max(1, int(timeout) + 1)
    return [
        sys.executable,
        "-I",
        "-S",  # the supervisor needs the standard library only; the script gets site-packages
        _SUPERVISOR,
        str(report_fd),
        str(os.getpid()),
        _STRONGEST_CONTAINMENT,
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


class _Report:
    """What the supervisor tells us on its report pipe: how it contains the run, how the script ended."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.buffer = b""
        self.mode: Containment | None = None
        self.status: int | None = None

    def read(self) -> None:
        """Take in what has arrived. The first line of each kind counts: the supervisor writes its mode
        before the script starts, so a script that reopened the pipe (``/proc/<pid>/fd``) cannot change it.
        """
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.fd, 4096):
                self.buffer += chunk[: 4096 - len(self.buffer)]
        for line in self.buffer.decode(errors="replace").split("\n")[:-1]:  # whole lines only
            key, _, value = line.partition(" ")
            if key == "mode" and self.mode is None and value in ("pidns", "subreaper", "group"):
                self.mode = cast(Containment, value)
            elif key == "exit" and self.status is None and value.lstrip("-").isdigit():
                self.status = int(value)

    def unenforced(self) -> tuple[str, ...]:
        notes = []
        if self.mode == "group":
            notes.append("containment (a process the code moves to a new session or group outlives the run)")
        if not PROC_AVAILABLE:
            notes.append("total_memory_bytes and max_processes (no /proc to measure them with)")
        return tuple(notes)


class _Run:
    """One started supervisor: measures its run, and ends it so that no process of the code survives."""

    def __init__(
        self, proc: asyncio.subprocess.Process, exited: asyncio.Event, report: _Report, workdir: str
    ) -> None:
        self.proc, self.exited, self.report, self.workdir = proc, exited, report, workdir
        self.unmeasurable: str | None = None
        self._sample: asyncio.Future[Usage] | None = None

    def code_processes(self) -> list[int]:
        """The processes of the code: all under the supervisor (and under its namespace's init)."""
        if self.report.mode == "pidns":
            init = children(self.proc.pid)
            return descendants(init[0]) if init else []
        if self.report.mode == "subreaper":
            return descendants(self.proc.pid)
        return [self.proc.pid, *descendants(self.proc.pid)] if PROC_AVAILABLE else []

    async def watch(self, limits: SandboxLimits) -> StopReason:
        """Measure every ``_SAMPLE_EVERY`` seconds until a total limit is passed (or the directory cannot
        be measured: ``disk``); return which."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(_SAMPLE_EVERY)
            self.report.read()  # here, not in the thread: `end` reads it too
            self._sample = loop.run_in_executor(None, lambda: measure(self.code_processes(), self.workdir))
            try:
                usage = await asyncio.shield(self._sample)  # cancelling us must not forget the thread
            except Unmeasurable as exc:
                self.unmeasurable = exc.strerror or str(exc)
                return "disk"
            if reason := limits.exceeded_by(usage):
                return reason

    async def stop_watching(self, watcher: asyncio.Future[StopReason]) -> None:
        """Cancel ``watcher`` and wait until its last measurement is over, so no walk of the directory
        is still running when it is deleted."""
        watcher.cancel()
        await asyncio.wait({watcher})
        if self._sample is not None:
            await asyncio.wait({self._sample})
            if not self._sample.cancelled():
                self._sample.exception()  # retrieved: an unmeasurable last sample is no news any more

    async def end(self) -> None:
        """Kill every process of the run and wait until the supervisor has reaped them and exited."""
        self.report.read()
        contained = self.report.mode in ("pidns", "subreaper")
        if contained:  # the supervisor (or the kernel) then kills whatever these started meanwhile
            kill_all(await asyncio.to_thread(descendants, self.proc.pid))
        else:  # the script itself, or a supervisor that has not started it yet
            _kill_group(self.proc.pid)
        try:
            async with asyncio.timeout(_EXIT_GRACE):
                await self.exited.wait()  # not proc.wait(): that also waits for the pipes
        except TimeoutError:
            kill_all([self.proc.pid])
            await self.exited.wait()
        if not contained:
            _kill_group(self.proc.pid)  # what the script left in its group when it exited
        self.report.read()


async def run_python(
    code: str, *, limits: SandboxLimits | None = None, timeout: float | None = None
) -> CodeResult:
    """Run ``code`` in a limited child; when it ends (exit, timeout, a total limit, cancellation),
    every process it started is killed. ``timeout`` must be positive seconds; it is capped at
    ``limits.max_timeout``."""
    limits = limits or SandboxLimits()
    asked = limits.timeout if timeout is None else _check_seconds("timeout", timeout)
    wall = min(asked, limits.max_timeout)
    check_descriptor_reserve(_DESCRIPTOR_RESERVE)
    workdir = tempfile.mkdtemp(prefix="handoffs-code-")
    try:
        return await _run_in(workdir, code, limits, wall)
    finally:  # in a thread: a tree of thousands of directories takes a while; it never raises
        await asyncio.shield(asyncio.to_thread(remove_tree, workdir))


async def _run_in(workdir: str, code: str, limits: SandboxLimits, wall: float) -> CodeResult:
    """One run with ``workdir`` as its working directory (the caller deletes it)."""
    script = os.path.join(workdir, "main.py")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(code)
    loop = asyncio.get_running_loop()
    report_r, report_w = os.pipe()
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _ExitAware(limit=_READ_CHUNK, loop=loop),
            *_command(limits, wall, script, report_w),
            cwd=workdir,
            env=sandbox_env(workdir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=(report_w,),
        )
    except BaseException:
        os.close(report_r)
        raise
    finally:
        os.close(report_w)
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    run = _Run(proc, protocol.exited, _Report(report_r), workdir)
    out, err = _Capped(limits.max_output_chars), _Capped(limits.max_output_chars)
    drains = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
    exited = asyncio.ensure_future(protocol.exited.wait())
    watcher = asyncio.ensure_future(run.watch(limits))
    stopped_by: StopReason | None = "timeout"
    try:
        try:
            await asyncio.wait({exited, watcher}, timeout=wall, return_when=asyncio.FIRST_COMPLETED)
            if watcher.done():
                stopped_by = watcher.result()
            elif exited.done():
                stopped_by = None
        finally:
            exited.cancel()
            watcher.cancel()
            # Let asyncio reap it before closing the transport: closing first would reap it in
            # Popen.poll() and asyncio would then report an unknown child (returncode 255).
            await run.end()
            await run.stop_watching(watcher)
        with contextlib.suppress(TimeoutError):  # every process is gone, so the pipes close soon
            await asyncio.wait_for(asyncio.shield(drains), _DRAIN_GRACE)
    finally:
        drains.cancel()
        transport.close()
        os.close(report_r)
    stdout, cut_out = out.text()
    stderr, cut_err = err.text()
    status = run.report.status
    returncode = os.waitstatus_to_exitcode(status) if status is not None else proc.returncode or 0
    if stopped_by is None and returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        stopped_by = "cpu"  # SIGXCPU at the soft limit, SIGKILL at the hard one (or the code's own kill)
    return CodeResult(
        returncode,
        stdout,
        stderr,
        stopped_by,
        wall,
        cut_out or cut_err,
        limits,
        run.report.unenforced(),
        run.report.mode,
        run.unmeasurable if stopped_by == "disk" else None,
    )


def _kill_group(pid: int) -> None:
    """Kill the supervisor's process group (it leads its own session, so the group id is its pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


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
        task = asyncio.ensure_future(SLOTS.run(run_python(code, limits=chosen, timeout=timeout)))
        if cancellation_token is not None:
            cancellation_token.link_future(task)
        return await task

    tool = FunctionTool(
        execute_python_code,
        name=name,
        description=(
            "Run Python code in a separate sandboxed process and return its return code, stdout and stderr. "
            f"Limits: {chosen.max_timeout:g} s at most, {chosen.memory_bytes // _MIB} MiB of memory per "
            f"process and {chosen.total_memory_bytes // _MIB} MiB in all, {chosen.max_processes} processes, "
            f"{chosen.disk_bytes // _MIB} MiB of files, no secrets in the environment, a fresh temporary "
            "directory."
        ),
    )
    runs_code(tool)  # handoffs serve has an operator approve each run
    return tool


execute_python_code = python_code_tool()
"""The tool with the default limits."""
