"""Failover on one PostgreSQL database: a web server killed mid-turn, and a chat front end of a gRPC host
killed mid-turn; the person goes on with the other one, with the whole conversation.

The two web servers sit behind a small TCP balancer, as a deployment puts them behind a load balancer:
the page keeps its one address, and its next connection reaches whichever server answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from handoffs_runtime.sessions.postgres import PostgresSessionStore

from .browser_support import WAIT_MS, needs_chromium, send
from .chat_process import Chat
from .distributed_support import Process
from .fake_openai import Answer, fake_openai
from .postgres_support import PostgresServer, fresh_database
from .test_browser import approve_in_console, sign_in
from .test_distributed_streaming import team_on_a_worker
from .web_support import ServeProcess

REFUND = "I want a refund for my shoes"
OFFER = "I am sorry about your shoes. I can refund them: shall I go ahead?"
DONE = "Done: your refund is on its way."
TO_REPAIRS: Answer = [("transfer_to_issues_and_repairs", {})]
ANSWERS: list[Answer] = [
    TO_REPAIRS,  # the first server: the handoff ...
    OFFER,  # ... and the reply, paused while it streams: the server is killed here
    TO_REPAIRS,  # the second server, after the person says it again
    OFFER,
    [("look_up_item", {"search_query": "shoes"})],
    [("execute_refund", {"item_id": "item_132612938", "reason": "worn out"})],
    DONE,
]


class Balancer:
    """Each connection goes to the first of ``ports`` that accepts it (a dead server refuses)."""

    def __init__(self, ports: Sequence[int]) -> None:
        self._ports = ports
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for port in self._ports:
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                continue
        else:
            writer.close()
            return
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()  # one side ended (a killed server): so does the other

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@contextlib.asynccontextmanager
async def balanced(ports: Sequence[int]) -> AsyncIterator[str]:
    balancer = Balancer(ports)
    try:
        yield await balancer.start()
    finally:
        await balancer.close()


async def stored_conversation(url: str, session: str) -> list[tuple[str, str]]:
    store = await asyncio.to_thread(PostgresSessionStore, url)
    try:
        return [(e.kind, e.text) for e in await store.entries(session) if e.kind in ("user", "reply")]
    finally:
        await store.close()


@needs_chromium
async def test_a_web_server_killed_mid_turn_the_customer_goes_on_with_the_other_server(
    browser: object,
    postgres_server: PostgresServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = fresh_database(postgres_server)
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the client wants one; the local model server ignores it
    with fake_openai(ANSWERS) as model_server:
        model_server.pause_after = 3
        options = ("--store", url, "--model", "gpt-4o-mini", "--base-url", model_server.url)
        first, second = ServeProcess(*options), ServeProcess(*options)  # default tokens: each its own
        try:
            await asyncio.gather(first.start(), second.start())
            async with balanced([first.port, second.port]) as address:
                page = await browser.new_page()  # type: ignore[attr-defined]
                await page.goto(address + "/")
                await send(page, REFUND)
                await page.get_by_text(OFFER[:12]).wait_for(timeout=WAIT_MS)  # the reply is streaming
                session = await page.evaluate("localStorage.getItem('handoffs.session')")
                await first.stop(signal.SIGKILL)  # mid-turn
                await page.locator("#status", has_text="reconnected").wait_for(timeout=WAIT_MS)
                await page.get_by_text("your last message was not answered").wait_for(timeout=WAIT_MS)
                await send(page, REFUND)
                await page.get_by_text(OFFER).wait_for(timeout=WAIT_MS)
                await send(page, "yes")
                operator = await browser.new_page()  # type: ignore[attr-defined]
                await sign_in(operator, address + "/operator", second.token)
                await approve_in_console(operator)  # on the web a refund is the operator's to approve
                await page.get_by_text(DONE).wait_for(timeout=WAIT_MS)
                assert await page.evaluate("localStorage.getItem('handoffs.session')") == session
                said = await page.locator(".msg.you").all_inner_texts()  # the history once, and the rest
                assert [text.split("\n", 1)[1] for text in said] == [REFUND, REFUND, "yes"]
        finally:
            model_server.resume.set()
            await asyncio.gather(first.stop(), second.stop())
    assert await stored_conversation(url, session) == [
        ("user", REFUND),  # acknowledged before the first server died: kept
        ("user", REFUND),
        ("reply", OFFER),
        ("user", "yes"),
        ("reply", DONE),
    ]


async def test_a_chat_front_end_killed_mid_turn_the_person_goes_on_with_another(
    processes: list[Process],
    postgres_server: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``handoffs chat --host`` on one PostgreSQL store: the second front end resumes the session."""
    url = fresh_database(postgres_server)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with fake_openai(ANSWERS) as model_server:
        model_server.pause_after = 3
        address = await team_on_a_worker(processes, model_server.url)
        try:
            first = await Chat.start(url, "alice", tmp_path, "--host", address)
            await first.wait_for("you › ")
            await first.say(REFUND)
            await first.wait_for(f"ACME repairs › {OFFER[:12]}")  # the reply is streaming
            await first.kill()  # mid-turn
            second = await Chat.start(url, "alice", tmp_path, "--host", address)
            await second.wait_for("your last message was not answered")
            await second.wait_for("you › ")
            await second.say(REFUND)
            await second.wait_for(OFFER)
            await second.say("yes")
            await second.wait_for(DONE)
            output = await second.finish()
            assert "resuming session alice" in output and f"you › {REFUND}" in output  # the history
        finally:
            model_server.resume.set()
    assert await stored_conversation(url, "alice") == [
        ("user", REFUND),
        ("user", REFUND),
        ("reply", OFFER),
        ("user", "yes"),
        ("reply", DONE),
    ]
