"""Writing a file a person named on the command line, without destroying anything by accident.

:func:`write_output` never replaces an existing file unless told to, never touches the files it is given
as protected (a session store and its journal), never writes through a symbolic link, and writes
atomically: the text goes to a temporary file in the same directory, which then takes the name, so a
reader sees the old file or the whole new one, and a failure leaves the old one as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from handoffs_runtime.errors import OutputFileError


def write_output(
    path: str | os.PathLike[str], text: str, *, overwrite: bool = False, protected: Iterable[Path] = ()
) -> None:
    """Write ``text`` (UTF-8) to ``path``; raise :class:`OutputFileError` saying why it cannot be done.

    ``overwrite`` replaces an existing file (a symbolic link there is replaced, its target left alone);
    files in ``protected`` and their journals are refused even then, however they are named (through
    links or ``..``), and so is a file with other names (hard links), which would keep the old text.
    The new file is readable by its owner only.
    """
    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        raise OutputFileError(f"{target} is a directory; name a file to write")
    folder = target.parent
    if not folder.is_dir():
        raise OutputFileError(f"cannot write {target}: there is no directory {folder}")
    if _is_protected(target, protected):
        raise OutputFileError(f"{target} is a file of the session store; choose another file")
    if _links(target) > 1:
        raise OutputFileError(
            f"{target} has other names (hard links) that would keep the old text; choose another file"
        )
    if os.path.lexists(target) and not overwrite:
        raise OutputFileError(f"{target} already exists; use --force to replace it")
    try:
        _write_atomically(target, text, overwrite=overwrite)
    except FileExistsError:
        raise OutputFileError(f"{target} already exists; use --force to replace it") from None
    except OSError as exc:
        raise OutputFileError(f"cannot write {target}: {exc.strerror or exc}") from None


def database_files(path: str | os.PathLike[str]) -> list[Path]:
    """A SQLite database and the journals SQLite keeps beside it, by the names it gives them and by the
    names it really uses: SQLite resolves links first, so a store opened as ``link.db`` (a link to
    ``s.db``) keeps its journal in ``s.db-wal``, and that is the file an export must not replace."""
    named = os.fspath(path)
    real = os.path.realpath(named)
    suffixes = ("", "-wal", "-shm", "-journal")
    return list(dict.fromkeys(Path(base + suffix) for base in (named, real) for suffix in suffixes))


JOURNALS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database named ``X``: ``X-wal``, ``X-shm``, ``X-journal``."""


def _is_protected(target: Path, protected: Iterable[Path]) -> bool:
    """Whether writing ``target`` would replace, or write into, one of the ``protected`` files, by any
    name: the same file (a link of any kind), or the journal of a database that is the same file (a store
    opened through a hard link keeps its journal beside the name it was opened by, not beside ours)."""
    named = {_resolved(p) for p in protected}
    entry = _resolved(target.parent) / target.name  # the directory entry a rename replaces
    if entry in named or _resolved(target) in named:
        return True
    names = (entry, _resolved(target))
    candidates = [
        target,
        *(n.with_name(n.name.removesuffix(j)) for n in names for j in JOURNALS if n.name.endswith(j)),
    ]
    for candidate in candidates:
        with contextlib.suppress(OSError):
            seen = os.stat(candidate)
            if any(_same_file(seen, p) for p in named):
                return True
    return False


def _links(target: Path) -> int:
    """How many names the file at ``target`` has (0 if there is none; a symbolic link is replaced, so it
    counts, not its target)."""
    try:
        return os.lstat(target).st_nlink
    except OSError:
        return 0


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same_file(seen: os.stat_result, path: Path) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (seen.st_dev, seen.st_ino) == (other.st_dev, other.st_ino)


def _write_atomically(target: Path, text: str, *, overwrite: bool) -> None:
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if overwrite:
            os.replace(temporary, target)
        else:
            _link_new(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _link_new(temporary: str, target: Path) -> None:
    """Give the written file its name only if nothing has that name yet (checked by the kernel)."""
    try:
        os.link(temporary, target, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(target):  # a file system without hard links: check, then rename
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        os.replace(temporary, target)
