"""Whether one customer reconnecting in a loop slows the others: ``python -m benchmarks.web_reconnects``.

Starts ``handoffs serve``'s application in a process of its own (loopback, a free port, the ACME team on
the offline model, a SQLite store in a temporary folder), twice: with the default limits, and with the
per-client limits lifted, so that the loops reconnect as fast as the server can take them. On each, a
customer and the team exchange ``--messages`` messages (half of them the customer's); then another
customer, from another address, takes turns alone and while ``--loops`` connections (a process of their
own) reopen the first customer's session in a loop, each reconnect receiving its transcript, in
interleaved rounds. Prints the other customer's median turn both ways and their ratio, and how many
reconnects a second the server served and refused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
UNLIMITED = 1_000_000
ANOTHER_ADDRESS = ("127.0.0.2", 0)
"""Where the measured customer connects from (all of 127.0.0.0/8 is loopback on Linux), so that the
per-client limits, when kept, count the loops and that customer apart."""


def serve(folder: str, default_limits: bool) -> None:
    """The server side: runs until killed, after printing its URL."""
    from handoffs_runtime import SQLiteSessionStore
    from handoffs_runtime.models.offline import OfflineModel
    from handoffs_runtime.teams.acme import acme_team
    from handoffs_runtime.web.app import create_app
    from handoffs_runtime.web.hub import SessionHub
    from handoffs_runtime.web.limits import Limits
    from handoffs_runtime.web.server import running

    from .lifted_limits import lifted

    limits = Limits() if default_limits else lifted(UNLIMITED)

    async def main() -> None:
        store = SQLiteSessionStore(str(Path(folder) / "sessions.sqlite3"))
        hub = SessionHub(acme_team(), OfflineModel(), store, limits=limits)
        async with running(create_app(hub, operator_token="reconnect-bench-token"), limits=limits) as url:
            print(url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


async def until_question(socket: Any) -> None:
    while (kind := json.loads(await socket.recv())["type"]) != "question":
        if kind == "error":
            raise RuntimeError("the server refused a message")


async def long_session(ws: str, messages: int) -> dict[str, str]:
    """A session of ``messages`` messages, half of them the customer's; returns its hello (id and key)."""
    from websockets.asyncio.client import connect

    async with connect(ws) as socket:
        await socket.send(json.dumps({"type": "hello"}))
        session = json.loads(await socket.recv())
        await until_question(socket)
        for n in range(messages // 2):
            await socket.send(json.dumps({"type": "say", "text": f"hello, this is message {n}"}))
            await until_question(socket)
    return {"type": "hello", "session": session["session"], "key": session["key"]}


async def turns(ws: str, count: int) -> list[float]:
    """Another customer's turns (send to the next question), in seconds."""
    from websockets.asyncio.client import connect

    times = []
    async with connect(ws, local_addr=ANOTHER_ADDRESS) as socket:
        await socket.send(json.dumps({"type": "hello"}))
        await until_question(socket)
        for _ in range(count):
            start = time.perf_counter()
            await socket.send(json.dumps({"type": "say", "text": "hello"}))
            await until_question(socket)
            times.append(time.perf_counter() - start)
    return times


async def reconnect_loop(ws: str, hello: dict[str, str], stop: asyncio.Event, counts: Counter[str]) -> None:
    """Reopen the session until ``stop``, each time reading its transcript; counts what was served and
    what was refused."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    while not stop.is_set():
        try:
            async with connect(ws) as socket:
                await socket.send(json.dumps(hello))
                json.loads(await socket.recv())  # the session
                if json.loads(await socket.recv())["type"] == "history":
                    counts["served"] += 1
        except (InvalidHandshake, ConnectionClosed, OSError):
            counts["refused"] += 1  # a page would wait; a hostile script tries again at once


def reconnecting(ws: str, hello: str, loops: int) -> None:
    """The loops' side, a process of its own (so the measured customer does not share their event loop):
    reconnects until its standard input closes, then prints how many it was served and refused a second."""

    async def main() -> None:
        stop = asyncio.Event()
        counts: Counter[str] = Counter()
        tasks = [
            asyncio.ensure_future(reconnect_loop(ws, json.loads(hello), stop, counts)) for _ in range(loops)
        ]
        start = time.perf_counter()
        await asyncio.to_thread(sys.stdin.read)
        stop.set()
        await asyncio.gather(*tasks)
        seconds = time.perf_counter() - start
        print(json.dumps({name: counts[name] / seconds for name in ("served", "refused")}), flush=True)

    asyncio.run(main())


async def with_loops(
    ws: str, hello: dict[str, str], loops: int, count: int
) -> tuple[list[float], dict[str, float]]:
    """The other customer's ``count`` turns while ``loops`` connections reopen ``hello``'s session."""
    command = [sys.executable, "-m", "benchmarks.web_reconnects", "--reconnect", ws, json.dumps(hello)]
    others = subprocess.Popen(
        [*command, "--loops", str(loops)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        await asyncio.sleep(1.0)  # the loops get going
        times = await turns(ws, count)
    finally:
        out, _ = others.communicate(timeout=60)
    rates: dict[str, float] = json.loads(out)
    return times, rates


async def scenario(args: argparse.Namespace, default_limits: bool) -> dict[str, float]:
    """One server: the other customer's turns alone and with the loops, interleaved over ``rounds``."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "benchmarks.web_reconnects", "--serve", folder]
        command += ["--default-limits"] if default_limits else []
        server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            ws = server.stdout.readline().strip().replace("http://", "ws://") + "/ws"
            hello = await long_session(ws, args.messages)
            alone: list[float] = []
            loaded: list[float] = []
            rates: Counter[str] = Counter()
            for _ in range(args.rounds):  # interleaved, so that a noisy neighbour hurts both alike
                alone += await turns(ws, args.turns)
                times, round_rates = await with_loops(ws, hello, args.loops, args.turns)
                loaded += times
                rates.update(round_rates)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "alone_ms": statistics.median(alone) * 1000,
        "loaded_ms": statistics.median(loaded) * 1000,
        "loaded_p95_ms": sorted(loaded)[int(len(loaded) * 0.95) - 1] * 1000,
        "served_per_s": rates["served"] / args.rounds,
        "refused_per_s": rates["refused"] / args.rounds,
    }


async def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    rows = {
        "default limits": await scenario(args, default_limits=True),
        "per-client limits lifted": await scenario(args, default_limits=False),
    }
    print(
        f"another customer's turn ({args.rounds} rounds of {args.turns} turns) alone and while {args.loops} "
        f"connections reopen a session of {args.messages} messages"
    )
    print(
        "| server | alone p50 ms | with loops p50 ms | ratio | with loops p95 ms | reconnects/s | refused/s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in rows.items():
        print(
            f"| {name} | {row['alone_ms']:.1f} | {row['loaded_ms']:.1f} "
            f"| {row['loaded_ms'] / row['alone_ms']:.2f}x "
            f"| {row['loaded_p95_ms']:.1f} | {row['served_per_s']:.0f} | {row['refused_per_s']:.0f} |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=600, help="messages in the reopened session (600)")
    parser.add_argument("--loops", type=int, default=8, help="connections reopening it at once (8)")
    parser.add_argument("--turns", type=int, default=100, help="turns the other customer takes a round (100)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, alone and with the loops (5)")
    parser.add_argument("--serve", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--default-limits", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--reconnect", nargs=2, metavar=("WS", "HELLO"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.default_limits)
    elif args.reconnect:
        reconnecting(*args.reconnect, args.loops)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
