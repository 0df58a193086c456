"""What a sandboxed run uses right now: how many processes, their resident memory, its directory's size.

Read from ``/proc`` (Linux) and the file system, by the parent, so the code cannot tamper with the
figures. Resident memory is summed over the processes, so pages they share (a fork's copy-on-write
pages) count once per process: the sum overstates, never understates.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

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


def directory_bytes(path: str) -> int:
    """Disk blocks used under ``path`` (symlinks not followed; a sparse file counts what it occupies).

    A directory the code made unreadable is made readable again (it is ours) so it cannot hide files.
    """
    total = 0
    pending = [path]
    while pending:
        current = pending.pop()
        try:
            entries = list(os.scandir(current))
        except PermissionError:
            try:
                os.chmod(current, 0o700)
                entries = list(os.scandir(current))
            except OSError:
                continue
        except OSError:  # removed meanwhile
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
    return total


def measure(pids: list[int], workdir: str) -> Usage:
    """The usage of the processes ``pids`` and the directory ``workdir``."""
    return Usage(len(pids), sum(resident_bytes(pid) for pid in pids), directory_bytes(workdir))
