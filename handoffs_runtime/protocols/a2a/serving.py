"""A team made ready to serve over A2A: its runtime, its sessions in the store, the A2A app in front.

The web server that runs the app (its connection caps and request deadline, the same as the web chat's)
is the caller's: ``handoffs a2a serve`` hands the app to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from autogen_core.models import ChatCompletionClient

from handoffs_runtime.protocols.a2a.bridge import A2ABridge
from handoffs_runtime.protocols.a2a.executor import A2ALimits, TeamExecutor
from handoffs_runtime.protocols.a2a.server import ASGIApp, CardAddress, create_a2a_app
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.register import register_team, start_session
from handoffs_runtime.team.spec import TeamSpec


@dataclass(frozen=True)
class ServedTeam:
    """The app to serve, and where the card says it is (set it once the server listens)."""

    app: ASGIApp
    address: CardAddress


@asynccontextmanager
async def serving_team(
    team: TeamSpec,
    *,
    model: ChatCompletionClient,
    store: SessionStore,
    token: str,
    limits: A2ALimits | None = None,
) -> AsyncIterator[ServedTeam]:
    """Register ``team`` on a runtime of its own, with the A2A bridge as its channel, for the block."""
    bridge = A2ABridge()
    runtime = HandoffsRuntime()
    await register_team(runtime, team, model=model, channel=bridge, store=store, on_session_end=bridge.forget)
    runtime.start()

    async def start(session: str) -> None:
        await start_session(runtime, session)

    executor = TeamExecutor(bridge, start, limits)
    address = CardAddress()
    sweeper = asyncio.create_task(_release_idle(bridge, executor.limits.idle_seconds))
    try:
        yield ServedTeam(create_a2a_app(team, executor, token=token, address=address), address)
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        await runtime.stop()


async def _release_idle(bridge: A2ABridge, seconds: float) -> None:
    """Now and then, end the sessions nobody wrote in for ``seconds`` (a context may never come back)."""
    while True:
        await asyncio.sleep(min(seconds, 60.0))
        await bridge.release_idle(seconds)
