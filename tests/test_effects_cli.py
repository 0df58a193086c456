"""``handoffs sessions show`` and the export list each effect with its key, time and outcome."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from handoffs_runtime.cli import main as cli
from handoffs_runtime.sessions.effects import EffectKey
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore

DONE = EffectKey("s1", 1, "execute_order", '{"price":10,"product":"anvil"}')
UNKNOWN = EffectKey("s1", 3, "execute_refund", '{"item_id":"item_1"}')


async def _with_effects(path: Path) -> None:
    store = await asyncio.to_thread(SQLiteSessionStore, path)
    try:
        await store.open_session("s1", agent="TriageAgent", team="acme")
        await store.record_intent(DONE)
        await store.record_outcome(DONE, "done", "Success")
        await store.record_intent(UNKNOWN)  # its process died inside the tool
    finally:
        await store.close()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(list(args)) == 0
    return capsys.readouterr().out


async def test_show_and_export_list_each_effect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite3"
    await _with_effects(path)
    shown = await asyncio.to_thread(_run, capsys, "sessions", "show", "s1", "--store", str(path))
    assert f"effect {DONE.id} turn 1 execute_order" in shown and "done: Success" in shown
    assert f"effect {UNKNOWN.id} turn 3 execute_refund" in shown and "outcome unknown" in shown
    exported = await asyncio.to_thread(
        _run, capsys, "sessions", "export", "s1", "--format", "json", "--store", str(path)
    )
    effects = json.loads(exported)["effects"]
    assert [(e["key"], e["status"], e["result"]) for e in effects] == [
        (DONE.id, "done", "Success"),
        (UNKNOWN.id, "pending", ""),
    ]
    assert effects[0]["created_at"] and effects[0]["settled_at"] and effects[1]["settled_at"] is None
    markdown = await asyncio.to_thread(_run, capsys, "sessions", "export", "s1", "--store", str(path))
    assert "## Effects" in markdown and DONE.id in markdown and UNKNOWN.id in markdown
