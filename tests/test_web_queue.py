"""The wait for a person in ``handoffs serve``, at the WebSocket level: told, kept, left, and restored."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path

import pytest

from handoffs_runtime import TeamPolicy
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.team.files import load_team_file
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.waiting import NOBODY_AVAILABLE, NOBODY_SIGNED_IN_SECONDS, WAITING_FOR_OPERATOR

from .web_support import escalated, escalation_in_view, operator, served, waiting_list

LEFT = "Please call me back about order A12: ann@example.com, +44 20 7946 0000"


async def test_with_nobody_signed_in_the_customer_hears_so_and_may_leave_a_message(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page, sid = await escalated(server)
        asked = time.monotonic()
        got = await page.until("queue", state="unavailable")
        assert time.monotonic() - asked < 10
        assert [m["text"] for m in got if m["type"] == "notice"] == [NOBODY_AVAILABLE]
        assert [m for m in got if m["type"] == "question" and m["person"] == "customer"]  # they may write
        await page.say(LEFT)  # and write again
        ann = await operator(server)
        [entry] = await waiting_list(ann, (sid, "escalation"))
        assert entry["last"] == LEFT and not entry["away"]
        back = await page.until("queue", state="waiting")  # somebody is there now
        assert [m["text"] for m in back if m["type"] == "notice"] == [WAITING_FOR_OPERATOR]
        await ann.send({"type": "take", "session": sid})
        taken = (await ann.until("taken"))[-1]
        assert [m["text"] for m in taken["history"] if m["type"] == "said"] == [
            "let me talk to a person",
            LEFT,
        ]
        await page.until("queue", state="joined")
        await page.socket.close()
        await ann.socket.close()


async def test_the_customer_goes_back_to_the_assistant(tmp_path: Path) -> None:
    async with escalation_in_view(tmp_path) as (_, ann, page, sid):
        await page.send({"type": "back"})
        got = await page.until("reply")
        assert [m["target"] for m in got if m["type"] == "handoff" and m["source"] == "HumanAgent"] == [
            "TriageAgent"
        ]
        assert got[-1]["agent"] == "TriageAgent"
        assert {"type": "queue", "session": sid, "state": "over"} in got
        await waiting_list(ann)
        await page.send({"type": "back"})
        assert (await page.until("error"))[-1]["message"] == "the conversation is not waiting for a person"
        got = await page.say("I want a refund for my shoes", until="reply")  # their turn stayed open
        assert got[-1]["agent"] == "IssuesAndRepairsAgent"


async def test_an_operator_who_does_not_take_it_in_the_teams_time_is_as_good_as_none(tmp_path: Path) -> None:
    team = acme_team(policy=TeamPolicy(operator_wait=0.5))
    async with escalation_in_view(tmp_path, team=team) as (_, ann, page, sid):
        await page.until("queue", state="unavailable")
        await ann.send({"type": "take", "session": sid})  # a late operator is still welcome
        await ann.until("taken")
        await page.until("queue", state="joined")


async def test_a_left_message_waits_for_an_operator_past_the_page_and_the_server(tmp_path: Path) -> None:
    async with served(tmp_path, idle_seconds=0.2) as server:
        page, sid = await escalated(server)
        await page.until("question")
        await page.say(LEFT, until="said")
        await page.socket.close()  # the session ends with the page: the message stays in the queue
        ann = await operator(server)
        [entry] = await waiting_list(ann, (sid, "escalation"))
        while not entry["away"]:
            [entry] = await waiting_list(ann, (sid, "escalation"))
        assert entry["last"] == LEFT
        await ann.socket.close()
    async with served(tmp_path) as server:  # a new server on the same store
        ann = await operator(server)
        [entry] = await waiting_list(ann, (sid, "escalation"))
        assert entry["away"] and entry["last"] == LEFT and entry["waited"] >= 0
        await ann.send({"type": "take", "session": sid})  # nobody to talk to: read it, then dismiss it
        assert (await ann.until("error"))[-1]["message"] == "that session is not waiting for an operator"
        await ann.send({"type": "dismiss", "session": sid})
        await waiting_list(ann)
        await ann.send({"type": "dismiss", "session": sid})
        assert (await ann.until("error"))[-1]["message"] == "that session has left no message to dismiss"
        await ann.socket.close()


async def test_an_operator_signing_out_leaves_the_customer_told_soon(tmp_path: Path) -> None:
    async with escalation_in_view(tmp_path) as (_, ann, page, _):
        await ann.socket.close()
        signed_out = time.monotonic()
        await page.until("queue", state="unavailable")
        assert time.monotonic() - signed_out < NOBODY_SIGNED_IN_SECONDS + 5
        await asyncio.sleep(0)


def test_a_team_file_sets_how_long_a_customer_waits_for_an_operator(tmp_path: Path) -> None:
    team = """\
        name: desk
        policy: {operator_wait: 120}
        agents:
        - {name: Bot, handoffs: [Person]}
        - {name: Person, kind: human}
        """
    path = tmp_path / "team.yaml"
    path.write_text(textwrap.dedent(team))
    assert load_team_file(path).policy.operator_wait == 120
    assert TeamPolicy().operator_wait == 60
    for bad in (0, -1, float("inf")):
        with pytest.raises(TeamConfigError, match="operator_wait"):
            TeamPolicy(operator_wait=bad)
