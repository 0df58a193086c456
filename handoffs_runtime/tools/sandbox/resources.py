"""What a sandboxed run uses right now: its processes, their resident memory, its directory's size.

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
    """Disk blocks used under ``path``: symlinks are not followed, a sparse file counts what it occupies.

    The walk goes by directory descriptors, so a directory swapped for a symlink mid-walk leads nowhere
    else. A directory the code made unreadable (``chmod 000``) is given back to its owner, us, so that
    it cannot hide files from the count (Linux).
    """
    total = 0
    pending = [fd] if (fd := _open_directory(path)) is not None else []
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:  # removed meanwhile
                        continue
                    total += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode) and (child := _open_directory(entry.name, directory)):
                        pending.append(child)
        except OSError:
            continue
        finally:
            os.close(directory)
    return total


_O_PATH = getattr(os, "O_PATH", 0)


def _open_directory(name: str, parent: int | None = None) -> int | None:
    """A readable descriptor of the directory ``name`` (relative to ``parent``), never via a symlink."""
    flags = os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        if not _O_PATH:
            return os.open(name, os.O_RDONLY | flags, dir_fd=parent)
        handle = os.open(name, _O_PATH | flags, dir_fd=parent)  # needs no permission on the directory
    except OSError:
        return None
    try:
        here = f"/proc/self/fd/{handle}"  # this very directory, whatever its name now points to
        if os.fstat(handle).st_mode & 0o500 != 0o500:
            os.chmod(here, 0o700)
        return os.open(here, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    finally:
        os.close(handle)


def measure(pids: list[int], workdir: str) -> Usage:
    """The usage of the processes ``pids`` and the directory ``workdir``."""
    return Usage(len(pids), sum(resident_bytes(pid) for pid in pids), directory_bytes(workdir))
