"""``handoffs serve`` and what strangers send: bytes that are not UTF-8, guessed operator tokens, floods.

Each refusal is a plain sentence to the sender, never a traceback in the log, and never costs another
person anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import logging
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from handoffs_runtime.web.customers import TOO_FAST
from handoffs_runtime.web.limits import Limits

from .test_web_guard import logged  # noqa: F401  (a fixture: every record uvicorn and the project log)
from .web_support import TOKEN, Client, Served, escalation_in_view, served

OTHER_ADDRESS = ("127.0.0.2", 0)


async def test_invalid_utf8_before_hello_gets_an_error_and_no_traceback(
    tmp_path: Path,
    logged: list[logging.LogRecord],  # noqa: F811
) -> None:
    async with served(tmp_path) as server:
        for path in ("/ws", "/ws/operator"):
            async with connect(server.ws + path) as socket:
                await socket.send(b'{"type": "hello\xff\xfe"}', text=True)
                page = Client(socket)
                assert await page.recv() == {
                    "type": "error",
                    "message": "malformed message: text must be UTF-8",
                }
                with pytest.raises(ConnectionClosed) as closed:
                    await page.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    assert not [r for r in logged if r.exc_info or "Traceback" in r.getMessage()], logged
    assert not [r for r in logged if r.levelno >= logging.ERROR]


def api_status(server: Served, token: str, address: str = "127.0.0.1") -> int:
    """The status of ``GET /api/sessions`` with ``token``, sent from the loopback address ``address``."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10, source_address=(address, 0))
    try:
        conn.request("GET", "/api/sessions", headers={"Authorization": f"Bearer {token}"})
        return conn.getresponse().status
    finally:
        conn.close()


async def test_operator_token_guessing_is_throttled_per_client_over_http_and_websocket(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, limits=Limits(wrong_tokens_per_minute=5)) as server:
        guesses = [
            await asyncio.to_thread(api_status, server, f"guess-{n:04d}-aaaaaaaaaa") for n in range(20)
        ]
        assert guesses == [401] * 5 + [429] * 15
        assert await asyncio.to_thread(api_status, server, TOKEN) == 429  # not even the right one, for now
        async with connect(server.ws + "/ws/operator") as socket:  # the console counts for the same client
            console = Client(socket)
            await console.send({"type": "hello", "token": TOKEN})
            refused = await console.recv()
            assert refused["type"] == "error" and "too many wrong operator tokens" in refused["message"]
        assert await asyncio.to_thread(api_status, server, TOKEN, OTHER_ADDRESS[0]) == 200  # others


async def drained(page: Client, quiet: float = 2.0) -> list[dict[str, Any]]:
    """Everything ``page`` receives until it has received nothing for ``quiet`` seconds."""
    got = []
    with contextlib.suppress(TimeoutError):
        while True:
            got.append(await page.recv(timeout=quiet))
    return got


async def test_a_customer_flooding_messages_is_refused_and_operators_get_no_frame_per_message(
    tmp_path: Path,
) -> None:
    async with escalation_in_view(tmp_path) as (server, ann, page, sid):
        await drained(ann, 1.0)
        answers = []
        for n in range(100):  # each as soon as the page may write again, as a script does
            await page.send({"type": "say", "text": f"flood {n} " + "x" * 3000})
            while (answer := await page.recv())["type"] not in ("said", "error"):
                answers.append(answer)
            answers.append(answer)
            if answers[-1]["type"] == "said":
                answers += await page.until("question")
        to_operator = await drained(ann)
        refused = [m["message"] for m in answers if m["type"] == "error"]
        assert TOO_FAST in refused
        stored = [e for e in await server.hub.store.entries(sid) if e.kind == "user"]
        assert len(stored) <= Limits().messages_per_minute + 1  # the request for a person, and the flood's
        assert len(refused) >= 100 - Limits().messages_per_minute
        lists = [m for m in to_operator if m["type"] == "waiting"]
        assert len(lists) <= 10, len(lists)  # the changes went together, not one list per message
        assert lists[-1]["sessions"][0]["last"].startswith("flood")
