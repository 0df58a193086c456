"""Walking a run's working directory, however deep or wide, with two descriptors at most.

A walk that keeps a descriptor per pending directory (as ``os.fwalk`` and ``shutil.rmtree`` do, one per
level) lets the code exhaust the host process's descriptors with a few thousand directories: the host
then cannot open a file or accept a connection, and the part it could not open goes uncounted. Here
the walk goes down by ``openat(parent, name)`` and back up by ``openat(child, "..")``, holding only the
directory it is in; coming back up, the parent must still be the directory it left (device and inode),
or the code moved it meanwhile and the walk starts again.

Symbolic links are never followed and other file systems mounted inside are not entered. A directory
the code made unreadable (``chmod 000``) is given back to its owner, us, so it cannot hide files; one
that still cannot be read makes the walk fail (:class:`Unmeasurable`), never count as empty.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger("handoffs_runtime.tools.sandbox")

_O_PATH = getattr(os, "O_PATH", 0)
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
"""What opening a listed directory fails with when the code removed it, or swapped it for a file or link."""
_ATTEMPTS = 3
"""Walks started over when the code keeps moving directories under the walk, before giving up."""


class Unmeasurable(OSError):
    """A directory could not be read: the size of the tree is unknown, so a run is stopped, not trusted."""


class _Moved(Exception):
    """A directory on the walk's way back up is no longer where it was."""


@dataclass(slots=True)
class _Frame:
    identity: tuple[int, int]
    name: str
    subdirectories: list[str] = field(default_factory=list)


Enter = Callable[[int, list[os.DirEntry[str]]], None]
"""Called with each directory's descriptor and its entries (not followed), before going into them."""
Leave = Callable[[int, str], None]
"""Called with the parent's descriptor and the name of a directory once everything under it was walked."""


def directory_bytes(path: str) -> int:
    """Disk blocks used under ``path`` (not counting ``path`` itself); raises :class:`Unmeasurable`."""
    total = 0

    def count(_: int, entries: list[os.DirEntry[str]]) -> None:
        nonlocal total
        for entry in entries:
            total += _stat(entry).st_blocks * 512

    def start_again() -> None:
        nonlocal total
        total = 0

    _walk(path, count, lambda parent, name: None, need=0o500, restart=start_again)
    return total


def remove_tree(path: str) -> bool:
    """Delete ``path`` and everything under it; never raises. False (and logged) if something is left."""
    for _ in range(_ATTEMPTS):
        try:
            _walk(path, _unlink_files, _remove_directory, need=0o700, restart=lambda: None)
            os.rmdir(path)
        except FileNotFoundError:
            return True
        except OSError as exc:
            logger.debug("removing %s: %s; trying again", path, exc)
            continue
        return True
    logger.warning("could not remove the sandbox's working directory %s; delete it by hand", path)
    return False


def _unlink_files(directory: int, entries: list[os.DirEntry[str]]) -> None:
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=directory)


def _remove_directory(parent: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(name, dir_fd=parent)


def _walk(path: str, enter: Enter, leave: Leave, *, need: int, restart: Callable[[], None]) -> None:
    """Depth first under ``path``, holding one directory's descriptor (two while moving between them)."""
    for _ in range(_ATTEMPTS):
        try:
            _walk_once(path, enter, leave, need)
            return
        except _Moved:
            restart()
    raise Unmeasurable(errno.EAGAIN, "directories kept moving while the tree was walked", path)


def _walk_once(path: str, enter: Enter, leave: Leave, need: int) -> None:
    current = _open_directory(path, None, need)
    if current is None:
        raise FileNotFoundError(errno.ENOENT, "no such directory", path)
    try:
        device = os.fstat(current).st_dev
        stack = [_Frame(_identity(current), "", _enter(current, device, enter))]
        while stack:
            frame = stack[-1]
            if frame.subdirectories:
                name = frame.subdirectories.pop()
                child = _open_directory(name, current, need)
                if child is None:  # removed meanwhile: nothing to count
                    continue
                if os.fstat(child).st_dev != device:  # a mount point: not ours to walk
                    os.close(child)
                    continue
                os.close(current)
                current = child
                stack.append(_Frame(_identity(current), name, _enter(current, device, enter)))
                continue
            stack.pop()
            if not stack:
                return
            parent = _open_directory("..", current, need)
            if parent is None or _identity(parent) != stack[-1].identity:
                if parent is not None:
                    os.close(parent)
                raise _Moved
            os.close(current)
            current = parent
            leave(current, frame.name)
    finally:
        os.close(current)


def _enter(directory: int, device: int, enter: Enter) -> list[str]:
    """Hand the directory's entries to ``enter``; the names of its subdirectories on the same device."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError as exc:
        raise Unmeasurable(exc.errno, f"cannot list a directory: {exc.strerror}") from None
    enter(directory, entries)
    names = []
    for entry in entries:
        with contextlib.suppress(FileNotFoundError):
            info = _stat(entry)
            if stat.S_ISDIR(info.st_mode) and info.st_dev == device:
                names.append(entry.name)
    return names


def _stat(entry: os.DirEntry[str]) -> os.stat_result:
    """The entry's own metadata (``FileNotFoundError`` if removed meanwhile; anything else: unreadable)."""
    try:
        return entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unmeasurable(exc.errno, f"cannot read {entry.name!r}: {exc.strerror}") from None


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _open_directory(name: str, parent: int | None, need: int) -> int | None:
    """A readable descriptor of the directory ``name`` (relative to ``parent``), never via a symlink;
    ``None`` if it is gone. Its owner's permission bits are raised to ``need`` first when they lack it."""
    flags = os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        if not _O_PATH:
            return os.open(name, os.O_RDONLY | flags, dir_fd=parent)
        handle = os.open(name, _O_PATH | flags, dir_fd=parent)  # needs no permission on the directory
    except OSError as exc:
        if exc.errno in _GONE:
            return None
        raise Unmeasurable(exc.errno, f"cannot open a directory: {exc.strerror}") from None
    try:
        here = f"/proc/self/fd/{handle}"  # this very directory, whatever its name now points to
        if os.fstat(handle).st_mode & need != need:
            os.chmod(here, stat.S_IMODE(os.fstat(handle).st_mode) | need)
        return os.open(here, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise Unmeasurable(exc.errno, f"cannot open a directory: {exc.strerror}") from None
    finally:
        os.close(handle)
