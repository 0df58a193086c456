"""Chaos on Temporal with real processes: 30 sessions x 5 turns in flight while one part is killed with
``kill -9`` and restarted, several times: the worker of the agent steps, the workflow worker, the Temporal
server itself (on the same database). Read from the store afterwards: nothing acknowledged is lost,
nothing is stored twice, every session's order is kept; and from the effect ledger and the vouchers file:
every irreversible effect happened at most once, and once unless the kill fell between recording its
intent and making it (the voucher is sent in the step that then asks for the
order's confirmation, so every such step runs at least twice, and its order once confirmed)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the temporal extra is not installed: pip install -e '.[temporal]'")

from handoffs_runtime.durable.temporal import Answered, Cluster, TemporalSessions, connect
from handoffs_runtime.sessions.effects import ledger_of
from handoffs_runtime.sessions.open import open_store
from handoffs_runtime.teams.acme import ITEM_ID
from tests.temporal_effect_team import ASK, CONFIRM, EFFECTS_FILE, ORDERED
from tests.temporal_support import DevServer, dev_server, start_worker

SESSIONS = 30
TURNS = ["I want a refund for my shoes", "yes", "buy an anvil for 30 dollars", "yes", "y"]
"""Five messages: a handoff, the refund, two handoffs, the voucher sent and the order asked to confirm,
the confirmation (an answer to a question in the middle of the order's step)."""
KILLS = 3
TEAM = ("--team", "tests.temporal_effect_team:team")
REFUNDED = f"Done: look up item → {ITEM_ID}; execute refund → "
EFFECTS = ["execute_refund", "place_order", "send_voucher"]
"""The irreversible calls of each session, each once: the refund, and the two of the order's step."""


UNKNOWN = "Sorry, execute refund did not work: "


def refunded(line: str) -> bool:
    """The refund's answer: its result; from a step tried again after it ran, the ledger's word; or, from
    one tried again after a kill between recording the intent and refunding, that it may or may not have
    happened (the ledger then holds it pending)."""
    done = line.removeprefix("ACME repairs › ")
    if done.startswith(UNKNOWN):
        return "may or may not have happened" in done and "Tell" not in done
    return done.startswith(REFUNDED) and (done == f"{REFUNDED}success." or "already ran" in done)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevServer]:
    yield from dev_server(tmp_path)


@pytest.mark.parametrize("victim", ["agent worker", "workflow worker", "server"])
async def test_killing_a_part_mid_load_loses_nothing_and_repeats_nothing(
    server: DevServer, tmp_path: Path, victim: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_path = tmp_path / "sessions.sqlite3"
    happened = tmp_path / "effects.txt"
    monkeypatch.setenv(EFFECTS_FILE, str(happened))  # the workers' environment
    workflows = start_worker(server.address, store_path, "--workflows", "--agents", "", *TEAM)
    agents = start_worker(server.address, store_path, *TEAM)
    killed = 0
    acknowledged = 0  # answers the people got so far: each kill waits for its share of the load
    done = threading.Event()
    total = SESSIONS * len(TURNS)

    def chaos() -> None:
        nonlocal agents, workflows, killed
        for k in range(1, KILLS + 1):
            while acknowledged < total * k // (KILLS + 2):  # kills at 1/5, 2/5, 3/5 of the load
                if done.wait(0.05):
                    return
            killed += 1  # each kill is kill -9, mid-load
            if victim == "agent worker":
                agents.kill()
                agents = start_worker(server.address, store_path, *TEAM)
            elif victim == "workflow worker":
                workflows.kill()
                workflows = start_worker(server.address, store_path, "--workflows", "--agents", "", *TEAM)
            else:
                server.kill()
                server.start()

    killer = threading.Thread(target=chaos)
    sessions = TemporalSessions(await connect(Cluster(server.address)))

    async def converse(n: int) -> list[Answered]:
        nonlocal acknowledged
        answers = []
        for i, text in enumerate(TURNS):
            answers.append(await sessions.say(f"chaos{n}", text, message_id=f"chaos{n}-{i}"))
            acknowledged += 1
        return answers

    try:
        killer.start()
        started = time.monotonic()
        answers = await asyncio.wait_for(asyncio.gather(*(converse(n) for n in range(SESSIONS))), 150)
        print(
            f"{SESSIONS} sessions x {len(TURNS)} turns in {time.monotonic() - started:.1f} s, {killed} kills"
        )
    finally:
        done.set()
        await asyncio.to_thread(killer.join, 60)
        agents.stop()
        workflows.stop()
    assert killed == KILLS
    for turns in answers:  # what each person was shown
        assert [a.question for a in turns][3] == CONFIRM, turns
        assert any(refunded(line) for line in turns[1].lines), turns[1].lines
        assert f"ACME sales › {ASK}" in turns[2].lines and f"ACME sales › {ORDERED}" in turns[4].lines
    sent = [line.split() for line in happened.read_text().splitlines()]
    store = open_store(str(store_path))
    ledger = ledger_of(store)
    assert ledger is not None
    try:
        for n in range(SESSIONS):
            entries = await store.entries(f"chaos{n}")
            said = [e.text for e in entries if e.kind == "user"]
            replies = [e.text for e in entries if e.kind == "reply"]
            questions = [(e.body["prompt"], e.body["answer"]) for e in entries if e.kind == "question"]
            assert said == TURNS[:4], f"chaos{n}: {said}"  # the fifth is the confirmation's answer
            assert questions == [(CONFIRM, "y")]
            answered = [r for r in replies if refunded(r) or r == ORDERED]
            assert len(answered) == 2 and answered[1] == ORDERED, f"chaos{n}: {replies}"
            # Every irreversible effect at most once: each done row of the ledger is one line of the file.
            effects = await ledger.effects(f"chaos{n}")
            [refund] = [e for e in effects if e.key.tool == "execute_refund"]
            assert (UNKNOWN in answered[0]) == (refund.status == "pending"), f"chaos{n}: {replies}"
            assert sorted(e.key.tool for e in effects) == EFFECTS, f"chaos{n}: {effects}"
            mine = sorted((tool, key) for session, tool, key in sent if session == f"chaos{n}")
            assert mine == sorted(
                (e.key.tool, e.key.id)
                for e in effects
                if e.key.tool != "execute_refund" and e.status == "done"
            )
            # A kill between recording an intent and the effect leaves it pending (and absent from the
            # file, above): the retried step does not run it on a guess, since another try could be
            # running it; the model reads that its outcome is unknown.
            assert all(e.status in ("done", "pending") for e in effects), f"chaos{n}: {effects}"
            assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
            state = await store.get_session(f"chaos{n}")
            assert state.active_agent == "SalesAgent"
            assert state.context_seq == state.last_seq
    finally:
        await store.close()
