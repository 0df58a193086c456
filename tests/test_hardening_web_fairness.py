"""``handoffs serve`` shared fairly: a handful of addresses cannot take the whole server.

Each client's caps are paired with a fair share of the server-wide ones, an IPv6 /56 counts as one
neighbourhood, and a customer's socket that stays quiet is closed. The attackers are loopback addresses
(the whole of 127.0.0.0/8 is loopback on Linux) or, behind a trusted proxy, the addresses it reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from handoffs_runtime.web.limits import ClientLimits, Limits, client_key
from handoffs_runtime.web.sockets import QUIET

from .web_support import Client, Served, hello_via, served

ATTACKERS = [f"127.0.0.{n}" for n in range(2, 27)]
NEWCOMER = ("127.0.1.1", 0)


async def hold(server: Served, address: str, sockets: list[ClientConnection]) -> None:
    """Open one socket from ``address``, say hello in it and keep it: what an attacker holds."""
    with contextlib.suppress(InvalidStatus, InvalidMessage, ConnectionClosed, OSError, TimeoutError):
        socket = await asyncio.wait_for(connect(server.ws + "/ws", local_addr=(address, 0)), 10)
        sockets.append(socket)
        await socket.send(json.dumps({"type": "hello"}))
        await asyncio.wait_for(socket.recv(), 10)


async def test_twenty_five_addresses_holding_sockets_and_sessions_leave_room_for_a_newcomer(
    tmp_path: Path,
) -> None:
    limits = Limits(max_connections=200, sockets_per_minute=200, connections_per_minute=600)
    async with served(tmp_path, limits=limits, max_sessions=200) as server:
        held: list[ClientConnection] = []
        for _ in range(10):  # each address asks for ten sockets and sessions, as far as it gets them
            await asyncio.gather(*(hold(server, address, held) for address in ATTACKERS))
        try:
            async with connect(server.ws + "/ws", local_addr=NEWCOMER, open_timeout=10) as socket:
                page = Client(socket)
                await page.send({"type": "hello"})
                assert (await page.recv(timeout=10))["type"] == "session", page.seen  # served within 10 s
                await page.until("question")
                await page.send({"type": "say", "text": "hello"})
                assert (await page.until("reply"))[-1]["text"]
        finally:
            for socket in held:
                await socket.close()


async def test_an_ipv6_slash_56_is_one_neighbourhood(tmp_path: Path) -> None:
    limits = Limits(sessions_per_client=1, fair_share=1, trusted_proxies=("127.0.0.0/8",))
    async with served(tmp_path, limits=limits) as server:
        answers = [await hello_via(server, f"2001:db8:0:ab{n:02x}::1") for n in range(8)]  # eight /64s
        kinds = [a["type"] for a in answers]
        assert kinds == ["session"] * 4 + ["error"] * 4, answers  # four clients' worth, no more
        elsewhere = await hello_via(server, "2001:db8:0:cd00::1")  # another /56: its own share
        assert elsewhere["type"] == "session"


def test_a_client_gets_its_fair_share_of_the_server_and_no_more() -> None:
    limits = Limits(sessions_per_client=20, fair_share=64)
    assert limits.share(limits.sessions_per_client, 1000) == 15
    assert limits.share(limits.connections_per_client, 1000) == 15
    clients = ClientLimits(limits, max_sessions=1000)
    live: set[str] = set()
    refused = None
    for n in range(20):
        refused = clients.start_session("203.0.113.9", f"s{n}", live.__contains__)
        if refused is not None:
            break
        live.add(f"s{n}")
    assert len(live) == 15 and refused == ClientLimits.TOO_MANY_LIVE
    assert client_key("2001:db8:0:ab01::7") == "2001:db8:0:ab01::/64"


async def test_a_quiet_customer_socket_is_closed(tmp_path: Path) -> None:
    limits = Limits(quiet_socket_seconds=1.0)
    async with served(tmp_path, limits=limits) as server, connect(server.ws + "/ws") as socket:
        page = Client(socket)
        await page.send({"type": "hello"})
        await page.until("question")
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                await page.recv(timeout=15)
        assert page.seen[-1] == {"type": "error", "message": QUIET}
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013  # its page comes back
