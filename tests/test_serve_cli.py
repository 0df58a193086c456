"""``handoffs serve`` as a real subprocess: it starts on loopback, prints where, and needs its token."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .web_support import http_get


@contextmanager
def serve(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    command = [sys.executable, "-m", "handoffs_runtime", "serve", "--port", "0"]
    command += ["--store", str(tmp_path / "s.sqlite3"), *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        assert process.stdout is not None
        while len(lines) < 3:
            line = process.stdout.readline()
            assert line, f"serve stopped early: {process.stderr.read() if process.stderr else ''}"
            lines.append(line.strip())
        yield process, lines
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_binds_loopback_and_prints_a_fresh_operator_token(tmp_path: Path) -> None:
    with serve(tmp_path) as (_, lines):
        banner, chat, console = lines
        assert banner.startswith("handoffs serve · ACME Inc. customer service · model: offline")
        assert chat.startswith("customer chat:    http://127.0.0.1:")
        url = chat.split()[-1]
        assert console.startswith(f"operator console: {url}operator (sign in with the token ")
        token = console.removesuffix(")").split()[-1]
        assert len(token) >= 32 and "token=" not in console  # a URL with it would stay in browser history
        with urllib.request.urlopen(url, timeout=10) as page:
            assert b"chat.js" in page.read()
        assert http_get(url + "api/sessions")[0] == 401
        assert http_get(url + "api/sessions", token)[0] == 200


def test_serve_reads_the_operator_token_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("a-long-enough-operator-token\n")
    with serve(tmp_path, "--operator-token-file", str(token_file)) as (_, lines):
        assert lines[2].endswith(f"/operator (sign in with {token_file})")  # the token is not printed
        url = lines[1].split()[-1]
        assert http_get(url + "api/sessions", "a-long-enough-operator-token")[0] == 200


def test_a_short_or_missing_token_file_is_one_clear_error(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("abc")
    for path, message in [(short, "too short"), (tmp_path / "missing", "cannot read")]:
        result = subprocess.run(
            [sys.executable, "-m", "handoffs_runtime", "serve", "--operator-token-file", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HANDOFFS_MODEL": ""},
        )
        assert result.returncode == 2
        assert message in result.stderr and "Traceback" not in result.stderr


def test_a_team_that_runs_code_starts_only_with_the_operators_approval(tmp_path: Path) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "handoffs_runtime", "serve", "--team", "orchestrator", "--store", ":memory:"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HANDOFFS_MODEL": ""},
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "handoffs: the team runs code (Worker: execute_python_code) that any web customer could start: "
        "give --approve-code so that an operator approves each run in the operator console, or mark the "
        "tool requires_approval: operator in the team file"
    ]
    with serve(tmp_path, "--team", "orchestrator", "--approve-code") as (_, lines):
        assert lines[0].startswith("handoffs serve · Orchestrator and workers · model: offline")
