"""``handoffs serve`` as a real subprocess: it starts on loopback, prints where, and needs its token."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from handoffs_runtime import SQLiteSessionStore

from .web_support import http_get


@contextmanager
def serve(
    tmp_path: Path, *args: str, ignore_sigint: bool = False
) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``handoffs serve`` on a free port; ``ignore_sigint``: started as a script's background job is
    (a shell starts those with SIGINT ignored)."""
    command = [sys.executable, "-m", "handoffs_runtime", "serve", "--port", "0"]
    command += ["--store", str(tmp_path / "s.sqlite3"), *args]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None,
    )
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


async def a_conversation(url: str) -> str:
    """A customer who said one thing (so the server holds the session's lease); returns the session id."""
    async with connect(url.replace("http://", "ws://") + "ws") as socket:
        await socket.send(json.dumps({"type": "hello"}))
        session = json.loads(await socket.recv())["session"]
        while json.loads(await socket.recv())["type"] != "question":
            pass
        await socket.send(json.dumps({"type": "say", "text": "I want a refund for my shoes"}))
        while json.loads(await socket.recv())["type"] != "question":
            pass
    return str(session)


async def claim(store_path: Path, session: str) -> None:
    """Open the session as a second process would; raises ``SessionBusyError`` while it is held."""
    store = SQLiteSessionStore(str(store_path))
    try:
        await store.claim(session)
        assert (await store.entries(session))[0].text == "I want a refund for my shoes"
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("ignore_sigint", "signals"),
    [
        (True, [signal.SIGINT]),
        (False, [signal.SIGINT]),
        (False, [signal.SIGTERM]),
        (False, [signal.SIGINT, signal.SIGINT, signal.SIGTERM]),
    ],
    ids=["SIGINT-ignored-at-start", "SIGINT", "SIGTERM", "impatient"],
)
def test_a_signal_ends_serve_and_frees_its_sessions(
    tmp_path: Path, ignore_sigint: bool, signals: list[int]
) -> None:
    with serve(tmp_path, ignore_sigint=ignore_sigint) as (process, lines):
        session = asyncio.run(a_conversation(lines[1].split()[-1]))
        for sig in signals:
            process.send_signal(sig)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        said = process.stderr.read()
        assert "stopped" in said and "Traceback" not in said and "ERROR" not in said, said
    asyncio.run(claim(tmp_path / "s.sqlite3", session))  # a second process takes the session over


def test_allowed_host_names_a_host_the_server_answers_to(tmp_path: Path) -> None:
    with serve(tmp_path, "--allowed-host", "shop.example") as (_, lines):
        url = lines[1].split()[-1]
        port = url.rstrip("/").rsplit(":", 1)[1]
        for host, status in [("shop.example", 200), ("rebind.evil", 400), ("localhost", 200)]:
            request = urllib.request.Request(url, headers={"Host": f"{host}:{port}"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    assert (host, response.status) == (host, status)
            except urllib.error.HTTPError as exc:
                assert (host, exc.code) == (host, status)


def test_limits_must_be_positive(tmp_path: Path) -> None:
    for option, value in [
        ("--sessions-per-client", "0"),
        ("--request-timeout", "-1"),
        ("--trusted-proxy", "x"),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "handoffs_runtime", "serve", option, value],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2 and option in result.stderr and "Traceback" not in result.stderr
