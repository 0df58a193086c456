"""A real ``handoffs serve`` application on uvicorn (loopback, a free port) and a WebSocket client; and
``handoffs serve`` as a child process, to kill and start again."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autogen_core.models import ChatCompletionClient
from websockets.asyncio.client import ClientConnection, connect

from handoffs_runtime import OfflineModel, SQLiteSessionStore, TeamSpec
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.app import create_app
from handoffs_runtime.web.backends import RemoteTeam
from handoffs_runtime.web.hosts import AllowedHosts
from handoffs_runtime.web.hub import SessionHub
from handoffs_runtime.web.server import running
from handoffs_runtime.web.waiting import WAITING_FOR_OPERATOR

from .distributed_support import free_port

TOKEN = "operator-token-for-tests-0123456789"


@dataclass
class Served:
    url: str
    hub: SessionHub
    token: str = TOKEN
    """The operator token."""

    @property
    def ws(self) -> str:
        return self.url.replace("http://", "ws://")


@asynccontextmanager
async def served(
    tmp_path: Path,
    *,
    team: TeamSpec | None = None,
    model: ChatCompletionClient | None = None,
    host: str | None = None,
    operator_token: str = TOKEN,
    hosts: AllowedHosts | None = None,
    store: SQLiteSessionStore | None = None,
    **hub_options: Any,
) -> AsyncIterator[Served]:
    """With ``host``: the server is a front end of that gRPC host (``handoffs serve --host``); ``hosts``:
    the host names it answers to; ``limits`` (a hub option) are the server's too; ``store``: default, a
    new SQLite file in ``tmp_path``."""
    store = store or SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    team = team or acme_team()
    if host is not None:
        hub_options["backend"] = RemoteTeam(team, host, store)
    hub = SessionHub(team, model or OfflineModel(), store, **hub_options)
    try:
        async with running(
            create_app(hub, operator_token=operator_token, hosts=hosts), limits=hub.limits
        ) as url:
            yield Served(url, hub, operator_token)
    finally:
        await store.close()


class Client:
    """One browser tab, as a WebSocket: JSON in, JSON out, every received message kept."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.seen: list[dict[str, Any]] = []
        self.asked: str | None = None
        """The id of the last question received: a page's answer names it, as the real pages do."""

    async def send(self, data: dict[str, Any] | str | bytes) -> None:
        await self.socket.send(data if isinstance(data, str | bytes) else json.dumps(data))

    async def recv(self, timeout: float = 15) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(await asyncio.wait_for(self.socket.recv(), timeout))
        self.seen.append(data)
        question = data if data.get("type") == "question" else data.get("question")
        if data.get("type") in ("question", "taken") and question:
            self.asked = question.get("id")
        return data

    async def until(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        """Messages up to and including the first of type ``kind`` (with ``fields``)."""
        got = []
        while True:
            data = await self.recv()
            got.append(data)
            if data["type"] == kind and all(data.get(k) == v for k, v in fields.items()):
                return got

    async def say(self, text: str, /, until: str = "question", **fields: Any) -> list[dict[str, Any]]:
        """Say ``text``; the messages up to and including the next of type ``until`` (with ``fields``)."""
        await self.send({"type": "say", "text": text, **self.answering()})
        return await self.until(until, **fields)

    def answering(self) -> dict[str, str]:
        """What a page's answer adds: the id of the question it answers, if one was asked."""
        return {"question": self.asked} if self.asked else {}


@asynccontextmanager
async def client(server: Served, path: str = "/ws") -> AsyncIterator[Client]:
    async with connect(server.ws + path, max_size=None) as socket:
        yield Client(socket)


async def customer(server: Served, hello: dict[str, Any] | None = None) -> tuple[Client, Any]:
    """A customer page that said hello; returns the client and its session message (left open)."""
    socket = await connect(server.ws + "/ws")
    page = Client(socket)
    await page.send(hello or {"type": "hello"})
    session = await page.recv()
    return page, session


async def customer_back(server: Served, session: dict[str, Any]) -> tuple[Client, Any]:
    """The customer's page back again (a reload) for ``session``, its session message, with its key."""
    return await customer(server, {"type": "hello", "session": session["session"], "key": session["key"]})


async def hello_via(server: Served, forwarded_for: str) -> dict[str, Any]:
    """A hello on a socket whose request says ``X-Forwarded-For: forwarded_for``; the first answer."""
    headers = {"X-Forwarded-For": forwarded_for}
    async with connect(server.ws + "/ws", additional_headers=headers) as socket:
        await socket.send(json.dumps({"type": "hello"}))
        answer: dict[str, Any] = json.loads(await socket.recv())
        return answer


def http_get(url: str, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


async def operator(server: Served, token: str | None = None) -> Client:
    """An operator console that sent its token (its first messages are ``ready`` and ``waiting``)."""
    page = Client(await connect(server.ws + "/ws/operator"))
    await page.send({"type": "hello", "token": server.token if token is None else token})
    return page


async def waiting_list(op: Client, *expected: tuple[str, str]) -> list[dict[str, Any]]:
    """The operator's next waiting list that names exactly ``expected`` ((session, kind), oldest first)."""
    while True:
        sessions: list[dict[str, Any]] = (await op.until("waiting"))[-1]["sessions"]
        if [(s["session"], s["kind"]) for s in sessions] == list(expected):
            return sessions


async def escalated(server: Served) -> tuple[Client, str]:
    """A customer who asked for a person and now waits for one: the page and its session."""
    page, session = await customer(server)
    await page.until("question")
    got = await page.say("let me talk to a person", until="notice", text=WAITING_FOR_OPERATOR)
    assert not [m for m in got if m["type"] == "question" and m["person"] == "operator"]  # not for them
    return page, session["session"]


@asynccontextmanager
async def escalation_in_view(
    tmp_path: Path, **options: Any
) -> AsyncIterator[tuple[Served, Client, Client, str]]:
    """A server (``options`` as for ``served``) where an operator sees a customer who asked for a person.

    Yields the server, the operator, the customer's page and its session; closes both pages at the end.
    """
    async with served(tmp_path, **options) as server:
        ann = await operator(server)
        page, sid = await escalated(server)
        try:
            await waiting_list(ann, (sid, "escalation"))
            yield server, ann, page, sid
        finally:
            await page.socket.close()
            await ann.socket.close()


async def approve(server: Served, session: str, answer: str = "yes") -> dict[str, Any]:
    """An operator signs in, takes the approval ``session`` waits for, answers it and leaves.

    Returns the approval as the waiting list showed it (``session``, ``kind``, ``prompt``).
    """
    console = await operator(server)
    try:
        while True:
            waiting = (await console.until("waiting"))[-1]["sessions"]
            asked = [s for s in waiting if s["session"] == session]
            if asked:
                break
        assert asked[0]["kind"] == "approval", asked
        await console.send({"type": "take", "session": session})
        await console.until("taken", session=session)
        await console.send({"type": "say", "session": session, "text": answer, **console.answering()})
        await console.until("released", session=session)
        return {key: asked[0][key] for key in ("session", "kind", "prompt")}
    finally:
        await console.socket.close()


class ServeProcess:
    """``handoffs serve ARGS`` in a child process on one port, so a page finds it again after a restart."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        self.args = args
        self.port = port or free_port()
        self.process: asyncio.subprocess.Process | None = None
        self.token = ""
        """The operator token the server printed (a new one at each start without a token file)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> str:
        """Start it and wait until it serves; returns its URL."""
        command = [sys.executable, "-m", "handoffs_runtime", "serve", "--port", str(self.port), *self.args]
        self.process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        while not (line := (await asyncio.wait_for(self.process.stdout.readline(), 60)).decode()).startswith(
            "customer chat:"
        ):
            assert line, f"serve stopped early: {(await self.process.stderr.read()).decode()}"
        console = (await asyncio.wait_for(self.process.stdout.readline(), 60)).decode()
        self.token = console.strip().removesuffix(")").split()[-1]  # "... (sign in with the token T)"
        return self.url

    async def stop(self, how: signal.Signals = signal.SIGTERM) -> None:
        """Send ``how`` (SIGKILL: a crash) and wait until the process is gone."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(how)
            await asyncio.wait_for(self.process.wait(), 30)
