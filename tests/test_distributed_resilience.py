"""Reconnection that survives sessions opening and ending meanwhile, and keepalive that notices a host
gone silent without closing its connection (through a real TCP relay on loopback that can freeze)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from autogen_core import AgentId

from handoffs_runtime.distributed import Host, WorkerRuntime
from handoffs_runtime.distributed import host as host_module
from handoffs_runtime.distributed.host_servicer import TeamHostServicer
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.messages import PersonAnswer, PersonQuestion

from .distributed_support import FAST, TIMEOUT, free_port
from .test_distributed_rpc import EchoAgent, Gate


async def test_a_session_ending_while_reconnecting_does_not_kill_the_runtime(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    address = f"127.0.0.1:{free_port()}"
    runtime = WorkerRuntime(address, backoff=FAST)
    gate = Gate()
    gate.open.set()
    async with Host(address):
        await runtime.start()
        for name in ("Echo", "User.session-a", "User.session-b"):
            await EchoAgent.register(runtime, name, lambda: EchoAgent(gate))

    class RetiringServicer(TeamHostServicer):
        """While the runtime re-registers its types, a session of it ends (retiring its type)."""

        async def RegisterAgent(self, request: Any, context: Any) -> Any:
            if runtime._agent_factories.get("User.session-a") is not None:
                await runtime.retire_agent_type("User.session-a")
            return await super().RegisterAgent(request, context)

    monkeypatch.setattr(host_module, "TeamHostServicer", RetiringServicer)
    try:
        async with Host(address):
            await asyncio.wait_for(runtime.wait_connections(2), TIMEOUT)
            assert runtime.connected
            assert "User.session-a" not in runtime._agent_factories
            assert "unexpected error" not in caplog.text  # no retry needed: the types were iterated safely
            answer = await asyncio.wait_for(
                runtime.send_message(PersonQuestion(prompt="still here"), AgentId("Echo", "k")), TIMEOUT
            )
            assert answer == PersonAnswer(text="still here")
            await runtime.stop()
    finally:
        if runtime.running:
            await runtime.stop()


class FreezableRelay:
    """A TCP relay to the host; ``freeze`` makes the open connections go silent without closing them,
    like a host whose machine lost power. New connections are relayed as usual."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._frozen: list[asyncio.Event] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    def freeze(self) -> None:
        for frozen in self._frozen:
            frozen.set()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        self._writers += [writer, upstream_writer]
        frozen = asyncio.Event()
        self._frozen.append(frozen)
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink, frozen))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, frozen: asyncio.Event) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                if frozen.is_set():
                    continue  # swallowed: the other side hears nothing, and no FIN either
                sink.write(data)
                await sink.drain()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for writer in self._writers:
            writer.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def test_a_host_gone_silent_is_noticed_by_keepalive_and_left() -> None:
    async with Host("127.0.0.1:0") as host:
        relay = FreezableRelay(host.address.port)
        address = await relay.start()
        runtime = WorkerRuntime(address, backoff=FAST, keepalive=1.0)
        try:
            await runtime.start()
            relay.freeze()
            # Only a keepalive ping that goes unanswered can end this connection: nothing is closed.
            await asyncio.wait_for(runtime.wait_connections(2), TIMEOUT)
            assert runtime.connected
        finally:
            if runtime.running:
                await runtime.stop()
            await relay.close()


def test_a_keepalive_below_the_hosts_minimum_is_refused() -> None:
    with pytest.raises(DistributedError, match="at least 1s"):
        WorkerRuntime("127.0.0.1:1", keepalive=0.1)
