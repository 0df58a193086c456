"""Calls between processes (RPC) through a real host on loopback: replies reach their own caller, calls
whose target or host goes away fail instead of hanging, cancelled and oversized calls are handled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from autogen_core import AgentId, MessageContext, RoutedAgent, message_handler

from handoffs_runtime.distributed import Host, RelayChannel, WorkerRuntime
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.messages import PersonAnswer, PersonQuestion

from .distributed_support import FAST, TIMEOUT

TARGET = AgentId("Echo", "k")


class Gate:
    """Holds every question until the test opens it; counts the questions that arrived."""

    def __init__(self, expected: int = 1) -> None:
        self.open = asyncio.Event()
        self.arrived = asyncio.Event()
        self.count = 0
        self._expected = expected

    def note(self) -> None:
        self.count += 1
        if self.count >= self._expected:
            self.arrived.set()


class EchoAgent(RoutedAgent):
    """Answers a question with its own prompt (times ``repeat``), once the gate opens."""

    def __init__(self, gate: Gate, repeat: int = 1) -> None:
        super().__init__("echoes questions")
        self._gate = gate
        self._repeat = repeat

    @message_handler
    async def on_question(self, message: PersonQuestion, ctx: MessageContext) -> PersonAnswer:
        self._gate.note()
        await self._gate.open.wait()
        return PersonAnswer(text=message.prompt * self._repeat)


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    async with Host("127.0.0.1:0") as running:
        yield running


async def runtime(host: Host, **options: float) -> WorkerRuntime:
    started = WorkerRuntime(str(host.address), backoff=FAST, **options)  # type: ignore[arg-type]
    await started.start()
    return started


async def echo_target(host: Host, gate: Gate, *, repeat: int = 1, **options: float) -> WorkerRuntime:
    target = await runtime(host, **options)
    await EchoAgent.register(target, TARGET.type, lambda: EchoAgent(gate, repeat))
    return target


async def stop(*runtimes: WorkerRuntime) -> None:
    for started in runtimes:
        if started.running:
            await started.stop(grace=0.1)


async def test_two_callers_of_one_target_each_get_their_own_reply(host: Host) -> None:
    gate = Gate(expected=2)
    target = await echo_target(host, gate)
    first, second = await runtime(host), await runtime(host)
    try:
        # Both callers number this request 1: the host must not file the two replies under one key.
        calls = [
            asyncio.create_task(caller.send_message(PersonQuestion(prompt=name), TARGET))
            for caller, name in ((first, "first"), (second, "second"))
        ]
        await asyncio.wait_for(gate.arrived.wait(), TIMEOUT)
        gate.open.set()
        answers = await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT)
        assert [a.text for a in answers] == ["first", "second"]
    finally:
        gate.open.set()
        await stop(first, second, target)


async def test_a_call_whose_target_disconnects_fails_with_the_reason(host: Host) -> None:
    gate = Gate()
    target = await echo_target(host, gate)
    caller = await runtime(host)
    try:
        call = asyncio.create_task(caller.send_message(PersonQuestion(prompt="hello?"), TARGET))
        await asyncio.wait_for(gate.arrived.wait(), TIMEOUT)
        connection = target._host_connection
        assert connection is not None
        await connection.close()  # the target's process is gone, as far as the host can tell
        with pytest.raises(DistributedError, match="serving Echo went away before answering"):
            await asyncio.wait_for(call, TIMEOUT)
        # The target reconnects; its late answer to the old request is dropped, not misdelivered.
        await asyncio.wait_for(target.wait_connections(2), TIMEOUT)
        gate.open.set()
        answer = await asyncio.wait_for(caller.send_message(PersonQuestion(prompt="again"), TARGET), TIMEOUT)
        assert answer.text == "again"
    finally:
        gate.open.set()
        await stop(caller, target)


async def test_a_call_in_flight_when_the_host_goes_fails_with_the_reason() -> None:
    host = Host("127.0.0.1:0")
    await host.start()
    gate = Gate()
    target = await echo_target(host, gate)
    caller = await runtime(host)
    try:
        call = asyncio.create_task(caller.send_message(PersonQuestion(prompt="hello?"), TARGET))
        await asyncio.wait_for(gate.arrived.wait(), TIMEOUT)
        await host.stop(grace=0)
        with pytest.raises(DistributedError, match="lost the host"):
            await asyncio.wait_for(call, TIMEOUT)
    finally:
        gate.open.set()
        await stop(caller, target)
        await host.stop()


async def test_asking_a_person_who_never_answers_gives_none_after_the_timeout(host: Host) -> None:
    gate = Gate()
    front = await runtime(host)
    await EchoAgent.register(front, "User", lambda: EchoAgent(gate))
    worker = await runtime(host)
    try:
        relay = RelayChannel(worker, timeout=0.2)
        assert await asyncio.wait_for(relay.ask("k", "Shall I?"), TIMEOUT) is None
        assert worker._pending_requests == {}
    finally:
        gate.open.set()
        await stop(worker, front)


def test_the_relay_timeout_must_be_positive() -> None:
    with pytest.raises(DistributedError, match="positive"):
        RelayChannel(None, timeout=0)  # type: ignore[arg-type]


async def test_a_cancelled_call_forgets_its_request_and_ignores_the_late_reply(host: Host) -> None:
    gate = Gate()
    target = await echo_target(host, gate)
    caller = await runtime(host)
    try:
        call = asyncio.create_task(caller.send_message(PersonQuestion(prompt="slow"), TARGET))
        await asyncio.wait_for(gate.arrived.wait(), TIMEOUT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert caller._pending_requests == {}
        gate.open.set()  # the remote handler was not stopped: its reply arrives late and is dropped
        answer = await asyncio.wait_for(caller.send_message(PersonQuestion(prompt="next"), TARGET), TIMEOUT)
        assert answer.text == "next"
        assert caller.connections == 1
    finally:
        gate.open.set()
        await stop(caller, target)


async def test_a_request_over_the_size_limit_fails_at_once_with_the_reason(host: Host) -> None:
    gate = Gate()
    gate.open.set()
    target = await echo_target(host, gate)
    caller = await runtime(host, max_message_mb=1)
    try:
        big = PersonQuestion(prompt="x" * 2 * 2**20)
        with pytest.raises(DistributedError, match=r"the request is 2\.0 MiB, over the 1\.0 MiB limit"):
            await asyncio.wait_for(caller.send_message(big, TARGET), TIMEOUT)
        assert gate.count == 0
        answer = await asyncio.wait_for(caller.send_message(PersonQuestion(prompt="small"), TARGET), TIMEOUT)
        assert answer.text == "small"
    finally:
        await stop(caller, target)


async def test_a_reply_over_the_size_limit_becomes_an_error_reply(host: Host) -> None:
    gate = Gate()
    gate.open.set()
    target = await echo_target(host, gate, repeat=2**20 + 1, max_message_mb=1)
    caller = await runtime(host)
    try:
        with pytest.raises(DistributedError, match=r"the reply is 2\.0 MiB, over the 1\.0 MiB limit"):
            await asyncio.wait_for(caller.send_message(PersonQuestion(prompt="xx"), TARGET), TIMEOUT)
        # The target's stream survived: a small reply still comes back on the same connection.
        answer = await asyncio.wait_for(caller.send_message(PersonQuestion(prompt=""), TARGET), TIMEOUT)
        assert answer.text == ""
        assert target.connections == 1
    finally:
        await stop(caller, target)
