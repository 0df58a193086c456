"""Conformance: ``WorkerRuntime`` behaves as autogen-ext's ``GrpcWorkerAgentRuntime`` where it is meant to
(calls, publishing, starting and stopping), so code written for the stock worker runs on ours. Each case
runs on both, against one real host on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from autogen_core import AgentId, MessageContext, RoutedAgent, TopicId, TypeSubscription, message_handler
from autogen_core._serialization import try_get_known_serializers_for_type
from autogen_ext.runtimes.grpc import GrpcWorkerAgentRuntime

from handoffs_runtime.distributed import Backoff, Host, WorkerRuntime

from .distributed_support import TIMEOUT


@dataclass
class Ask:
    text: str


@dataclass
class Told:
    text: str


class Echo(RoutedAgent):
    """Answers an ``Ask`` with its text upper-cased; keeps every ``Told`` published to it."""

    def __init__(self) -> None:
        super().__init__("echoes")
        self.told: asyncio.Queue[str] = asyncio.Queue()

    @message_handler
    async def on_ask(self, message: Ask, ctx: MessageContext) -> Told:
        return Told(message.text.upper())

    @message_handler
    async def on_told(self, message: Told, ctx: MessageContext) -> None:
        self.told.put_nowait(message.text)


def _stock(address: str) -> Any:
    return GrpcWorkerAgentRuntime(address)


def _ours(address: str) -> Any:
    return WorkerRuntime(address, backoff=Backoff(initial=0.01, maximum=0.05))


RUNTIMES = [pytest.param(_stock, id="autogen-ext"), pytest.param(_ours, id="handoffs-runtime")]


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    async with Host("127.0.0.1:0") as running:
        yield running


async def _started(make: Any, host: Host) -> Any:
    runtime = make(str(host.address))
    for kind in (Ask, Told):
        runtime.add_message_serializer(try_get_known_serializers_for_type(kind))
    await runtime.start()  # the stock worker registers through its connection: start first
    await Echo.register(runtime, "Echo", Echo)
    await runtime.add_subscription(TypeSubscription("news", "Echo"))
    return runtime


@pytest.mark.parametrize("make", RUNTIMES)
async def test_a_call_gets_its_reply(make: Any, host: Host) -> None:
    runtime = await _started(make, host)
    try:
        reply = await asyncio.wait_for(runtime.send_message(Ask("hi"), AgentId("Echo", "k")), TIMEOUT)
        assert reply == Told("HI")
    finally:
        await runtime.stop()


@pytest.mark.parametrize("make", RUNTIMES)
async def test_a_publish_reaches_the_subscribed_agent(make: Any, host: Host) -> None:
    runtime = await _started(make, host)
    try:
        await runtime.publish_message(Told("news"), TopicId("news", "k"))
        echo = await runtime.try_get_underlying_agent_instance(AgentId("Echo", "k"), Echo)
        assert await asyncio.wait_for(echo.told.get(), TIMEOUT) == "news"
    finally:
        await runtime.stop()


@pytest.mark.parametrize("make", RUNTIMES)
async def test_stopping_a_runtime_that_is_not_running_is_a_runtime_error(make: Any, host: Host) -> None:
    with pytest.raises(RuntimeError):
        await make(str(host.address)).stop()


@pytest.mark.parametrize("make", RUNTIMES)
async def test_starting_twice_is_a_value_error(make: Any, host: Host) -> None:
    runtime = await _started(make, host)
    try:
        with pytest.raises(ValueError):
            await runtime.start()
    finally:
        await runtime.stop()
