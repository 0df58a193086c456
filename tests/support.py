"""Helpers for running teams in tests on the real runtime.

``run_sessions`` uses ``HandoffsRuntime`` (what ``handoffs chat`` runs); tests that build a stock
``SingleThreadedAgentRuntime`` themselves keep the library honest on autogen-core's own runtime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autogen_core import SingleThreadedAgentRuntime
from autogen_core.models import ChatCompletionClient

from handoffs_runtime import Channel, HandoffsRuntime, ScriptedModel, TeamSpec, register_team, start_session


async def run_sessions(
    team: TeamSpec,
    channel: Channel,
    *,
    model: ChatCompletionClient | None = None,
    models: Mapping[str, ChatCompletionClient] | None = None,
    sessions: Iterable[str] = ("s1",),
) -> SingleThreadedAgentRuntime:
    """Register ``team``, open ``sessions`` and run until every session has ended."""
    runtime = HandoffsRuntime()
    await register_team(runtime, team, model=model or ScriptedModel([]), channel=channel, models=models)
    runtime.start()
    for session in sessions:
        await start_session(runtime, session)
    await runtime.stop_when_idle()
    return runtime


def texts(channel: object, session: str = "s1") -> list[tuple[str, str]]:
    """(agent, text) of every reply shown in ``session``."""
    return [(r.agent, r.text) for r in channel.replies(session)]  # type: ignore[attr-defined]
