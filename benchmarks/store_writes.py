"""Turns per second that the SQLite session store records, as the ``UserAgent`` records them.

Each turn is the person's message (one transaction) and the reply with its context (two reads and one
transaction), for many sessions at once on one store. Besides the wall time it prints the CPU time per
turn (this process and its store thread), which shared machines disturb much less::

    python benchmarks/store_writes.py --sessions 100 --turns 20
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from handoffs_runtime.messages import AgentResponse
from handoffs_runtime.sessions.recording import record_reply, record_user
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore


async def session(store: SQLiteSessionStore, name: str, turns: int) -> None:
    await store.open_session(name, agent="Agent")
    context: list[LLMMessage] = []
    for n in range(turns):
        said = UserMessage(content=f"{name} message {n}", source="User")
        await record_user(store, name, said, agent="Agent")
        context = [*context, said, AssistantMessage(content=f"reply {n} " + "x" * 200, source="Agent")]
        await record_reply(store, name, AgentResponse(reply_to_topic_type="Agent", context=context))


async def measure(path: str, synchronous: str, sessions: int, turns: int) -> None:
    store = SQLiteSessionStore(path, synchronous=synchronous)  # type: ignore[arg-type]
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(session(store, f"s{i}", turns) for i in range(sessions)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    await store.close()
    total = sessions * turns
    label = "memory" if path == ":memory:" else f"file, synchronous={synchronous}"
    print(
        f"{label:28} {total} turns in {elapsed:6.2f} s = {total / elapsed:8.0f} turns/s, "
        f"{cpu / total * 1e6:5.0f} µs CPU per turn"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(measure(":memory:", "NORMAL", args.sessions, args.turns))
    with tempfile.TemporaryDirectory() as folder:
        for synchronous in ("NORMAL", "FULL"):
            path = str(Path(folder) / f"{synchronous}.sqlite3")
            asyncio.run(measure(path, synchronous, args.sessions, args.turns))


if __name__ == "__main__":
    main()
