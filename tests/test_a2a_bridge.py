"""The A2A bridge in one process: a turn's end read as a task state, and idle sessions ended and resumed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.protocols.a2a.bridge import A2ABridge
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.team.register import register_team, start_session
from handoffs_runtime.teams.acme import acme_team

WAIT = 30.0


async def test_an_idle_session_ends_and_its_context_resumes_it(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    bridge = A2ABridge()
    runtime = HandoffsRuntime()
    await register_team(
        runtime, acme_team(), model=OfflineModel(), channel=bridge, store=store, on_session_end=bridge.forget
    )
    runtime.start()
    try:
        bridge.line("a2a-1")
        await start_session(runtime, "a2a-1")
        asked = await bridge.turn("a2a-1", "I want a refund for my shoes", timeout=WAIT)
        assert (asked.state, asked.agent) == ("input-required", "IssuesAndRepairsAgent")
        assert asked.text.endswith("Shall I go ahead? (yes/no)")
        assert await bridge.release_idle(3600) == []  # used just now
        assert await bridge.release_idle(0) == ["a2a-1"]
        async with asyncio.timeout(WAIT):
            while bridge.live("a2a-1"):
                await asyncio.sleep(0.01)
        assert (await store.get_session("a2a-1")).status == "ended"
        bridge.line("a2a-1")
        await start_session(runtime, "a2a-1")
        done = await bridge.turn("a2a-1", "yes", timeout=WAIT)
        assert done.state == "completed"
        assert "execute refund → success" in done.text
    finally:
        await runtime.stop()
        await store.close()
