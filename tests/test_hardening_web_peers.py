"""``handoffs serve`` and pages that stop reading: nobody waits on them, and they are dropped.

A customer's page that stops reading fills its socket; every send to it is bounded, so the operator who
takes its session acts on at once, and the page is cut off instead of holding anything.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from websockets.asyncio.client import connect

from handoffs_runtime.web.limits import Limits

from .web_support import Client, Served, escalation_in_view, operator, waiting_list

FEW_SECONDS = 15.0
"""Longer than the limit below plus a busy machine's slack, far shorter than a keepalive's 40 s."""


async def stalled_page(server: Served, hello: dict[str, object]) -> Client:
    """A customer page with a tiny receive buffer that stops reading once it has said hello."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    raw.connect((host, int(port)))
    raw.setblocking(False)
    page = Client(await connect(server.ws + "/ws", sock=raw, max_queue=1))
    await page.send(hello)
    return page


async def test_a_customer_who_stops_reading_never_delays_the_operator(tmp_path: Path) -> None:
    async with escalation_in_view(tmp_path, limits=Limits(send_seconds=2.0)) as (server, ann, page, sid):
        session = next(m for m in page.seen if m["type"] == "session")
        for n in range(5):  # long lines the customer keeps writing while they wait
            await page.send({"type": "say", "text": f"{n} " + "x" * 3900})
            await page.until("question")
        await page.socket.close()
        stalled = await stalled_page(server, {"type": "hello", "session": sid, "key": session["key"]})
        for _ in range(300):  # each asks for the transcript again; none of it is read
            await stalled.send({"type": "earlier", "before": 1000})
        await asyncio.sleep(0.5)  # the server has written what fits; the rest waits for room
        await ann.send({"type": "take", "session": sid})
        await asyncio.wait_for(ann.until("taken", session=sid), FEW_SECONDS)
        await ann.send({"type": "take", "session": "f" * 32})  # the operator's next action is answered
        got = await asyncio.wait_for(ann.until("error"), FEW_SECONDS)
        assert got[-1]["message"] == "that session is not waiting for an operator"
        deadline = asyncio.get_running_loop().time() + FEW_SECONDS
        while server.hub.live[sid].customers and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert not server.hub.live[sid].customers  # the page that stopped reading was dropped
        await stalled.socket.close()
        await ann.socket.close()  # the console goes: the session is not left taken by it
        bob = await operator(server)
        await waiting_list(bob, (sid, "escalation"))
        await bob.send({"type": "take", "session": sid})
        await asyncio.wait_for(bob.until("taken", session=sid), FEW_SECONDS)
        await bob.socket.close()
