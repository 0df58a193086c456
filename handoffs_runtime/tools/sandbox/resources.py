"""What a sandboxed run uses right now: its processes, their resident memory, its directory's size.

Read from ``/proc`` (Linux) and the file system (``tree.py``), by the parent, so the code cannot tamper
with the figures. Resident memory is summed over the processes, so pages they share (a fork's
copy-on-write pages) count once per process: the sum overstates, never understates.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from handoffs_runtime.tools.sandbox.tree import directory_bytes

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True, slots=True)
class Usage:
    """One sample of a run."""

    processes: int
    memory_bytes: int
    disk_bytes: int


def resident_bytes(pid: int) -> int:
    """The resident memory of ``pid``; 0 if it is gone (or not on Linux)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def measure(pids: list[int], workdir: str) -> Usage:
    """The usage of the processes ``pids`` and the directory ``workdir``; raises
    :class:`~handoffs_runtime.tools.sandbox.tree.Unmeasurable` when the directory cannot be read."""
    return Usage(len(pids), sum(resident_bytes(pid) for pid in pids), directory_bytes(workdir))


def check_descriptor_reserve(reserve: int) -> None:
    """Raise ``OSError(EMFILE)`` if starting a run would leave this process fewer than ``reserve`` free
    file descriptors (counted in ``/proc/self/fd`` on Linux; not checked elsewhere)."""
    import resource  # here: Windows has none

    allowed = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    try:
        in_use = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    except OSError as exc:
        if exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        in_use = allowed
    if allowed != resource.RLIM_INFINITY and allowed - in_use < reserve:
        raise OSError(
            errno.EMFILE,
            f"the code was not run: this process has {in_use} of its {allowed} file descriptors open and "
            f"keeps {reserve} in reserve; try again when fewer runs or connections are open",
        )
