"""``handoffs serve --engine temporal`` as a process: the web chat and the operator console as a Temporal
client, with the dev server and two workers (the team's agents split between them) as processes. A
customer's refund is carried, then the human agent's question goes through the workflow's pending
question to the operator's console, and the operator's answers come back to the customer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

pytest.importorskip("temporalio", reason="the temporal extra is not installed: pip install -e '.[temporal]'")
pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[web]'")

from handoffs_runtime.sessions.open import open_store
from handoffs_runtime.teams.acme import ITEM_ID
from handoffs_runtime.web.hub import SessionHub
from handoffs_runtime.web.waiting import WAITING_FOR_OPERATOR
from tests.cli_support import run_handoffs
from tests.temporal_support import DevServer, Process, free_port, start_worker
from tests.web_support import Client, Served, ServeProcess, customer, customer_back, operator, waiting_list

REFUNDED = f"Done: look up item → {ITEM_ID}; execute refund → success."


def served_at(process: ServeProcess) -> Served:
    """The server process as the WebSocket helpers reach it (its hub lives over there)."""
    return Served(process.url, cast(SessionHub, None), process.token)


def replies(frames: list[dict[str, Any]]) -> list[str]:
    return [str(f["text"]) for f in frames if f["type"] == "reply"]


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[ServeProcess]:
    """The dev server, a worker of the workflows, triage and the human agent, one of the other two agents,
    and ``handoffs serve --engine temporal``, all on one session store; each stopped by its pid."""
    server = DevServer(tmp_path / "temporal.db", free_port())
    store = str(tmp_path / "sessions.sqlite3")
    workers: list[Process] = []
    serving = ServeProcess("--engine", "temporal", "--address", server.address, "--store", store)
    try:
        await asyncio.to_thread(server.start)
        split = [
            ("--workflows", "--agents", "TriageAgent,HumanAgent"),
            ("--agents", "SalesAgent,IssuesAndRepairsAgent"),
        ]
        for agents in split:
            workers.append(await asyncio.to_thread(start_worker, server.address, Path(store), *agents))
        await serving.start()
        yield serving
    finally:
        await serving.stop()
        for worker in workers:
            await asyncio.to_thread(worker.stop)
        server.kill()


async def test_web_chat_on_temporal_carries_a_refund_and_an_operator_round_trip(
    web: ServeProcess, tmp_path: Path
) -> None:
    page, session = await customer(served_at(web))
    sid = session["session"]
    greeting = await page.until("question")
    assert replies(greeting) and greeting[-1]["person"] == "customer"
    asked = await page.say("I want a refund for my shoes")
    assert [f["type"] for f in asked if f["type"] in ("said", "handoff", "reply")] == [
        "said",
        "handoff",
        "reply",
    ]
    assert replies(await page.say("yes")) == [REFUNDED]

    # The human agent's question waits in the workflow; the operator answers it from the console.
    await page.say("let me talk to a person", until="notice", text=WAITING_FOR_OPERATOR)
    console: Client = await operator(served_at(web))
    try:
        await waiting_list(console, (sid, "escalation"))
        await console.send({"type": "take", "session": sid})
        await console.until("taken", session=sid)
        await console.send({"type": "say", "session": sid, "text": "Hello, this is Ann. How can I help?"})
        answered = await page.until("question")
        assert replies(answered) == ["Hello, this is Ann. How can I help?"]
        # The customer's next words go to the human agent, whose question reaches the same console.
        await page.send({"type": "say", "text": "my shoes squeak"})
        await console.until("question", session=sid, person="operator")
        await console.send({"type": "hand_back", "session": sid, "agent": "TriageAgent"})
        await console.until("released", session=sid)
    finally:
        await console.socket.close()
    back = await page.until("question")
    assert [f for f in back if f["type"] == "handoff"], back
    await page.socket.close()

    store = open_store(str(tmp_path / "sessions.sqlite3"))
    try:
        entries = await store.entries(sid)
        said = [e.text for e in entries if e.kind == "user"]
        state = await store.get_session(sid)
    finally:
        await store.close()
    assert said == ["I want a refund for my shoes", "yes", "let me talk to a person", "my shoes squeak"]
    assert state.active_agent == "IssuesAndRepairsAgent"  # handed back to triage, which routes the squeak


def test_serve_on_an_unreachable_temporal_server_is_one_clear_line_and_status_2(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    store = str(tmp_path / "s.sqlite3")
    result = run_handoffs(
        "serve", "--engine", "temporal", "--address", address, "--port", "0", "--store", store
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(f"handoffs: no Temporal server at {address}")


def test_serve_on_temporal_takes_no_grpc_host() -> None:
    result = run_handoffs(
        "serve", "--engine", "temporal", "--address", "127.0.0.1:7233", "--host", "127.0.0.1:1"
    )
    assert result.returncode == 2
    assert "with --engine temporal give --address only" in result.stderr


async def test_a_restarted_server_puts_the_workflows_pending_question_to_the_operator(
    web: ServeProcess, tmp_path: Path
) -> None:
    page, session = await customer(served_at(web))
    sid = session["session"]
    await page.until("question")
    await page.say("let me talk to a person", until="notice", text=WAITING_FOR_OPERATOR)
    await page.socket.close()
    await web.stop()  # the human agent's question waits in the workflow, not in this server
    await web.start()
    page, _ = await customer_back(served_at(web), session)  # the session is picked up again
    console = await operator(served_at(web))
    try:
        await waiting_list(console, (sid, "escalation"))  # the workflow's question, put to the operators
        await console.send({"type": "take", "session": sid})
        await console.until("taken", session=sid)
        await console.send({"type": "say", "session": sid, "text": "Ann here, after the restart."})
        answered = await page.until("question")
        assert replies(answered) == ["Ann here, after the restart."]
    finally:
        await console.socket.close()
        await page.socket.close()
    store = open_store(str(tmp_path / "sessions.sqlite3"))
    try:
        said = [e.text for e in await store.entries(sid) if e.kind == "user"]
    finally:
        await store.close()
    assert said == ["let me talk to a person"]  # the operator's answer went to the question, not as a message
