"""Workers across autogen-ext's gRPC runtime: the orchestrator and its workers in two worker runtimes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from autogen_core import try_get_known_serializers_for_type

from handoffs_runtime import OfflineModel, register_team, start_session
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import MESSAGE_TYPES
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.tools.sandbox.tool import SandboxLimits

grpc_runtime = pytest.importorskip("autogen_ext.runtimes.grpc")


@pytest.fixture
async def host_address() -> AsyncIterator[str]:
    host = grpc_runtime.GrpcWorkerAgentRuntimeHost(address="127.0.0.1:0")
    port = host._server.add_insecure_port("127.0.0.1:0")  # the host does not report the port it bound
    host.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await host.stop()


async def _runtime(address: str) -> grpc_runtime.GrpcWorkerAgentRuntime:
    runtime = grpc_runtime.GrpcWorkerAgentRuntime(host_address=address)
    for message_type in MESSAGE_TYPES:
        runtime.add_message_serializer(try_get_known_serializers_for_type(message_type))
    await runtime.start()
    return runtime


async def test_an_orchestrator_gets_answers_from_a_worker_in_another_runtime(host_address: str) -> None:
    team = orchestrator_team(sandbox=SandboxLimits(timeout=2))
    channel = ScriptedChannel.for_sessions({"g1": ["run this python: print(6*7)", "run this python: 1/0"]})
    ended = asyncio.Event()
    front = await _runtime(host_address)
    back = await _runtime(host_address)
    try:
        await register_team(
            back, team, model=OfflineModel(), channel=channel, only=["Worker"], with_user=False
        )
        await register_team(
            front,
            team,
            model=OfflineModel(),
            channel=channel,
            only=["Orchestrator"],
            on_session_end=lambda _: ended.set(),
        )
        await start_session(front, "g1")
        async with asyncio.timeout(60):  # a guard against a hang, not a measurement
            await ended.wait()
    finally:
        await front.stop()
        await back.stop()
    replies = [r.text for r in channel.replies("g1")]
    assert "<stdout>42\n</stdout>" in replies[0]
    assert "ZeroDivisionError" in replies[1]
