"""The three engines side by side on the ACME refund path: in-process, the gRPC host, Temporal.

    python -m benchmarks.engines [--sessions 20]

Every session says the two lines of the refund path (a handoff, then the refund) to the built-in
offline model, which answers at once, so the figures are each engine's own cost. Per turn: the latency
with sessions one after another, and the CPU of every process of the engine (this one and its
children, read from ``/proc``); then sessions per second with all of them at once. Temporal runs on the
pinned dev server (SQLite, WAL) with one worker process serving the workflows and every agent. Last,
Temporal's workflow history per turn over one 50-message session (the conversation passed by reference).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from handoffs_runtime import HandoffsRuntime, register_team, start_session
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed import ChildProcess, FrontEnd, launch_host, launch_worker
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.sessions.open import open_store
from handoffs_runtime.teams.acme import acme_team

if TYPE_CHECKING:
    from temporalio.client import Client

SCRIPT = ("I want a refund for my shoes", "yes")
HISTORY_TURNS = 50
Run = Callable[[list[str]], Awaitable[None]]
Engine = Callable[[list[str]], AbstractAsyncContextManager[Run]]
"""An engine started for the sessions it will be given (every id, known up front)."""
"""Carry every session of the list through the script; the engine decides how many at once."""


def cpu_seconds(pid: int | None = None) -> float:
    """User and system CPU of ``pid`` (this process) and its living descendants, from ``/proc``."""
    pid = pid or os.getpid()
    ticks = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / ticks
        children = set()
        for task in Path(f"/proc/{pid}/task").iterdir():
            children.update((task / "children").read_text().split())
    except (OSError, ValueError, IndexError):
        return 0.0
    return total + sum(cpu_seconds(int(child)) for child in children)


@asynccontextmanager
async def in_process(every: list[str]) -> AsyncIterator[Run]:
    runtime = HandoffsRuntime()
    channel = ScriptedChannel.for_sessions({s: SCRIPT for s in every})
    await register_team(runtime, acme_team(), model=OfflineModel(), channel=channel)

    async def run(ids: list[str]) -> None:
        runtime.start()
        for session in ids:
            await start_session(runtime, session)
        await runtime.stop_when_idle()

    yield run


@asynccontextmanager
async def grpc_host(every: list[str]) -> AsyncIterator[Run]:
    children: list[ChildProcess] = []
    try:
        host, address = await launch_host("127.0.0.1:0")
        children.append(host)
        children.append(await launch_worker(address))
        channel = ScriptedChannel.for_sessions({s: SCRIPT for s in every})
        async with FrontEnd(acme_team(), address, channel, pinned=False) as front:

            async def run(ids: list[str]) -> None:
                await asyncio.gather(*(front.open(s) for s in ids))
                await front.wait()

            yield run
    finally:
        await asyncio.gather(*(c.stop() for c in children), return_exceptions=True)


@asynccontextmanager
async def temporal_cluster() -> AsyncIterator[tuple[Client, str]]:
    """The pinned dev server and one worker process (the workflows and every agent); a client of it,
    and the session store the worker writes."""
    import subprocess

    from handoffs_runtime.durable.temporal import Cluster, connect
    from handoffs_runtime.durable.temporal.devserver import dev_server_command, free_port, wait_ready

    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        server = subprocess.Popen(
            dev_server_command(db=Path(tmp) / "t.db", port=port),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        address = f"127.0.0.1:{port}"
        worker = None
        try:
            wait_ready(server, port)
            store = str(Path(tmp) / "s.sqlite3")
            worker = await ChildProcess.start(
                "-m",
                "handoffs_runtime",
                "temporal",
                "worker",
                "--workflows",
                "--address",
                address,
                "--store",
                store,
            )
            await worker.expect("temporal worker ready", timeout=60)
            yield await connect(Cluster(address, connect_timeout=30)), store
        finally:
            if worker is not None:
                await worker.stop()
            server.kill()
            server.wait(timeout=10)


@asynccontextmanager
async def temporal(every: list[str]) -> AsyncIterator[Run]:
    from handoffs_runtime.durable.temporal import TemporalSessions

    async with temporal_cluster() as (client, _):
        sessions = TemporalSessions(client)

        async def one(session: str) -> None:
            for text in SCRIPT:
                await sessions.say(session, text)

        async def run(ids: list[str]) -> None:
            await asyncio.gather(*(one(s) for s in ids))

        yield run


async def history_per_turn(turns: int = HISTORY_TURNS) -> tuple[float, int]:
    """Workflow history bytes per turn over a session of ``turns`` messages (every run of it, across
    continue-as-new), and the bytes of its conversation at the end: what each step's input and result
    would carry if the conversation rode in them."""
    from temporalio.api.history.v1 import History

    from handoffs_runtime.durable.temporal import TemporalSessions

    async with temporal_cluster() as (client, store_url):
        sessions = TemporalSessions(client)
        for n in range(turns):
            await sessions.say("history", f"I want a refund for my shoes, number {n}" if n % 2 == 0 else "no")
        total = 0
        async for run in client.list_workflows("WorkflowId = 'history'"):
            history = await client.get_workflow_handle("history", run_id=run.run_id).fetch_history()
            total += History(events=history.events).ByteSize()
        store = open_store(store_url)
        try:
            context = (await store.get_session("history")).context
        finally:
            await store.close()
    return total / turns, sum(len(m.model_dump_json()) for m in context)


ENGINES: dict[str, Engine] = {"in-process": in_process, "gRPC host": grpc_host, "Temporal": temporal}


async def measure(name: str, sessions: int) -> dict[str, float]:
    every = ["warm-up", *(f"seq-{n}" for n in range(sessions)), *(f"par-{n}" for n in range(sessions))]
    async with ENGINES[name](every) as run:
        await run(["warm-up"])
        cpu, started = cpu_seconds(), time.perf_counter()
        for n in range(sessions):  # one after another: the latency of a turn
            await run([f"seq-{n}"])
        turns = sessions * len(SCRIPT)
        latency = (time.perf_counter() - started) / turns
        cpu_per_turn = (cpu_seconds() - cpu) / turns
        started = time.perf_counter()
        await run([f"par-{n}" for n in range(sessions)])
        rate = sessions / (time.perf_counter() - started)
    return {"latency_ms": latency * 1000, "cpu_ms": cpu_per_turn * 1000, "sessions_per_s": rate}


async def main_async(sessions: int, engines: list[str]) -> None:
    print(f"ACME refund path, offline model, {sessions} sessions; per turn: latency, CPU of all processes")
    print(f"{'engine':<12} {'latency ms':>11} {'CPU ms':>8} {'sessions/s':>11}")
    for name in engines:
        figures = await measure(name, sessions)
        print(
            f"{name:<12} {figures['latency_ms']:>11.1f} {figures['cpu_ms']:>8.1f} "
            f"{figures['sessions_per_s']:>11.1f}",
            flush=True,
        )
    if "Temporal" in engines:
        per_turn, conversation = await history_per_turn()
        print(
            f"Temporal history over a {HISTORY_TURNS}-message session: {per_turn / 1024:.1f} KiB per turn "
            f"(the conversation, passed by reference, is {conversation / 1024:.1f} KiB at the end)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help="comma-separated, of: " + ", ".join(ENGINES)
    )
    args = parser.parse_args()
    asyncio.run(main_async(args.sessions, [e.strip() for e in args.engines.split(",")]))


if __name__ == "__main__":
    main()
