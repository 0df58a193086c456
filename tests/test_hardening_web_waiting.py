"""The operators' waiting list under a flood of customers who leave: bounded in time, size and traffic.

Away customers' messages leave the list after ``Limits.away_seconds`` (or when the oldest are pushed out
by ``MAX_AWAY`` newer ones), and an operator is sent ``LISTED`` entries at most, those who are there first.
"""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime.messages import Question, Said
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.limits import Limits
from handoffs_runtime.web.queue import MemoryQueue
from handoffs_runtime.web.waiting import LISTED, MAX_AWAY, Frames, Reception

from .web_support import escalated, operator, served, waiting_list


async def test_an_away_customers_message_leaves_the_waiting_list_after_a_while(tmp_path: Path) -> None:
    async with served(tmp_path, limits=Limits(away_seconds=1.0), idle_seconds=0.5) as server:
        ann = await operator(server)
        page, sid = await escalated(server)
        await page.until("question")
        await page.say("call me at 555-0100", until="said")
        await page.socket.close()  # the customer leaves; the session ends soon after
        away = await waiting_list(ann, (sid, "escalation"))
        while not away[0]["away"]:
            away = await waiting_list(ann, (sid, "escalation"))
        assert away[0]["last"] == "call me at 555-0100"
        assert await waiting_list(ann) == []  # and then it leaves by itself
        await ann.socket.close()


async def test_a_flood_of_away_customers_keeps_the_list_bounded() -> None:
    sent: Frames = []

    async def tell(session: str, frames: Frames) -> None:
        sent.extend(frames)

    async def announce() -> None:
        pass

    reception = Reception(MemoryQueue(), acme_team(), tell=tell, announce=announce)
    for n in range(MAX_AWAY + 150):
        session = f"{n:032x}"
        await reception.waits(session, Question(prompt="you", person="operator"))
        reception.observe(session, Said(text=f"message {n}", person="customer"))
        await reception.ended(session)
    present = f"{10**6:032x}"
    await reception.waits(present, Question(prompt="you", person="operator"))
    away = [e for e in reception.queue.entries() if e.away]
    assert len(away) == MAX_AWAY
    assert away[0].last_message == "message 150"  # the oldest were pushed out
    listed = reception.listing()
    assert len(listed) == LISTED
    assert listed[0].session == present and not listed[0].away  # who is there comes first
