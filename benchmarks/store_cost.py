"""What a durable session costs: CPU instructions per session with no store, SQLite and PostgreSQL.

One run prints, side by side, the instructions per session (callgrind, client side only: the PostgreSQL
server is not counted) of the same two-agent handoff session as ``benchmarks.measure ours`` runs it,
with no store, a SQLite file and PostgreSQL, beside the floor (``benchmarks.frameworks.floor``, a
minimal pub/sub runtime); then the appends per second of 100 concurrent sessions on each store::

    python -m benchmarks.store_cost                      # 300 and 1300 sessions: (Ir1300 - Ir300) / 1000
    python -m benchmarks.store_cost --small 100 --large 400 --no-rate

Instructions per session are the difference of two runs, so start-up and warm-up cancel out. Without
``--postgres`` it starts a PostgreSQL server of its own (``fsync`` on, as deployed), as
``benchmarks/store_backends.py`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def instructions(module: str, sessions: int, store: str | None, folder: Path) -> int:
    """The instructions callgrind counts for one ``benchmarks.measure`` run of ``sessions`` sessions."""
    out = folder / f"callgrind-{uuid.uuid4().hex[:8]}.out"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "benchmarks.measure",
        module,
        "--sessions",
        str(sessions),
        "--concurrent",
        "0",
        "--warmup",
        "50",
    ]
    if store:
        command += ["--store", store]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=3600)
    found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    out.unlink()
    if found is None:
        raise SystemExit(f"callgrind wrote no totals for {module} with {store or 'no store'}")
    return int(found.group(1))


def _fresh_database(url: str) -> str:
    """A new, empty database on the server ``url`` names, so that every run starts with no sessions."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + f"/{name}"


def per_session(
    module: str, store: str | None, folder: Path, small: int, large: int, postgres: str | None
) -> float:
    """Instructions per session: (I(large) - I(small)) / (large - small), each run on an empty store."""

    def target(n: int) -> str | None:
        if store == "sqlite":
            return str(folder / f"sessions-{n}-{uuid.uuid4().hex[:6]}.sqlite3")
        if store == "postgres":
            assert postgres is not None
            return _fresh_database(postgres)
        return None

    ir_small = instructions(module, small, target(small), folder)
    ir_large = instructions(module, large, target(large), folder)
    return (ir_large - ir_small) / (large - small)


async def _appends(store_target: str, sessions: int, turns: int) -> float:
    """Appends per second while ``sessions`` sessions each append ``turns`` turns (a message and a reply)
    at once, as fast as the store takes them."""
    from autogen_core.models import AssistantMessage, UserMessage

    from handoffs_runtime.sessions.open import open_store
    from handoffs_runtime.sessions.store import entry_for_message

    store = await asyncio.to_thread(open_store, store_target)

    async def one(name: str) -> None:
        await store.open_session(name, agent="Agent")
        for n in range(turns):
            await store.append(name, [entry_for_message(UserMessage(content=f"{n}", source="User"))])
            reply = AssistantMessage(content=f"reply {n}", source="Agent")
            await store.append(name, [entry_for_message(reply)], active_agent="Agent")

    started = time.perf_counter()
    await asyncio.gather(*(one(f"s{i}") for i in range(sessions)))
    elapsed = time.perf_counter() - started
    await store.close()
    return sessions * turns * 2 / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--large", type=int, default=1300)
    parser.add_argument("--stores", default="none,sqlite,postgres,floor")
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: start one of its own)")
    parser.add_argument("--no-rate", action="store_true", help="skip the appends/s at 100 sessions")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed to count instructions: install it")
    wanted = args.stores.split(",")
    server = None
    url = args.postgres
    if url is None and "postgres" in wanted:
        sys.path.insert(0, str(ROOT))
        from tests.postgres_support import PostgresServer, bin_dir

        found = bin_dir()
        if found is None:
            raise SystemExit("no PostgreSQL server binaries found: install `postgresql`, or pass --postgres")
        server = PostgresServer(found, fsync=True)
        url = server.url
    try:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            print("| store | instructions per session | appends/s, 100 sessions |")
            print("| --- | ---: | ---: |")
            for store in wanted:
                module = "floor" if store == "floor" else "ours"
                backend = None if store in ("none", "floor") else store
                ir = per_session(module, backend, folder, args.small, args.large, url)
                rate = "-"
                if backend and not args.no_rate:
                    target = (
                        str(folder / "rate.sqlite3") if backend == "sqlite" else _fresh_database(url or "")
                    )
                    rate = f"{asyncio.run(_appends(target, 100, 10)):.0f}"
                print(f"| {store} | {ir / 1e6:.3f} M | {rate} |", flush=True)
    finally:
        if server is not None:
            server.remove()


if __name__ == "__main__":
    main()
