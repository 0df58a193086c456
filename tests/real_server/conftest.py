"""A real OpenAI-compatible server on loopback for the suite: llama-cpp-python's, with SmolLM2-135M.

Found where ``.ci/real-server`` builds it (``$HANDOFFS_REAL_SERVER_DIR``, default
``${XDG_CACHE_HOME:-~/.cache}/handoffs-runtime/real-server``), or through ``HANDOFFS_REAL_SERVER_PYTHON``
(a Python with ``llama_cpp.server``) and ``HANDOFFS_REAL_SERVER_MODEL`` (a GGUF file). Missing, the suite
skips with the reason. The server's log is captured; each test reads the statuses it answered.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
READY = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
ACCESS = re.compile(r'"(?:GET|POST) (\S+) HTTP/1\.\d" (\d{3})')
START_SECONDS = 120
CONTEXT_TOKENS = 4096
"""The server's default (2048) is less than ACME's prompts, tools and a few turns: raised, as the README
advises, so that the only overflow is the one a test provokes."""


def _cache_dir() -> Path:
    explicit = os.environ.get("HANDOFFS_REAL_SERVER_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "handoffs-runtime" / "real-server"


def _python() -> Path:
    explicit = os.environ.get("HANDOFFS_REAL_SERVER_PYTHON")
    return Path(explicit) if explicit else _cache_dir() / "venv" / "bin" / "python"


def _model() -> Path:
    explicit = os.environ.get("HANDOFFS_REAL_SERVER_MODEL")
    return Path(explicit) if explicit else _cache_dir() / GGUF


def _lacks_server(python: Path) -> bool:
    check = subprocess.run([str(python), "-c", "import llama_cpp.server"], capture_output=True)
    return check.returncode != 0


@dataclass
class RealServer:
    """A running llama-cpp-python server: its base URL and every line of its log so far."""

    process: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)

    def read_log(self, log: Path) -> None:
        assert self.process.stdout is not None
        with log.open("a") as out:
            for line in self.process.stdout:
                out.write(line)
                out.flush()
                self.lines.append(line)
                found = READY.search(line)
                if found:
                    self.url = f"http://127.0.0.1:{found.group(1)}/v1"
                    self.ready.set()
        self.ready.set()  # ended: whoever waits sees that it never became ready

    def settle(self, quiet: float = 0.5, limit: float = 10.0) -> None:
        """Wait until the log has been quiet for ``quiet`` seconds: the server writes a request's access
        line after its answer is sent, so the line can come after the client has read the answer."""
        deadline = time.monotonic() + limit
        seen = -1
        while len(self.lines) != seen and time.monotonic() < deadline:
            seen = len(self.lines)
            time.sleep(quiet)

    def mark(self) -> int:
        """Where the log is now (once the requests before have been logged), for :meth:`statuses`."""
        self.settle()
        return len(self.lines)

    def statuses(self, since: int = 0) -> list[tuple[str, int]]:
        """(path, HTTP status) of every request the server answered since ``since``."""
        self.settle()
        return [(m.group(1), int(m.group(2))) for m in map(ACCESS.search, self.lines[since:]) if m]

    def refused(self, since: int = 0) -> list[tuple[str, int]]:
        return [(path, status) for path, status in self.statuses(since) if status >= 400]


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    python, model = _python(), _model()
    if not python.exists() or _lacks_server(python):
        pytest.skip(f"no real model server: {python} has no llama_cpp.server (.ci/real-server builds it)")
    if not model.exists():
        pytest.skip(f"no model for the real server: {model} is missing (.ci/real-server puts it there)")
    log = tmp_path_factory.mktemp("real-server") / "server.log"
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(model), "--n_threads", "1",
        "--host", "127.0.0.1", "--port", "0", "--chat_format", "chatml-function-calling",
        "--n_ctx", str(CONTEXT_TOKENS),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    server = RealServer(process)
    reader = threading.Thread(target=server.read_log, args=(log,), daemon=True)
    reader.start()
    try:
        if not server.ready.wait(START_SECONDS) or not server.url:
            pytest.fail(f"the real server did not start; its log:\n{''.join(server.lines[-40:])}")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(10)
