"""Driving an A2A server as another vendor's client does: the ``a2a-sdk`` client, a bearer token, and
``handoffs a2a serve`` as a real subprocess."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState

from .cli_support import cli_env

ROOT = Path(__file__).resolve().parents[1]
ACME = ROOT / "examples" / "acme.yaml"
START_SECONDS = 60


@dataclass
class A2AServer:
    process: subprocess.Popen[str]
    url: str
    token: str


def token_file(tmp_path: Path) -> tuple[Path, str]:
    token = secrets.token_urlsafe(24)
    path = tmp_path / "token"
    path.write_text(token + "\n")
    return path, token


@contextmanager
def a2a_serve(tmp_path: Path, *args: str, team: Path = ACME) -> Iterator[A2AServer]:
    """``handoffs a2a serve`` on a free port, on the offline model, its sessions in ``tmp_path``."""
    path, token = token_file(tmp_path)
    command = [sys.executable, "-m", "handoffs_runtime", "a2a", "serve", "--team", str(team), "--port", "0"]
    command += ["--store", str(tmp_path / "s.sqlite3"), "--token-file", str(path), *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
    )
    try:
        assert process.stdout is not None
        url = ""
        for _ in range(3):
            line = process.stdout.readline()
            assert line, f"a2a serve stopped early: {process.stderr.read() if process.stderr else ''}"
            if line.startswith("A2A endpoint: "):
                url = line.split()[2].rstrip("/")
        assert url
        yield A2AServer(process, url, token)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def http(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=60)


async def send(
    url: str, token: str, text: str, *, context_id: str, task_id: str = "", stream: bool = False
) -> Task:
    """One message of the person's; the task as it stands when the server's answer ends."""
    async with http(token) as client_http:
        client = await create_client(url, ClientConfig(streaming=stream, httpx_client=client_http))
        message = Message(
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            message_id=uuid.uuid4().hex,
            context_id=context_id,
            task_id=task_id,
        )
        task: Task | None = None
        async for response in client.send_message(SendMessageRequest(message=message)):
            if response.HasField("task"):
                task = response.task
            elif response.HasField("status_update") and task is not None:
                task.status.CopyFrom(response.status_update.status)
        await client.close()
    assert task is not None, "the server answered without a task"
    return task


def said(task: Task) -> str:
    return get_message_text(task.status.message)


def state(task: Task) -> str:
    return TaskState.Name(task.status.state)
