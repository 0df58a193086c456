"""A front end reduced to its store: it opens the sessions it is told to on a PostgreSQL store, so tests can
race two processes, or run one whose clock is wrong, and kill it with SIGKILL.

    python -m tests.pg_claimer URL SCHEMA [--clock-offset SECONDS] [--host NAME] [--lease SECONDS]

Each line ``open ID`` on standard input opens session ID and prints ``won ID`` or ``busy ID``.
``--clock-offset`` moves this process's wall clock; ``--host`` makes it look like another machine (so only
its lease, not a pid check, can tell whether it is alive).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time


def _skew(args: argparse.Namespace) -> None:
    real_time = time.time
    time.time = lambda: real_time() + args.clock_offset
    if args.host:
        socket.gethostname = lambda: args.host


async def _serve(args: argparse.Namespace) -> None:
    from handoffs_runtime.errors import SessionBusyError
    from handoffs_runtime.sessions.postgres import PostgresSessionStore

    store = await asyncio.to_thread(
        PostgresSessionStore, args.url, schema=args.schema, lease_seconds=args.lease
    )
    print("ready", flush=True)
    while line := await asyncio.to_thread(sys.stdin.readline):
        _, session = line.split()
        try:
            await store.open_session(session, agent="Agent")
            print(f"won {session}", flush=True)
        except SessionBusyError:
            print(f"busy {session}", flush=True)
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("schema")
    parser.add_argument("--clock-offset", type=float, default=0.0)
    parser.add_argument("--host", default="")
    parser.add_argument("--lease", type=float, default=10.0)
    args = parser.parse_args()
    _skew(args)
    asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
