"""A durable engine's person is shown what its step stored, so what a tool tells the person in the middle
of a step (a tool server that restarted, an action whose outcome is unknown) is stored with the step and
shown, as the console shows it; it used to be dropped."""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime import AgentSpec, TeamSpec, tool_call
from handoffs_runtime.durable.fenced import open_state, record_said
from handoffs_runtime.durable.step import AgentSteps, StepRequest
from handoffs_runtime.messages import Notice
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.tools.context import current_tool_context

TOLD = "⚠ The stock service restarted while looking: the count may be a few minutes old."


async def count_stock(item: str) -> str:
    """How many of an item are in stock."""
    ctx = current_tool_context()
    assert ctx is not None and ctx.channel is not None
    await ctx.channel.show(ctx.session_id, Notice(text=TOLD))
    return f"3 {item}"


async def test_what_a_tool_tells_the_person_in_a_step_is_stored_and_shown(tmp_path: Path) -> None:
    team = TeamSpec(name="shop", entry="Desk", agents=[AgentSpec("Desk", tools=[count_stock])])
    model = ScriptedModel([[tool_call("count_stock", {"item": "skates"})], "We have 3 skates."])
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    steps = await AgentSteps.start(team, store=store, model=model, agents=["Desk"])  # type: ignore[arg-type]
    try:
        opened = await open_state(store, "s1", entry_agent="Desk", team="shop")
        seq = await record_said(store, "s1", "any skates?", agent="Desk", expected_seq=opened.seq)
        outcome = await steps.run(StepRequest("s1", "Desk", seq))
        stored = [(e.kind, e.text) for e in await store.entries("s1", after=seq) if e.kind != "tool"]
    finally:
        await steps.close()
        await store.close()
    assert outcome.kind == "reply"
    assert any(TOLD in line for line in outcome.lines), outcome.lines
    assert outcome.lines[-1].endswith("We have 3 skates."), outcome.lines  # the notice comes first
    assert ("notice", TOLD) in stored
