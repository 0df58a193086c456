"""The cyclic garbage collector stays out of a durable session's way: a finished session leaves no
reference cycle behind (so reference counting frees all of it), and what start-up built is frozen out of
the collector's scans."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Sequence

from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import HandoffsRuntime, register_team, start_session, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.teams.acme import acme_team

from .store_backends import Backend

SESSIONS = 40


def _triage(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> list:  # type: ignore[type-arg]
    return [tool_call("transfer_to_sales_agent")]


def _sales(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
    return "Rocket skates, $500?"


async def test_a_finished_durable_session_leaves_no_reference_cycle(backend: Backend) -> None:
    store = backend.make()
    names = [f"s{i}" for i in range(SESSIONS + 2)]
    channel = ScriptedChannel.for_sessions({name: ["I want to buy skates"] for name in names})
    models = {"TriageAgent": FunctionModel(_triage), "SalesAgent": FunctionModel(_sales)}
    for model in models.values():
        model.record_calls = False
    runtime = HandoffsRuntime()
    await register_team(
        runtime, acme_team(), model=models["TriageAgent"], models=models, channel=channel, store=store
    )
    runtime.start()
    assert gc.get_freeze_count() > 0  # what start-up built is out of the collector's scans
    assert gc.get_threshold()[0] >= 700  # young collections no more often than Python's default
    for name in names[:2]:  # the first sessions build what every later one shares (caches, classes)
        await start_session(runtime, name)
    await runtime.stop_when_idle()  # it stops the runtime: each session below starts it again
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable is kept in gc.garbage to look at
    try:
        for name in names[2:]:
            runtime.start()
            await start_session(runtime, name)
            await runtime.stop_when_idle()
        gc.collect()
        found = Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert [r.text for r in channel.replies("s9")][-1] == "Rocket skates, $500?"
    assert sum(found.values()) < SESSIONS, f"objects left in reference cycles: {found.most_common(10)}"
    await store.close()
