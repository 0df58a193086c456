"""How many concurrent WebSocket sessions one ``handoffs serve`` holds: ``python -m benchmarks.web_load``.

Starts ``handoffs serve``'s application in a process of its own (loopback, a free port, the ACME team on
the offline model with ``--latency`` seconds per model call, streaming on, an in-memory store), then runs
rising numbers of customers at once through the refund path (two turns, five model calls) over real
WebSockets, with one operator console that approves each refund as soon as it waits, and reports per
level: sessions completed, wall time, and the median and 95th percentile of a turn as the customer sees
it. Stops at ``--max-sessions``, at the first level with a failure, or when a level takes longer than
``--level-timeout`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFUND = ("I want a refund for my shoes", "yes")
OPERATOR_TOKEN = "load-test-operator-token"


def serve(latency: float) -> None:
    """The server side: runs until killed, after printing its URL."""
    from handoffs_runtime import SQLiteSessionStore, TeamPolicy
    from handoffs_runtime.models.offline import OfflineModel
    from handoffs_runtime.teams.acme import acme_team
    from handoffs_runtime.web.app import create_app
    from handoffs_runtime.web.hub import SessionHub
    from handoffs_runtime.web.server import running

    from .lifted_limits import lifted
    from .streaming import ChunkedStream

    class StreamingOffline(ChunkedStream, OfflineModel):
        pass

    many = 100_000  # every customer here comes from 127.0.0.1: the per-client limits would refuse them
    limits = lifted(many, server_wide=True)

    async def main() -> None:
        hub = SessionHub(
            acme_team(policy=TeamPolicy(stream=True)),
            StreamingOffline(latency=latency),
            SQLiteSessionStore(":memory:"),
            max_sessions=many,
            limits=limits,
        )
        async with running(create_app(hub, operator_token=OPERATOR_TOKEN), limits=limits) as url:
            print(url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


async def customer(url: str) -> list[float]:
    """One customer through the refund path; returns the time of each turn (send to reply)."""
    from websockets.asyncio.client import connect

    turns = []
    async with connect(url.replace("http://", "ws://") + "/ws") as socket:
        await socket.send(json.dumps({"type": "hello"}))
        while json.loads(await socket.recv())["type"] != "question":
            pass
        for text in REFUND:
            start = time.perf_counter()
            await socket.send(json.dumps({"type": "say", "text": text}))
            while (kind := json.loads(await socket.recv())["type"]) != "question":
                if kind == "error":
                    raise RuntimeError("the server refused a message")
            turns.append(time.perf_counter() - start)
    return turns


async def approver(url: str) -> None:
    """One operator console that takes each approval as it starts to wait and says yes to it.

    A web customer's refund runs only once an operator approves it, so the refund path includes one.
    """
    from websockets.asyncio.client import connect

    async with connect(url.replace("http://", "ws://") + "/ws/operator") as socket:
        await socket.send(json.dumps({"type": "hello", "token": OPERATOR_TOKEN}))
        taking: set[str] = set()
        async for raw in socket:
            message = json.loads(raw)
            if message["type"] == "waiting":
                for waiting in message["sessions"]:
                    if waiting["kind"] == "approval" and waiting["session"] not in taking:
                        taking.add(waiting["session"])
                        await socket.send(json.dumps({"type": "take", "session": waiting["session"]}))
            elif message["type"] == "taken":
                await socket.send(json.dumps({"type": "say", "session": message["session"], "text": "yes"}))
            elif message["type"] == "released":
                taking.discard(message["session"])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def level(url: str, count: int, timeout: float, pid: int) -> dict[str, float]:
    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    results = await asyncio.wait_for(
        asyncio.gather(*(customer(url) for _ in range(count)), return_exceptions=True), timeout
    )
    wall = time.perf_counter() - start
    cpu = cpu_seconds(pid) - cpu
    turns = sorted(t for r in results if isinstance(r, list) for t in r)
    failed = sum(1 for r in results if not isinstance(r, list))
    return {
        "sessions": count,
        "failed": failed,
        "wall_s": wall,
        "turn_p50_ms": statistics.median(turns) * 1000 if turns else 0.0,
        "turn_p95_ms": turns[int(len(turns) * 0.95) - 1] * 1000 if turns else 0.0,
        "server_cpu_ms_per_turn": cpu * 1000 / len(turns) if turns else 0.0,
    }


async def run(args: argparse.Namespace) -> list[dict[str, float]]:
    command = [sys.executable, "-m", "benchmarks.web_load", "--serve", "--latency", str(args.latency)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    rows = []
    operator: asyncio.Task[None] | None = None
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        operator = asyncio.create_task(approver(url))
        print(f"model latency {args.latency}s, streaming on, refund path (2 turns), an operator approves")
        print("| sessions at once | failed | wall s | turn p50 ms | turn p95 ms | server CPU ms/turn |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        count = args.start
        while count <= args.max_sessions:
            try:
                row = await level(url, count, args.level_timeout, server.pid)
            except TimeoutError:
                print(f"| {count} | timed out after {args.level_timeout}s | | | |")
                break
            rows.append(row)
            print(
                f"| {count} | {row['failed']} | {row['wall_s']:.2f} | {row['turn_p50_ms']:.0f} "
                f"| {row['turn_p95_ms']:.0f} | {row['server_cpu_ms_per_turn']:.1f} |",
                flush=True,
            )
            if row["failed"]:
                break
            count *= 2
    finally:
        if operator is not None:
            operator.cancel()
        server.terminate()
        server.wait(timeout=30)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call (default 0.05)")
    parser.add_argument("--start", type=int, default=50, help="sessions in the first level (default 50)")
    parser.add_argument("--max-sessions", type=int, default=800, help="largest level (default 800)")
    parser.add_argument("--level-timeout", type=float, default=60.0, help="seconds a level may take")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
