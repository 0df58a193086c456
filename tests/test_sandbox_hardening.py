"""The sandbox against trees built to starve the host of descriptors, and against a root sandbox."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoffs_runtime.tools.sandbox.tool import SandboxLimits, run_python
from handoffs_runtime.tools.sandbox.tree import Unmeasurable, directory_bytes, remove_tree

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="descriptors and /proc are Linux's")

_MIB = 2**20
_WIDE = (
    "import os\n"
    "names = [f'd{i:04}' for i in range(1200)]\n"
    "for name in names:\n    os.makedirs(name + '/inner')\n"
    "for name in names[-60:]:\n"
    "    with open(name + '/inner/blob', 'wb') as f:\n        f.write(b'x' * 4 * 2**20)\n"
    "print('all written')\n"
)
"""1200 directories side by side, each with one inside, and 60 files of 4 MiB in the last ones."""
_DEEP = (
    "import os\n"
    "for _ in range(8000):\n    os.mkdir('d')\n    os.chdir('d')\n"
    "for i in range(60):\n"
    "    with open(f'blob{i}', 'wb') as f:\n        f.write(b'x' * 4 * 2**20)\n"
    "print('all written')\n"
)
"""8000 directories one inside the other (far past PATH_MAX), and 60 files of 4 MiB at the bottom."""


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def few_descriptors() -> Iterator[int]:
    """This process may open only 200 descriptors more than it has open now (restored afterwards)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = _open_descriptors() + 200
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    yield limit
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder the sandbox makes its working directories in, for this test alone."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


class _OpenProbe:
    """Opens a file every millisecond in a thread, as the host's own work would, and keeps each failure."""

    def __init__(self) -> None:
        self.failures: list[OSError] = []
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            try:
                os.close(os.open(os.devnull, os.O_RDONLY))
                self.opened += 1
            except OSError as exc:
                self.failures.append(exc)

    def __enter__(self) -> _OpenProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("code", [_WIDE, _DEEP], ids=["1200 side by side", "8000 nested"])
async def test_a_tree_of_thousands_of_directories_is_stopped_by_the_disk_total_without_starving_the_host(
    code: str, few_descriptors: int, private_tmp: Path
) -> None:
    limits = SandboxLimits(timeout=60, file_bytes=4 * _MIB, disk_bytes=16 * _MIB)
    with _OpenProbe() as probe:
        result = await run_python(code, limits=limits)
    assert result.stopped_by == "disk" and "all written" not in result.stdout, result.render()
    assert probe.failures == [] and probe.opened > 0
    assert list(private_tmp.iterdir()) == []  # the working directory is gone, however deep it was


def test_a_directory_that_cannot_be_opened_makes_the_count_fail_rather_than_count_zero(
    tmp_path: Path,
) -> None:
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "blob").write_bytes(b"x" * _MIB)
    assert directory_bytes(str(tmp_path)) >= _MIB
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (_open_descriptors() + 20, hard))
    try:
        with pytest.raises(OSError) as exhausted:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        assert exhausted.value.errno == errno.EMFILE
        for fd in held[-2:]:  # enough to open and list the top directory, not to go into `inner`
            os.close(fd)
        del held[-2:]
        with pytest.raises(Unmeasurable):
            directory_bytes(str(tmp_path))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_removing_a_tree_gives_back_what_the_code_locked_and_reports_success(tmp_path: Path) -> None:
    top = tmp_path / "work"
    locked = top / "a" / "b"
    locked.mkdir(parents=True)
    (locked / "file").write_text("x")
    (top / "link").symlink_to(tmp_path)  # followed, it would delete the test's own folder
    locked.chmod(0)
    (top / "a").chmod(0)
    assert remove_tree(str(top)) is True
    assert list(tmp_path.iterdir()) == []


async def test_a_run_is_refused_when_it_would_eat_into_the_hosts_reserve_of_descriptors() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (_open_descriptors() + 30, hard))
    try:
        with pytest.raises(OSError, match="keeps 64 in reserve") as refused:
            await run_python("print('never')")
        assert refused.value.errno == errno.EMFILE
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


_ESCAPE_PROC = """\
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("umount", libc.umount2(b"/proc", 2), ctypes.get_errno())
print("mount", libc.mount(b"proc", b"/mnt", b"proc", 0, None), ctypes.get_errno())
seen = []
for name in os.listdir("/proc"):
    try:
        if name.isdigit() and {token!r}.encode() in open(f"/proc/{{name}}/cmdline", "rb").read():
            seen.append(name)
    except OSError:
        pass
print("seen", seen)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the escape needs a sandbox started as root")
async def test_as_root_the_code_can_neither_unmount_its_proc_nor_see_a_host_process() -> None:
    token = f"host-process-{uuid.uuid4().hex}"
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", token])
    try:
        result = await run_python(_ESCAPE_PROC.format(token=token))
    finally:
        host.kill()
        host.wait()
    if result.containment != "pidns":
        pytest.skip("user namespaces are not allowed here: there is no private /proc to keep")
    umount, mount, seen = result.stdout.splitlines()
    assert umount == f"umount -1 {errno.EPERM}" and mount == f"mount -1 {errno.EPERM}"
    assert seen == "seen []", result.stdout


async def test_the_code_runs_without_capabilities_and_cannot_gain_privileges() -> None:
    code = "print([line for line in open('/proc/self/status') if line.startswith(('CapEff', 'NoNewPrivs'))])"
    result = await run_python(code)
    assert "'CapEff:\\t0000000000000000\\n'" in result.stdout and "'NoNewPrivs:\\t1\\n'" in result.stdout
