"""Real processes for the distributed tests: the library's launcher, with test-sized timeouts."""

from __future__ import annotations

import socket

from handoffs_runtime.distributed import ChildProcess, launch_host, launch_worker, parse_shard_option

TIMEOUT = 30.0
"""Upper bound on waiting for one reply; a healthy run needs a fraction of it."""

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
