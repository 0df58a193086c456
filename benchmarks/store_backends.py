"""The session store's cost per turn, SQLite against PostgreSQL, with one and two front ends on one database.

Every session runs turns as the ``UserAgent`` records them (the person's message; a model that takes
``--latency``; the reply with its context, a compare-and-set write) while ``--sessions`` sessions run at
once. "Two front ends" are two store objects on one database with the sessions split between them, as two
web servers behind a load balancer. It prints a Markdown table: the store's time per turn (median and 99th
percentile of the time a turn spent in the store) and whole sessions finished per second::

    python benchmarks/store_backends.py                       # 1000 sessions, 50 ms model, 3 turns each
    python benchmarks/store_backends.py --postgres postgresql://user@host/db

Without ``--postgres`` it starts a PostgreSQL server of its own in a temporary folder (as the tests do).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from handoffs_runtime.messages import AgentResponse
from handoffs_runtime.sessions.open import OpenedStore
from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.recording import record_reply, record_user
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore


async def _session(store: OpenedStore, name: str, turns: int, latency: float, costs: list[float]) -> None:
    await store.open_session(name, agent="Agent")
    context: list[LLMMessage] = []
    for n in range(turns):
        said = UserMessage(content=f"{name} message {n}", source="User")
        started = time.perf_counter()
        await record_user(store, name, said, agent="Agent")
        spent = time.perf_counter() - started
        await asyncio.sleep(latency)  # the model thinking
        context = [*context, said, AssistantMessage(content=f"reply {n} " + "x" * 200, source="Agent")]
        started = time.perf_counter()
        await record_reply(store, name, AgentResponse(reply_to_topic_type="Agent", context=context))
        costs.append(spent + time.perf_counter() - started)
    await store.end_session(name)


async def _measure(make: Callable[[], OpenedStore], front_ends: int, args: argparse.Namespace) -> list[str]:
    stores = [await asyncio.to_thread(make) for _ in range(front_ends)]
    costs: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(
        *(
            _session(stores[i % front_ends], f"s{i}", args.turns, args.latency, costs)
            for i in range(args.sessions)
        )
    )
    elapsed = time.perf_counter() - started
    for store in stores:
        await store.close()
    costs.sort()
    p99 = costs[min(len(costs) - 1, int(len(costs) * 0.99))]
    return [
        f"{statistics.median(costs) * 1000:.1f}",
        f"{p99 * 1000:.1f}",
        f"{args.sessions / elapsed:.0f}",
        f"{args.sessions * args.turns / elapsed:.0f}",
    ]


def _table(args: argparse.Namespace, url: str, folder: Path) -> str:
    rows = [
        "| store | front ends | store ms per turn (median) | p99 | sessions/s | turns/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for front_ends in (1, 2):
        path = folder / f"sessions-{front_ends}.sqlite3"
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        makers: dict[str, Callable[[], OpenedStore]] = {
            "SQLite": lambda path=path: SQLiteSessionStore(path),  # type: ignore[misc]
            "PostgreSQL": lambda schema=schema: PostgresSessionStore(url, schema=schema),  # type: ignore[misc]
        }
        for name, make in makers.items():
            cells = asyncio.run(_measure(make, front_ends, args))
            rows.append(f"| {name} | {front_ends} | " + " | ".join(cells) + " |")
            print(rows[-1], file=sys.stderr, flush=True)
    header = (
        f"{args.sessions} concurrent sessions, {args.turns} turns each, model latency "
        f"{args.latency * 1000:.0f} ms"
    )
    return header + "\n\n" + "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: start a server of its own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.postgres:
            print(_table(args, args.postgres, Path(folder)))
            return
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.postgres_support import PostgresServer, bin_dir

        found = bin_dir()
        if found is None:
            raise SystemExit(
                "no PostgreSQL server binaries found: install `postgresql`, or pass --postgres URL"
            )
        server = PostgresServer(found)
        try:
            print(_table(args, server.url, Path(folder)))
        finally:
            server.remove()


if __name__ == "__main__":
    main()
