"""The first process of a sandboxed run: it contains every process the code starts, then runs the code.

Run as a script (``python -I -S supervisor.py REPORT_FD PARENT STRONGEST CPU MEMORY FILES SCRIPT``);
it imports only the standard library, so it starts fast and never loads the package. It contains the
code in the strongest of these ways that the system allows, starting from ``STRONGEST``:

- ``pidns`` (Linux, where unprivileged user namespaces are allowed): it enters a new user, PID and mount
  namespace, and its child is the namespace's init. The code runs under that init, cannot signal
  anything outside, and (where a fresh ``/proc`` may be mounted) sees only its own processes. When the
  script exits, or when the init is killed, the kernel kills every process left in the namespace:
  ``setsid``, ``setpgid`` or double forks do not get out.
- ``subreaper`` (Linux, no namespaces): it marks itself a child subreaper (``prctl``), so orphans of the
  code are re-parented to it rather than to init; when the script exits it kills every descendant it can
  find in ``/proc`` until it has no children left. The code can still escape by killing this supervisor.
- ``group`` (elsewhere): it ``exec``s the script; only the process group is killed at the end.

Before it becomes the script, the child gives up every way to gain privileges (``no_new_privs``: a
set-user-id program runs with the caller's rights) and, when it runs as root, every capability: root
in the new user namespace could otherwise unmount the private ``/proc`` and read the command line of
every process on the host. What remains to such a script is the root user id itself: it may read and
write files owned by root, and (``subreaper`` and ``group``) signal root's processes.

It writes ``mode <name>`` and, once the script has exited, ``exit <wait status>`` to ``REPORT_FD`` so the
parent knows how the run was contained and how the script ended (an init process cannot die of a signal).

The module also holds the ``/proc`` walk that the parent uses to measure and kill a run.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import time

TYPE_CHECKING = False  # not imported from typing: this process starts for every run, and typing is slow
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_LAST_DEFAULT = 63


PROC_AVAILABLE = sys.platform == "linux" and os.path.isdir(f"/proc/{os.getpid()}/task")
"""Whether processes can be found and measured here (Linux with ``/proc`` mounted)."""
_HAS_CHILDREN_FILES = PROC_AVAILABLE and os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
"""``/proc/<pid>/task/<tid>/children`` needs CONFIG_PROC_CHILDREN; without it all of /proc is scanned."""


def children(pid: int) -> list[int]:
    """The children of ``pid`` (Linux)."""
    return _children_of_threads(pid) if _HAS_CHILDREN_FILES else _parents().get(pid, [])


def _children_of_threads(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                kids.extend(int(k) for k in handle.read().split())
    except OSError:  # gone meanwhile
        pass
    return kids


def _parents() -> dict[int, list[int]]:
    """Every process's children, from one pass over ``/proc/*/stat``."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])  # the name in (...) may hold spaces
        tree.setdefault(ppid, []).append(int(name))
    return tree


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (Linux), parents before their children; ``[]`` elsewhere."""
    if not PROC_AVAILABLE:
        return []
    tree = None if _HAS_CHILDREN_FILES else _parents()
    found: list[int] = []
    queue = [pid]
    while queue:
        current = queue.pop()
        kids = _children_of_threads(current) if tree is None else tree.get(current, [])
        found.extend(kids)
        queue.extend(kids)
    return found


def kill_all(pids: list[int]) -> None:
    """SIGKILL each of ``pids`` that still exists."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone meanwhile (no contextlib: it is slow to import)
            continue


def kill_descendants_and_reap() -> None:
    """Kill every descendant of this process and reap them, until it has no child left (a subreaper's
    duty: a process killed meanwhile hands its own children to us, and the loop finds them)."""
    while True:
        kill_all(descendants(os.getpid()))
        reaped = False
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                reaped = True
        except ChildProcessError:
            return
        if not reaped:
            time.sleep(0.002)


# ---- running in the child -------------------------------------------------------------------------


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _enter_namespaces(libc: ctypes.CDLL) -> bool:
    """New user, PID and mount namespaces, with our own uid and gid mapped; False where not allowed."""
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS) != 0:
        return False
    try:
        maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
        for name, text in maps:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError:  # e.g. a security module lets us create the namespace but not map ourselves in it
        return False
    return True


def _namespaces_work(libc: ctypes.CDLL) -> bool:
    """Try :func:`_enter_namespaces` in a throwaway child first: a process cannot leave a user namespace,
    so one that could be created but not entered properly would strand us."""
    probe = os.fork()
    if probe == 0:
        os._exit(0 if _enter_namespaces(libc) else 1)
    return os.waitpid(probe, 0)[1] == 0


def _die_with_parent(libc: ctypes.CDLL, sig: int, alive: int | None = None) -> None:
    """Get ``sig`` when our parent dies; if it died already, go now.

    ``alive`` is a pipe whose other end only the parent holds: readable (end of file) once it is gone.
    """
    libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if alive is not None and select.select([alive], [], [], 0)[0]:
        os._exit(1)


def _end_everything(signum: int, frame: object) -> None:
    """On SIGTERM (our parent died, or someone asks): kill what the code started, then go."""
    kill_descendants_and_reap()
    os._exit(128 + signum)


def _mount_private_proc(libc: ctypes.CDLL) -> None:
    """Show the code only the namespace's processes in ``/proc`` (best effort: some hosts forbid it)."""
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) == 0:
        libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


def _drop_privileges() -> None:
    """No new privileges through ``exec``; as root, no capabilities after it (Linux; else nothing)."""
    if sys.platform != "linux":
        return
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        sys.exit("sandbox: could not set no_new_privs; the code was not run")
    if os.geteuid() != 0:
        return  # the kernel clears an ordinary user's capabilities at exec
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = _CAP_LAST_DEFAULT
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(last + 1):  # root's capabilities after exec are those left in the bounding set
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            sys.exit(f"sandbox: could not drop capability {cap} as root; the code was not run")


def _exec_script(cpu: int, memory: int, files: int, script: str) -> NoReturn:
    """Set the per-process limits and drop privileges, then become the script (both survive ``exec``)."""
    import resource  # here: the parent imports this module too, and Windows has no `resource`

    _drop_privileges()

    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.execv(sys.executable, [sys.executable, "-I", script])


def _start_script(limits: tuple[int, int, int], script: str) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _exec_script(*limits, script)
        finally:
            os._exit(127)
    return pid


def _wait_for(script_pid: int) -> int:
    """Reap children (orphans included) until the script itself has exited; its wait status."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == script_pid:
            return status


def _exit_like(status: int) -> NoReturn:
    """End this process the way the child with wait ``status`` ended (same code, same signal)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # their handlers cannot be set, nor need to be
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)  # or the signal failed


def _supervise_in_namespace(
    libc: ctypes.CDLL, limits: tuple[int, int, int], script: str, report: Callable[[str], None]
) -> NoReturn:
    """Start the namespace's init, which runs the script; end as it ends."""
    alive_r, alive_w = os.pipe()
    init = os.fork()
    if init == 0:  # pid 1 of the new namespace
        os.close(alive_w)
        _die_with_parent(libc, signal.SIGKILL, alive_r)
        _mount_private_proc(libc)
        report(f"exit {_wait_for(_start_script(limits, script))}")
        os._exit(0)  # the kernel now kills whatever the script left in the namespace
    os.close(alive_r)
    _exit_like(os.waitpid(init, 0)[1])


def _supervise_as_subreaper(
    limits: tuple[int, int, int], script: str, report: Callable[[str], None]
) -> NoReturn:
    """Run the script as our child; when it ends, kill and reap everything it left; end as it ended."""
    status = _wait_for(_start_script(limits, script))
    report(f"exit {status}")
    kill_descendants_and_reap()
    _exit_like(status)


def main(argv: list[str]) -> None:
    report_fd, parent, strongest = int(argv[0]), int(argv[1]), argv[2]
    limits = (int(argv[3]), int(argv[4]), int(argv[5]))
    script = argv[6]
    os.set_inheritable(report_fd, False)  # the script must not write to it

    def report(line: str) -> None:
        os.write(report_fd, line.encode() + b"\n")

    if sys.platform == "linux" and strongest != "group":
        libc = _libc()
        isolated = strongest == "pidns" and _namespaces_work(libc)
        if isolated and not _enter_namespaces(libc):
            sys.exit("sandbox: could not enter the new namespaces that a trial run entered")
        if isolated:  # our init dies with us, and the namespace with it
            _die_with_parent(libc, signal.SIGKILL)
        else:  # a subreaper must first kill what the code started
            signal.signal(signal.SIGTERM, _end_everything)
            _die_with_parent(libc, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the lines above
            os._exit(1)
        if isolated:
            report("mode pidns")
            _supervise_in_namespace(libc, limits, script, report)
        if PROC_AVAILABLE and libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:  # it must find them
            report("mode subreaper")
            _supervise_as_subreaper(limits, script, report)
    report("mode group")
    _exec_script(*limits, script)


if __name__ == "__main__":
    main(sys.argv[1:])
