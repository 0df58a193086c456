"""The commands of sessions on Temporal, as processes: ``handoffs temporal dev``, two workers with the
team's agents split between them, and ``handoffs chat --engine temporal`` on the offline model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the temporal extra is not installed: pip install -e '.[temporal]'")

from handoffs_runtime.teams.acme import ITEM_ID
from tests.cli_support import run_handoffs
from tests.temporal_support import Process, free_port, start_worker


def test_dev_server_two_workers_and_chat_carry_the_refund_and_a_confirmed_order(tmp_path: Path) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    store = tmp_path / "sessions.sqlite3"
    server = Process("temporal", "dev", "--db", str(tmp_path / "temporal.db"), "--port", str(port))
    workers: list[Process] = []
    try:
        server.wait_for(f"temporal dev server on 127.0.0.1:{port}")
        workers.append(start_worker(address, store, "--workflows", "--agents", "TriageAgent,HumanAgent"))
        workers.append(start_worker(address, store, "--agents", "SalesAgent,IssuesAndRepairsAgent"))
        chat = run_handoffs(
            "chat",
            "--engine",
            "temporal",
            "--address",
            address,
            "--session",
            "refund1",
            stdin="I want a refund for my shoes\nyes\nbuy an anvil for 30 dollars\nyes\ny\nexit\n",
            timeout=90,
        )
    finally:
        for process in [*workers, server]:
            process.stop()
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout.splitlines()
    assert "you › I want a refund for my shoes" in out
    assert "↪ ACME repairs has joined" in out
    assert "ACME repairs › I can execute refund for “shoes”. Shall I go ahead? (yes/no)" in out
    assert f"ACME repairs › Done: look up item → {ITEM_ID}; execute refund → success." in out
    # The order's confirmation is asked mid-turn: the step ends, the workflow waits for the answer.
    assert "Order summary: anvil for $30. Confirm order? y/n › y" in out
    assert "ACME sales › Done: execute order → Success." in out
    assert out[-1] == "session refund1 ended"
    with sqlite3.connect(store) as db:  # what was said is in the store, in order, once
        said = [
            row[0]
            for row in db.execute(
                "SELECT json_extract(body, '$.content') FROM messages WHERE session_id = 'refund1' "
                "AND kind = 'user' ORDER BY seq"
            )
        ]
        (active,) = db.execute("SELECT active_agent FROM sessions WHERE id = 'refund1'").fetchone()
    assert said == ["I want a refund for my shoes", "yes", "buy an anvil for 30 dollars", "yes"]
    assert active == "SalesAgent"


def test_chat_on_an_unreachable_server_is_one_clear_line_and_status_2() -> None:
    address = f"127.0.0.1:{free_port()}"
    result = run_handoffs("chat", "--engine", "temporal", "--address", address, stdin="hello\n", timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"handoffs: no Temporal server at {address}")
    assert "handoffs temporal dev" in lines[0]


def test_worker_on_an_unreachable_server_is_one_clear_line_and_status_2(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    store = str(tmp_path / "s.sqlite3")
    result = run_handoffs("temporal", "worker", "--address", address, "--store", store, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert f"no Temporal server at {address}" in result.stderr


def test_chat_with_temporal_needs_an_address() -> None:
    result = run_handoffs("chat", "--engine", "temporal", stdin="hello\n")
    assert result.returncode == 2
    assert "--engine temporal needs --address" in result.stderr
