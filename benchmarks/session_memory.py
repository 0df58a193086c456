"""Resident memory after 1k, 10k and 50k finished sessions, with and without releasing their agents.

Each session says one line to the ACME team (a zero-latency ``FunctionModel`` answers) and leaves. Each
mode runs in its own process so the figures do not share a heap::

    python benchmarks/session_memory.py                      # both modes, 1k / 10k / 50k
    python benchmarks/session_memory.py --checkpoints 1000,5000 --mode release
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import subprocess
import sys
from collections.abc import Sequence

from autogen_core import SingleThreadedAgentRuntime
from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import register_team, start_session
from handoffs_runtime.messages import Event, Person
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.runtime.release import live_sessions
from handoffs_runtime.teams.acme import acme_team


class OneLineChannel:
    """Each session says one line, then leaves; nothing is kept (unlike ``ScriptedChannel``)."""

    shows_progress = False

    def __init__(self) -> None:
        self._asked: set[str] = set()

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if session_id in self._asked:
            self._asked.discard(session_id)
            return None
        self._asked.add(session_id)
        return "hello"

    async def show(self, session_id: str, event: Event) -> None:
        return None


def answer(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
    return "Hello! How can I help?"


def rss_mib() -> float:
    """Resident set size now (Linux ``/proc``), else the peak that ``getrusage`` reports."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def measure(checkpoints: list[int], release: bool, batch: int) -> None:
    runtime = SingleThreadedAgentRuntime()
    ended = 0
    done = asyncio.Event()
    target = 0

    def on_end(session: str) -> None:
        nonlocal ended
        ended += 1
        if ended >= target:
            done.set()

    model = FunctionModel(answer)
    model.record_calls = False
    await register_team(
        runtime,
        acme_team(),
        model=model,
        channel=OneLineChannel(),
        on_session_end=on_end,
        release_ended=release,
    )
    runtime.start()
    gc.collect()
    print(f"{'release' if release else 'keep'}: start rss={rss_mib():.1f} MiB", flush=True)
    started = 0
    for checkpoint in checkpoints:
        while started < checkpoint:
            target = min(started + batch, checkpoint)
            done.clear()
            for n in range(started, target):
                await start_session(runtime, f"s{n}")
            started = target
            await done.wait()
        gc.collect()
        live = len(live_sessions(runtime))
        mode = "release" if release else "keep"
        print(
            f"{mode}: {checkpoint:>6} sessions  rss={rss_mib():7.1f} MiB  live agent sessions={live}",
            flush=True,
        )
    await runtime.stop_when_idle()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoints", default="1000,10000,50000")
    parser.add_argument("--mode", choices=("both", "release", "keep"), default="both")
    parser.add_argument("--batch", type=int, default=500, help="sessions running at once")
    args = parser.parse_args()
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    if args.mode == "both":
        for mode in ("keep", "release"):
            command = [sys.executable, __file__, "--checkpoints", args.checkpoints, "--mode", mode]
            subprocess.run([*command, "--batch", str(args.batch)], check=True)
        return
    asyncio.run(measure(checkpoints, args.mode == "release", args.batch))


if __name__ == "__main__":
    main()
