"""A real PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` in a temporary folder on a free port.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user (which Debian's
package creates) in a folder handed to it. Tests skip, saying why, only where no server binary exists.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

_INSTALL_HINT = "no PostgreSQL server binaries (initdb, pg_ctl) found; install Debian's `postgresql` package"


def bin_dir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: on PATH, else Debian's newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3].split(".")[0])
    )
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One server in its own folder; :meth:`stop` and :meth:`start` again make an outage on purpose.

    ``fsync=False`` (for the tests) skips syncing to disk; a benchmark wants the server as deployed.
    """

    def __init__(self, bin_dir: Path, *, fsync: bool = False) -> None:
        self._bin = bin_dir
        self._fsync = fsync
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="handoffs-pg-"))
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self.data = self.folder / "data"
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self._as, str(self._bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
            )

    def start(self) -> None:
        fsync = "on" if self._fsync else "off"
        settings = f"-c listen_addresses=127.0.0.1 -c fsync={fsync} -c max_connections=300"
        options = f"-p {self.port} -k {self.folder} {settings}"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-o", options, "-w", "start"
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(RuntimeError):  # it was stopped already
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def start_server() -> PostgresServer:
    """A new server, or a skip that says why none can run here."""
    found = bin_dir()
    if found is None:
        pytest.skip(_INSTALL_HINT)
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without `runuser`, so PostgreSQL (which refuses root) cannot start")
    return PostgresServer(found)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server for the whole run, stopped and removed at the end."""
    server = start_server()
    yield server
    server.remove()


def fresh_schema() -> str:
    """A schema name no other test uses: every test gets empty tables on the shared server."""
    return f"t_{uuid.uuid4().hex[:16]}"


def fresh_database(server: PostgresServer) -> str:
    """The URL of a new, empty database on ``server``: for processes that use the default schema."""
    name = fresh_schema()
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return server.url.rsplit("/", 1)[0] + f"/{name}"
