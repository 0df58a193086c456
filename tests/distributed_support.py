"""Real processes for the distributed tests: the library's launcher, with test-sized timeouts; and an
agent that holds every turn it is given, for a test to answer later (or never)."""

from __future__ import annotations

import asyncio
import socket

from autogen_core import MessageContext, RoutedAgent, TypeSubscription, message_handler

from handoffs_runtime.distributed import (
    Backoff,
    ChildProcess,
    WorkerRuntime,
    launch_host,
    launch_worker,
    parse_shard_option,
)
from handoffs_runtime.messages import UserTask

TIMEOUT = 30.0
"""Upper bound on waiting for one reply; a healthy run needs a fraction of it."""
FAST = Backoff(initial=0.01, maximum=0.05)
"""Reconnect almost at once: the tests stop and restart hosts on purpose."""

Process = ChildProcess
ECHO = ("-m", "tests.echo_worker", "worker")
"""A worker whose agents answer with their shard and process id (see tests/echo_worker.py)."""


async def start_host(address: str = "127.0.0.1:0") -> tuple[ChildProcess, str]:
    return await launch_host(address)


async def start_worker(
    address: str, agents: str, *, shard: str | None = None, echo: bool = False, latency: float = 0.0
) -> ChildProcess:
    parsed = parse_shard_option(shard)
    if not echo:
        return await launch_worker(address, agents=agents.split(","), shard=parsed)
    options = ["--latency", str(latency)] if latency else []
    return await launch_worker(address, agents=agents.split(","), shard=parsed, command=ECHO, options=options)


async def deploy(processes: list[ChildProcess], *workers: str) -> str:
    """A host and one worker per entry of ``workers`` (its agent names, comma-separated), each added to
    ``processes``; returns the host's address."""
    host, address = await start_host()
    processes.append(host)
    for agents in workers:
        processes.append(await start_worker(address, agents))
    return address


def free_port() -> int:
    """A port the system says is free now, for a host that must come back on the same address."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HeldAgent(RoutedAgent):
    """Receives every turn and holds it in a queue; the test reads it and answers later (or never)."""

    def __init__(self, received: asyncio.Queue[UserTask]) -> None:
        super().__init__("holds each turn")
        self._received = received

    @message_handler
    async def on_task(self, message: UserTask, ctx: MessageContext) -> None:
        await self._received.put(message)


async def held(runtime: WorkerRuntime, agent_type: str) -> asyncio.Queue[UserTask]:
    """A ``HeldAgent`` registered on ``runtime`` as ``agent_type``, subscribed to that topic type;
    returns the queue of the turns it receives."""
    received: asyncio.Queue[UserTask] = asyncio.Queue()
    await HeldAgent.register(runtime, agent_type, lambda: HeldAgent(received))
    await runtime.add_subscription(TypeSubscription(agent_type, agent_type))
    return received
