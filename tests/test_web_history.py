"""The transcript a customer's page gets: the last page first, earlier pages on request, read once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from handoffs_runtime import OfflineModel, SQLiteSessionStore
from handoffs_runtime.sessions.store import StoredEntry
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.frames import frame_json
from handoffs_runtime.web.hub import SessionHub
from handoffs_runtime.web.limits import Limits

from .web_support import TOKEN, Client, Served, customer, customer_back, http_get, served


class CountingStore(SQLiteSessionStore):
    """A real SQLite store that counts the transcript entries it hands out."""

    read = 0

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        got = await super().entries(session_id, after=after)
        self.read += len(got)
        return got


async def conversation(server: Served, turns: int) -> dict[str, Any]:
    """A customer who says ``turns`` things and leaves; returns its session message."""
    page, session = await customer(server)
    await page.until("question")
    for n in range(turns):
        await page.send({"type": "say", "text": f"hello {n}"})
        await page.until("question")
    await page.socket.close()
    return session


async def resumed(server: Served, session: dict[str, Any]) -> tuple[Client, dict[str, Any]]:
    """The customer's page back again; returns it and the history it was sent."""
    page, again = await customer_back(server, session)
    assert again == session
    history = await page.recv()
    assert history["type"] == "history"
    return page, history


async def stored_items(server: Served, session_id: str) -> list[dict[str, Any]]:
    """The whole transcript as the operator's sessions view shows it (read from the store, not cached)."""
    _, _, body = await asyncio.to_thread(http_get, f"{server.url}/api/sessions/{session_id}", TOKEN)
    items: list[dict[str, Any]] = json.loads(body)["items"]
    return items


async def test_a_page_gets_the_last_items_and_earlier_ones_when_it_asks(tmp_path: Path) -> None:
    async with served(tmp_path, limits=Limits(history_page=4)) as server:
        session = await conversation(server, 5)
        everything = await stored_items(server, session["session"])
        assert len(everything) >= 10
        page, history = await resumed(server, session)
        assert history["items"] == everything[-4:] and history["start"] == len(everything) - 4
        shown = history["items"]
        start = history["start"]
        while start > 0:
            await page.send({"type": "earlier", "before": start})
            earlier = (await page.until("earlier"))[-1]
            assert len(earlier["items"]) == min(4, start) and earlier["start"] == max(0, start - 4)
            shown = earlier["items"] + shown
            start = earlier["start"]
        assert shown == everything
        await page.send({"type": "earlier", "before": 0})
        assert (await page.until("earlier"))[-1] == {"type": "earlier", "start": 0, "items": []}
        await page.socket.close()


async def test_reconnecting_reads_only_what_is_new(tmp_path: Path) -> None:
    store = CountingStore(str(tmp_path / "sessions.sqlite3"))
    async with served(tmp_path, store=store) as server:
        session = await conversation(server, 5)
        page, _ = await resumed(server, session)
        await page.socket.close()
        read = store.read
        for _ in range(5):  # a page reloading in a loop
            page, history = await resumed(server, session)
            assert history["items"][0]["text"] == "hello 0"
            await page.socket.close()
        assert store.read == read  # nothing new was written, so nothing was read
        page, _ = await resumed(server, session)
        await page.until("question")
        await page.send({"type": "say", "text": "one more thing"})
        await page.until("question")
        await page.socket.close()
        page, history = await resumed(server, session)
        assert history["items"][-2]["text"] == "one more thing"
        assert 0 < store.read - read <= 4  # what that turn wrote, and no more
        await page.socket.close()


def test_a_customers_page_shows_nothing_of_a_question_put_to_the_operator() -> None:
    """A stored approval shows what would have run: the operator's view keeps it, a customer's never."""
    hub = SessionHub(acme_team(), OfflineModel(), SQLiteSessionStore())
    approval = {"prompt": "Allow run_code(code='ls')? y/n", "answer": "y", "person": "operator"}
    confirmation = {"prompt": "Confirm order? y/n", "answer": "y", "person": "customer"}
    asked_operator = StoredEntry("s1", 1, "Clerk", "question", approval, 0.0)
    asked_customer = StoredEntry("s1", 2, "SalesAgent", "question", confirmation, 0.0)
    assert hub.customer_items(asked_operator) == []
    assert [frame_json(item)["type"] for item in hub.page_items(asked_operator)] == ["question", "said"]
    shown = [frame_json(item) for item in hub.customer_items(asked_customer)]
    assert [(i["type"], i.get("prompt", i.get("text"))) for i in shown] == [
        ("question", "Confirm order? y/n"),
        ("said", "y"),
    ]
