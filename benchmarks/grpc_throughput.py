"""Sessions per second of the ACME refund path on the gRPC runtime, with 1, 2 and 4 worker processes.

Each worker process serves the whole team for its shard of the sessions (``--shard i/N``); one host
process routes; this process is the front end of every session. The model is the built-in offline one,
which answers at once, so the figure is the runtime's own cost: gRPC, serialization, routing, placement.

    python benchmarks/grpc_throughput.py [--sessions 200]
    python benchmarks/grpc_throughput.py --security [--rounds 3]   # plain vs TLS + tokens, interleaved

``measure(workers, sessions, credentials=None)`` is importable and returns a dict of figures; with a
credentials directory every process speaks TLS and authenticates with its role's token.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed import (
    ChildProcess,
    FrontEnd,
    create_credentials,
    launch_host,
    launch_worker,
)
from handoffs_runtime.teams.acme import acme_team

SCRIPT = ("I want a refund for my shoes", "yes")
"""Two turns and one handoff per session; the session ends when the script runs out."""


async def measure_async(workers: int, sessions: int, credentials: Path | None = None) -> dict[str, Any]:
    """Run ``sessions`` refund conversations at once across ``workers`` worker processes."""
    if workers < 1 or sessions < 1:
        raise ValueError("workers and sessions must be at least 1")
    children: list[ChildProcess] = []
    secured = [] if credentials is None else ["--credentials", str(credentials)]
    try:
        host, address = await launch_host("127.0.0.1:0", *secured)
        children.append(host)
        shards = [None] if workers == 1 else [(i, workers) for i in range(workers)]
        children += await asyncio.gather(
            *(launch_worker(address, shard=shard, options=secured) for shard in shards)
        )
        ids = [f"bench-{n}" for n in range(sessions)]
        channel = ScriptedChannel.for_sessions({s: SCRIPT for s in ids})
        front_end = FrontEnd(acme_team(), address, channel, pinned=False, credentials=credentials)
        async with front_end as front:
            started = time.perf_counter()
            await asyncio.gather(*(front.open(s) for s in ids))
            await front.wait()
            elapsed = time.perf_counter() - started
        done = sum(1 for s in ids if len(channel.replies(s)) == len(SCRIPT))
        if done != sessions:
            raise RuntimeError(f"only {done} of {sessions} sessions got every reply")
        return {
            "credentials": credentials is not None,
            "workers": workers,
            "sessions": sessions,
            "seconds": round(elapsed, 3),
            "sessions_per_second": round(sessions / elapsed, 1),
            "turns_per_second": round(sessions * len(SCRIPT) / elapsed, 1),
            "cpus": os.cpu_count(),
        }
    finally:
        await asyncio.gather(*(c.stop() for c in children), return_exceptions=True)


def measure(workers: int, sessions: int, credentials: Path | None = None) -> dict[str, Any]:
    """``measure_async`` for callers without an event loop."""
    return asyncio.run(measure_async(workers, sessions, credentials))


def compare_security(workers: list[int], sessions: int, rounds: int) -> list[dict[str, Any]]:
    """Sessions per second without and with credentials (TLS + tokens), rounds interleaved (and in
    alternating order) so that a busy moment of the machine hits both; the median of each."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        credentials = Path(folder) / "credentials"
        create_credentials(credentials)
        for count in workers:
            plain, secure = [], []
            for round_ in range(rounds):  # ABBA: neither always runs first
                for secured in (False, True) if round_ % 2 == 0 else (True, False):
                    figures = measure(count, sessions, credentials if secured else None)
                    (secure if secured else plain).append(figures["sessions_per_second"])
            rows.append(
                {
                    "workers": count,
                    "plain": round(statistics.median(plain), 1),
                    "secure": round(statistics.median(secure), 1),
                    "cost": round(1 - statistics.median(secure) / statistics.median(plain), 3),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts (default: 1,2,4)")
    parser.add_argument(
        "--security",
        action="store_true",
        help="compare plain with TLS + tokens (--credentials), side by side",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="with --security: interleaved rounds (default 3)"
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    if args.security:
        print(
            f"gRPC runtime, ACME refund path, {args.sessions} concurrent sessions, median of {args.rounds} "
            f"interleaved rounds, {os.cpu_count()} CPUs\n"
        )
        print("| worker processes | plain sessions/s | TLS + tokens sessions/s | cost |")
        print("| ---: | ---: | ---: | ---: |")
        for row in compare_security(counts, args.sessions, args.rounds):
            cells = (row["workers"], row["plain"], row["secure"], f"{row['cost']:.1%}")
            print("| " + " | ".join(str(c) for c in cells) + " |")
        return
    rows = [measure(n, args.sessions) for n in counts]
    print(
        f"gRPC runtime, ACME refund path (2 turns, 1 handoff), {args.sessions} concurrent sessions, "
        f"offline model, {rows[0]['cpus']} CPUs\n"
    )
    print("| worker processes | seconds | sessions/s | turns/s |")
    print("| ---: | ---: | ---: | ---: |")
    for row in rows:
        cells = (row["workers"], row["seconds"], row["sessions_per_second"], row["turns_per_second"])
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
