"""handoffs-runtime on autogen-core's own ``SingleThreadedAgentRuntime``, to show what our runtime buys."""

from __future__ import annotations

from autogen_core import SingleThreadedAgentRuntime

from . import ours


async def create(latency: float) -> ours.Ours:
    return await ours.create(latency, SingleThreadedAgentRuntime)
