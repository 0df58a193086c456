"""The session store's cost per turn, SQLite against PostgreSQL, with one and two front ends on one database.

Every session runs turns as the ``UserAgent`` records them (the person's message; a model that takes
``--latency`` on average, from half to one and a half times it; the reply with its context, a
compare-and-set write) while ``--sessions`` sessions run at once, starting within the first second. "Two
front ends" are two processes, each with its own store object on the one database and half of the
sessions, as two web servers behind a load balancer. It prints a Markdown table: the store's time per turn
(median and 99th percentile of the time a turn spent waiting for the store, queueing included) and whole
sessions finished per second::

    python benchmarks/store_backends.py                       # 1000 sessions, 50 ms model, 3 turns each
    python benchmarks/store_backends.py --postgres postgresql://user@host/db

Without ``--postgres`` it starts a PostgreSQL server of its own in a temporary folder (as the tests do,
but with ``fsync`` on: every commit is on disk, as with the SQLite store's ``synchronous=FULL``).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from handoffs_runtime.messages import AgentResponse
from handoffs_runtime.sessions.open import OpenedStore
from handoffs_runtime.sessions.postgres import PostgresSessionStore
from handoffs_runtime.sessions.recording import record_reply, record_user
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore


async def _session(store: OpenedStore, name: str, turns: int, latency: float, costs: list[float]) -> None:
    await asyncio.sleep(random.random())  # people do not all arrive in the same instant
    await store.open_session(name, agent="Agent")
    context: list[LLMMessage] = []
    for n in range(turns):
        said = UserMessage(content=f"{name} message {n}", source="User")
        started = time.perf_counter()
        await record_user(store, name, said, agent="Agent")
        spent = time.perf_counter() - started
        await asyncio.sleep(latency * random.uniform(0.5, 1.5))  # the model thinking
        context = [*context, said, AssistantMessage(content=f"reply {n} " + "x" * 200, source="Agent")]
        started = time.perf_counter()
        await record_reply(store, name, AgentResponse(reply_to_topic_type="Agent", context=context))
        costs.append(spent + time.perf_counter() - started)
    await store.end_session(name)


def _open(target: str, schema: str) -> OpenedStore:
    if target.startswith("postgresql://"):
        return PostgresSessionStore(target, schema=schema)
    return SQLiteSessionStore(target)


async def _front_end(target: str, schema: str, names: list[str], turns: int, latency: float) -> list[float]:
    """One front end: its own store object, its share of the sessions at once; the turns' store times."""
    store = await asyncio.to_thread(_open, target, schema)
    costs: list[float] = []
    await asyncio.gather(*(_session(store, name, turns, latency, costs) for name in names))
    await store.close()
    return costs


def _run_front_end(target: str, schema: str, names: list[str], turns: int, latency: float) -> list[float]:
    return asyncio.run(_front_end(target, schema, names, turns, latency))


def _measure(target: str, front_ends: int, args: argparse.Namespace) -> list[str]:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    _open(target, schema).close_now()  # the schema, made before the clock starts
    names = [f"s{i}" for i in range(args.sessions)]
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(front_ends, mp_context=spawn) as pool:
        list(pool.map(time.sleep, [0.1] * front_ends))  # the processes are up before the clock starts
        started = time.perf_counter()
        shares = [names[i::front_ends] for i in range(front_ends)]
        runs = [
            pool.submit(_run_front_end, target, schema, share, args.turns, args.latency) for share in shares
        ]
        costs = [cost for run in runs for cost in run.result()]
        elapsed = time.perf_counter() - started
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
        targets = {"SQLite": str(folder / f"sessions-{front_ends}.sqlite3"), "PostgreSQL": url}
        for name, target in targets.items():
            cells = _measure(target, front_ends, args)
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
        server = PostgresServer(found, fsync=True)  # durable, as SQLite's synchronous=FULL is
        try:
            print(_table(args, server.url, Path(folder)))
        finally:
            server.remove()


if __name__ == "__main__":
    main()
