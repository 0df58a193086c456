"""``handoffs serve`` facing strangers: foreign host names, floods from one address, slow and odd requests.

Each test drives a real uvicorn server over real sockets. A second client address is 127.0.0.2: on
Linux the whole of 127.0.0.0/8 is loopback, so the server sees two clients on one machine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from handoffs_runtime.web.hosts import AllowedHosts
from handoffs_runtime.web.limits import Limits

from .web_support import TOKEN, Client, Served, hello_via, served

OTHER_ADDRESS = ("127.0.0.2", 0)


def port_of(server: Served) -> str:
    return server.url.rsplit(":", 1)[1]


def get_as(server: Served, host: str) -> int:
    """The status of ``GET /`` sent to the server with ``Host: host``."""
    request = urllib.request.Request(server.url + "/", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def socket_as(server: Served, host: str) -> Client:
    """A customer WebSocket whose ``Host`` and ``Origin`` both name ``host`` (as a rebound page's would)."""
    origin = f"http://{host}"
    socket = await connect(f"ws://{host}/ws", host="127.0.0.1", port=int(port_of(server)), origin=origin)  # type: ignore[arg-type]
    return Client(socket)


async def test_a_foreign_host_name_is_refused_for_pages_and_sockets(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        port = port_of(server)
        assert await asyncio.to_thread(get_as, server, f"rebind.evil:{port}") == 400
        with pytest.raises(InvalidStatus) as refused:
            await socket_as(server, f"rebind.evil:{port}")
        assert refused.value.response.status_code == 400
        for own in (f"127.0.0.1:{port}", f"localhost:{port}", f"127.0.0.9:{port}"):
            assert await asyncio.to_thread(get_as, server, own) == 200
        page = await socket_as(server, f"localhost:{port}")
        await page.send({"type": "hello"})
        assert (await page.recv())["type"] == "session"
        await page.socket.close()


async def test_an_allowed_host_name_is_served(tmp_path: Path) -> None:
    async with served(tmp_path, hosts=AllowedHosts("127.0.0.1", ["shop.example"])) as server:
        port = port_of(server)
        assert await asyncio.to_thread(get_as, server, f"shop.example:{port}") == 200
        assert await asyncio.to_thread(get_as, server, f"SHOP.example.:{port}") == 200
        assert await asyncio.to_thread(get_as, server, f"other.example:{port}") == 400
        page = await socket_as(server, f"shop.example:{port}")
        await page.send({"type": "hello"})
        assert (await page.recv())["type"] == "session"
        await page.socket.close()


def test_host_names_are_read_as_browsers_send_them() -> None:
    hosts = AllowedHosts("127.0.0.1", ["shop.example"])
    for header, admitted in [
        ("localhost:8000", True),
        ("[::1]:8000", True),
        ("127.1.2.3", True),
        ("shop.example", True),
        ("rebind.evil:8000", False),
        ("10.0.0.5:8000", False),
        ("localhost@rebind.evil", False),
        ("", False),
        (None, False),
    ]:
        assert hosts.admits(header) is admitted, header
    everywhere = AllowedHosts("0.0.0.0")  # an address cannot be rebound; a name has to be listed
    assert everywhere.admits("192.168.1.20:8000") and not everywhere.admits("shop.example:8000")


async def hello_and_leave(server: Served) -> dict[str, Any] | int | str:
    """One hello on a new connection, then away: what the server answered, its HTTP status when it
    refused the socket, or "closed" when it closed the connection at once."""
    try:
        async with connect(server.ws + "/ws") as socket:
            await socket.send(json.dumps({"type": "hello"}))
            answer: dict[str, Any] = json.loads(await socket.recv())
            return answer
    except InvalidStatus as exc:
        return exc.response.status_code
    except InvalidMessage:
        return "closed"


async def chat_from(server: Served, local_addr: tuple[str, int]) -> str:
    """A customer from ``local_addr`` opens a session and says hello; returns the agent's reply."""
    async with connect(server.ws + "/ws", local_addr=local_addr) as socket:
        page = Client(socket)
        await page.send({"type": "hello"})
        assert (await page.recv())["type"] == "session", page.seen
        await page.until("question")
        await page.send({"type": "say", "text": "hello"})
        return str((await page.until("reply"))[-1]["text"])


async def test_a_thousand_hellos_from_one_address_leave_other_customers_able_to_chat(tmp_path: Path) -> None:
    async with served(tmp_path) as server:  # the default limits
        answers: list[dict[str, Any] | int | str] = []
        for _ in range(20):
            answers += await asyncio.gather(*(hello_and_leave(server) for _ in range(50)))
        assert await asyncio.wait_for(chat_from(server, OTHER_ADDRESS), 60)  # a new customer chats at once
        outcomes = Counter(a["type"] if isinstance(a, dict) else a for a in answers)
        defaults = Limits()
        assert outcomes["session"] <= defaults.new_sessions_per_minute
        assert outcomes["error"] <= defaults.sockets_per_minute - outcomes["session"]
        assert outcomes[429] <= defaults.connections_per_minute - defaults.sockets_per_minute
        assert outcomes["closed"] == 1000 - defaults.connections_per_minute  # the rest: closed at once
        assert sum(outcomes.values()) == 1000


async def test_a_session_nobody_wrote_in_ends_soon_after_its_page_left(tmp_path: Path) -> None:
    async with served(tmp_path, limits=Limits(unused_session_seconds=0.3)) as server:
        unused = Client(await connect(server.ws + "/ws"))
        await unused.send({"type": "hello"})
        quiet = (await unused.recv())["session"]
        used = Client(await connect(server.ws + "/ws"))
        await used.send({"type": "hello"})
        busy = (await used.recv())["session"]
        await used.until("question")
        await used.send({"type": "say", "text": "hello"})
        await used.until("question")
        await unused.socket.close()
        await used.socket.close()
        deadline = time.monotonic() + 15
        while server.hub.is_live(quiet) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not server.hub.is_live(quiet)
        assert server.hub.is_live(busy)  # a conversation waits --idle-minutes for its customer
    assert Limits().unused_session_seconds <= 60


async def test_one_address_gets_its_share_of_sessions_and_sockets_and_no_more(tmp_path: Path) -> None:
    limits = Limits(sessions_per_client=2, sockets_per_minute=4)
    async with served(tmp_path, limits=limits) as server:
        pages = []
        for _ in range(2):
            page = Client(await connect(server.ws + "/ws"))
            await page.send({"type": "hello"})
            assert (await page.recv())["type"] == "session"
            pages.append(page)
        third = Client(await connect(server.ws + "/ws"))
        await third.send({"type": "hello"})
        too_many = "you have too many conversations open; please finish one first"
        assert await third.recv() == {"type": "error", "message": too_many}
        with pytest.raises(ConnectionClosed) as closed:
            await third.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013  # try again later
        fourth = await hello_and_leave(server)  # the fourth socket this minute: refused a session
        assert fourth == {"type": "error", "message": too_many}
        assert await hello_and_leave(server) == 429  # the fifth socket: refused
        assert await asyncio.wait_for(chat_from(server, OTHER_ADDRESS), 60)
        for page in pages:
            await page.socket.close()


async def test_x_forwarded_for_names_the_client_only_from_a_trusted_proxy(tmp_path: Path) -> None:
    async with served(tmp_path, limits=Limits(new_sessions_per_minute=1)) as server:
        assert (await hello_via(server, "203.0.113.1"))["type"] == "session"
        assert (await hello_via(server, "203.0.113.2"))["type"] == "error"  # the header is not believed
    proxied = Limits(new_sessions_per_minute=1, trusted_proxies=("127.0.0.0/8",))
    async with served(tmp_path, limits=proxied) as server:
        assert (await hello_via(server, "203.0.113.1"))["type"] == "session"
        assert (await hello_via(server, "203.0.113.2"))["type"] == "session"  # another customer
        assert (await hello_via(server, "198.51.100.9, 203.0.113.1"))["type"] == "error"  # the same again


async def open_raw(server: Served, local_addr: tuple[str, int] | None = None) -> tuple[Any, Any]:
    return await asyncio.open_connection("127.0.0.1", int(port_of(server)), local_addr=local_addr)


async def closed_within(reader: asyncio.StreamReader, writer: Any, seconds: float, drip: bytes = b"") -> bool:
    """Whether the server closes the connection within ``seconds``, while ``drip`` is sent now and then."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            data = await asyncio.wait_for(reader.read(1024), 0.2)
        except TimeoutError:
            if drip:
                writer.write(drip)
            continue
        except ConnectionError:
            return True
        if not data:
            return True
    return False


async def test_a_half_sent_request_is_closed_at_the_deadline(tmp_path: Path) -> None:
    async with served(tmp_path, limits=Limits(request_seconds=1.0)) as server:
        reader, writer = await open_raw(server)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends: a header now and then
        assert await closed_within(reader, writer, 10, drip=b"X-Slow: 1\r\n")
        reader, writer = await open_raw(server)  # a whole request first, then the next one dripped
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200 OK" in await reader.readuntil(b"\r\n\r\n")
        writer.write(b"GET / HTTP/1.1\r\n")
        assert await closed_within(reader, writer, 10, drip=b"X-Slow: 1\r\n")
        quiet = Client(await connect(server.ws + "/ws"))  # a WebSocket that never says hello
        assert (await quiet.recv())["type"] == "error"
        with pytest.raises(ConnectionClosed):
            await quiet.recv()
    assert Limits().request_seconds <= 30


async def test_a_client_opening_too_many_connections_a_minute_is_cut_off(tmp_path: Path) -> None:
    async with served(tmp_path, limits=Limits(connections_per_minute=5)) as server:
        for _ in range(5):
            assert await asyncio.to_thread(get_as, server, "127.0.0.1") == 200  # urllib: a connection each
        reader, _ = await open_raw(server)
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed before anything was read
        reader, writer = await open_raw(server, OTHER_ADDRESS)  # another client is served
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200 OK" in await reader.readuntil(b"\r\n\r\n")


async def test_connections_beyond_the_caps_are_answered_busy(tmp_path: Path) -> None:
    async with served(
        tmp_path, limits=Limits(connections_per_client=3, max_connections=6, fair_share=2)
    ) as server:
        held = [await open_raw(server) for _ in range(3)]
        reader, _ = await open_raw(server)
        assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 503")
        held += [await open_raw(server, OTHER_ADDRESS) for _ in range(3)]
        reader, _ = await open_raw(server, ("127.0.0.3", 0))  # a new client, but the server is full
        assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 503")
        for _, writer in held[:2]:
            writer.close()
        deadline = time.monotonic() + 10
        status = 503
        while status == 503 and time.monotonic() < deadline:  # the server counts the closes as they arrive
            status = await asyncio.to_thread(get_as, server, "127.0.0.1")
        assert status == 200


@pytest.fixture
def logged() -> Iterator[list[logging.LogRecord]]:
    """Every record uvicorn and the project log (uvicorn's own loggers do not reach pytest's)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    loggers = [
        logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "handoffs_runtime", "asyncio")
    ]
    for logger in loggers:
        logger.addHandler(handler)
    yield records
    for logger in loggers:
        logger.removeHandler(handler)


DEEP = "[" * 60_000


async def test_a_sixty_thousand_deep_frame_gets_one_error_and_a_close_code(
    tmp_path: Path, logged: list[logging.LogRecord]
) -> None:
    async with served(tmp_path) as server:
        for path, before in [
            ("/ws", []),
            ("/ws", [{"type": "hello"}]),
            ("/ws/operator", []),
            ("/ws/operator", [{"type": "hello", "token": TOKEN}]),
        ]:
            page = Client(await connect(server.ws + path))
            for message in before:
                await page.send(message)
                await page.recv()
            await page.send(DEEP)
            got = []
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    got.append(await page.recv())
            errors = [m for m in got if m["type"] == "error"]
            assert errors == [{"type": "error", "message": "malformed message: expected one JSON object"}], (
                got
            )
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008, (path, before)
        assert not [r for r in logged if r.exc_info or "Traceback" in r.getMessage()]
