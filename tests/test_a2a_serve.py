"""``handoffs a2a serve`` driven by the ``a2a-sdk`` client: the refund path with its confirmation, a
restart that resumes the same context's session, the bearer token, the limits."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

from handoffs_runtime.protocols.a2a.executor import session_for
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore

from .a2a_support import a2a_serve, http, said, send, state


async def test_the_refund_path_over_a2a_and_the_same_context_after_a_restart(tmp_path: Path) -> None:
    context = uuid.uuid4().hex
    with a2a_serve(tmp_path) as server:
        asked = await send(server.url, server.token, "I want a refund for my shoes", context_id=context)
        assert state(asked) == "TASK_STATE_INPUT_REQUIRED", said(asked)
        assert "Shall I go ahead? (yes/no)" in said(asked)
        done = await send(server.url, server.token, "yes", context_id=context, task_id=asked.id)
        assert state(done) == "TASK_STATE_COMPLETED", said(done)
        assert "execute refund → success" in said(done)
        assert done.context_id == context
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
    with a2a_serve(tmp_path) as server:
        again = await send(server.url, server.token, "I want a refund for my hat", context_id=context)
        assert state(again) == "TASK_STATE_INPUT_REQUIRED", said(again)
        assert "Shall I go ahead? (yes/no)" in said(again)
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    sessions = await store.list_sessions()
    assert [s.session_id for s in sessions] == [session_for(context)]
    words = [e.text for e in await store.entries(session_for(context)) if e.kind == "user"]
    assert words == ["I want a refund for my shoes", "yes", "I want a refund for my hat"]
    await store.close()


async def test_streaming_reports_the_same_states(tmp_path: Path) -> None:
    with a2a_serve(tmp_path) as server:
        context = uuid.uuid4().hex
        asked = await send(
            server.url, server.token, "I want a refund for my shoes", context_id=context, stream=True
        )
        assert state(asked) == "TASK_STATE_INPUT_REQUIRED", said(asked)


async def test_the_card_is_public_and_every_call_needs_the_token(tmp_path: Path) -> None:
    with a2a_serve(tmp_path) as server:
        async with http(None) as anyone:
            card = (await anyone.get(f"{server.url}/.well-known/agent-card.json")).json()
            assert card["name"] == "ACME Inc. customer service"
            assert {s["id"] for s in card["skills"]} >= {"TriageAgent", "SalesAgent", "IssuesAndRepairsAgent"}
            assert card["supportedInterfaces"][0]["url"] == f"{server.url}/"
            assert "bearer" in card["securitySchemes"]
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}
            refused = await anyone.post(f"{server.url}/", json=body)
            assert refused.status_code == 401
        async with http("not-the-token") as wrong:
            assert (await wrong.post(f"{server.url}/", json=body)).status_code == 401
        async with http(server.token) as client:
            huge = await client.post(f"{server.url}/", content=b"x" * 70_000)
            assert huge.status_code == 413


async def test_a_message_over_the_limit_is_rejected_in_words(tmp_path: Path) -> None:
    with a2a_serve(tmp_path) as server:
        task = await send(server.url, server.token, "refund " * 700, context_id=uuid.uuid4().hex)
        assert state(task) == "TASK_STATE_REJECTED"
        assert "too long" in said(task)
