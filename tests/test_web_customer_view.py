"""What a web customer receives is for customers: no paths, pids, host names, tool arguments or results.

One full session over a real server's WebSockets (a handoff, tool calls, an approval, a lease another
process holds, a store that cannot grow), every frame and page the customer receives scanned; the
operator console still gets the details.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from handoffs_runtime import (
    AgentSpec,
    SQLiteSessionStore,
    TeamSpec,
    irreversible,
    tool_call,
)
from handoffs_runtime.messages import Event, HandoffLine, Notice, Reply, ToolFinished, ToolStarted, event_json
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.web.audience import customer_view
from handoffs_runtime.web.frames import CustomerEvent, frame_json
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL

from .web_support import Client, Served, customer, http_get, operator, served, waiting_list

ARGUMENT = "ORD-ARGUMENT-7Q2"
"""An argument the model passes to tools; the customer never typed it."""
RESULT = "RAW-RESULT-9X4"
"""Text only a tool's result holds."""


def look_up(order: str) -> str:
    """Look an order up."""
    return f"{RESULT}: {order} is in /srv/orders/{order}.json"


def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order} ({RESULT})"


TEAM = TeamSpec(
    name="shop",
    entry="Front",
    agents=[
        AgentSpec("Front", display_name="Sam at the front desk", handoffs=["Clerk"]),
        AgentSpec("Clerk", display_name="Maya from Orders", tools=[look_up, irreversible(refund)]),
    ],
)


def leaks(text: str, *, folder: Path) -> list[str]:
    """Whatever in ``text`` is a path of this machine, a pid, a host name, or a tool's name, arguments
    or result."""
    found = re.findall(r"(?<![\w:/])/(?:[\w.-]+/)+[\w.-]*", text)  # an absolute path
    found += re.findall(r"\bpid\b|\bhost\b", text, flags=re.IGNORECASE)
    found += [word for word in (str(os.getpid()), socket.gethostname()) if re.search(rf"\b{word}\b", text)]
    internals = (str(folder), ARGUMENT, RESULT, "look_up", "refund(", "transfer_to_clerk", "Allow ")
    return found + [secret for secret in internals if secret in text]


def page_leaks(text: str, *, folder: Path) -> list[str]:
    """What a page shows of this machine: its paths, its pid or its name (a page's own URLs are fine)."""
    words = (str(folder), str(Path(__file__).parents[1]), str(os.getpid()), socket.gethostname())
    return [word for word in words if re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", text)]


async def said(page: Client, words: str, until: str = "question", **fields: Any) -> list[dict[str, Any]]:
    await page.send({"type": "say", "text": words})
    return await page.until(until, **fields)


async def test_no_customer_frame_or_page_shows_internals(tmp_path: Path) -> None:
    store_path = tmp_path / "sessions.sqlite3"
    model = ScriptedModel(
        [
            [tool_call("transfer_to_clerk", {})],
            [tool_call("look_up", {"order": ARGUMENT})],
            [tool_call("refund", {"order": ARGUMENT})],
            "Your refund is on its way.",
            "You are welcome.",  # the second customer
        ]
    )
    async with served(tmp_path, team=TEAM, model=model, idle_seconds=0.1) as server:
        console = await operator(server)
        page, session = await customer(server)
        sid = session["session"]
        await page.until("question")
        await said(page, "I want my money back", "notice", text=WAITING_FOR_APPROVAL)
        [waiting] = await waiting_list(console, (sid, "approval"))
        assert waiting["prompt"] == _asked()
        await console.send({"type": "take", "session": sid})
        await console.until("taken", session=sid)
        await console.send({"type": "say", "session": sid, "text": "yes", **console.answering()})
        await page.until("reply")
        assert ARGUMENT in json.dumps(console.seen)  # the operator reads what is to be approved

        # A lease another process holds: the session is taken over between two turns.
        other, other_session = await customer(server)
        await other.until("question")
        await said(other, "thanks")
        async with _another_process(store_path) as elsewhere:
            await elsewhere.claim(other_session["session"], take_over=True)
            await said(other, "are you there?", "ended")
        # A page that comes back to a session another process opened meanwhile.
        await other.socket.close()
        await _ended(server, other_session["session"])
        async with _another_process(store_path) as elsewhere:
            await elsewhere.claim(other_session["session"])
            back, _ = await customer(server, {"type": "hello", **_resume(other_session)})
            with pytest.raises(ConnectionClosed):  # told to come back later
                await back.until("ended")

        # A store that cannot grow.
        await _fill(server)
        await said(page, "thank you " * 399, "ended")  # a long line needs a new page
        pages = [
            (await asyncio.to_thread(http_get, server.url + path))[2].decode()
            for path in ("/", "/static/chat.js", "/static/common.js", "/static/app.css")
        ]
        frames = [json.dumps(m) for p in (page, other, back) for m in p.seen]
        problems = {frame: found for frame in frames if (found := leaks(frame, folder=tmp_path))}
        raw = {"tool", "arguments", "result", "call_id", "detail", "reason"}
        problems |= {
            frame: sorted(raw & set(json.loads(frame))) for frame in frames if raw & set(json.loads(frame))
        }
        problems |= {page[:80]: found for page in pages if (found := page_leaks(page, folder=tmp_path))}
        assert not problems, json.dumps(problems, indent=1)
        await page.socket.close()
        await back.socket.close()
        await console.socket.close()


def _asked() -> str:
    return f'Allow refund(order="{ARGUMENT}")? y/n'


def _resume(session: dict[str, Any]) -> dict[str, str]:
    return {"session": session["session"], "key": session["key"]}


class _another_process:
    """A second store on the same file: as far as the leases can tell, another process."""

    def __init__(self, path: Path) -> None:
        self._path = path

    async def __aenter__(self) -> SQLiteSessionStore:
        self._store = await asyncio.to_thread(SQLiteSessionStore, self._path)
        return self._store

    async def __aexit__(self, *_: object) -> None:
        await self._store.close()


async def _ended(server: Served, session: str) -> None:
    while server.hub.is_live(session):
        await asyncio.sleep(0.02)


async def _fill(server: Served) -> None:
    """The store's file may not grow past its size now, as on a full disk (SQLite's ``SQLITE_FULL``),
    and its free pages are used up: the next write of a few kilobytes needs a page it cannot have."""
    store = server.hub.store
    assert isinstance(store, SQLiteSessionStore)

    def full(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE filler (x BLOB)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with contextlib.suppress(sqlite3.OperationalError):  # "database or disk is full"
            while True:
                conn.execute("INSERT INTO filler VALUES (randomblob(3000))")

    await store._run(full)


def customer_json(event: Event) -> dict[str, Any] | None:
    """``event`` as a customer's page receives it, or ``None``."""
    view = customer_view(event)
    return None if view is None else frame_json(CustomerEvent(event=view))


def test_the_operator_gets_every_event_whole_and_a_customer_none_of_its_internals() -> None:
    events = [
        ToolStarted(agent="Clerk", tool="look_up", call_id="c1", arguments=f'{{"order": "{ARGUMENT}"}}'),
        ToolFinished(agent="Clerk", tool="look_up", call_id="c1", result=RESULT),
        HandoffLine(source="Front", target="Clerk", tool="transfer_to_clerk"),
        HandoffLine(
            source="Front", target="Nobody", tool="transfer_to_nobody", outcome="refused", reason="x"
        ),
        Notice(text="⚠ the session could not be saved", detail="session store /srv/s.db cannot grow"),
    ]
    assert [customer_json(e) for e in events] == [
        {"type": "tool_started", "agent": "Clerk", "label": "", "text": "Clerk is working on your request…"},
        None,
        {
            "type": "handoff",
            "source": "Front",
            "target": "Clerk",
            "source_label": "",
            "target_label": "",
            "outcome": "handoff",
        },
        None,
        {"type": "notice", "text": "⚠ the session could not be saved", "recap": False},
    ]
    whole = json.dumps([event_json(e) for e in events])
    for internal in (ARGUMENT, RESULT, "transfer_to_clerk", "/srv/s.db", '"reason": "x"'):
        assert internal in whole
    reply = Reply(agent="Clerk", text="Done.")
    assert (
        customer_json(reply)
        == event_json(reply)
        == {"type": "reply", "agent": "Clerk", "text": "Done.", "label": ""}
    )
