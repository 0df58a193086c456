"""What streaming costs per session: ``python -m benchmarks.streaming [--sessions N] [--rounds R]``.

The benchmark scenario (triage hands off to sales, sales answers) on zero-latency scripted models, run
one session after another, three ways, interleaved for ``rounds`` rounds so that a noisy neighbour hurts
each alike: streaming off; streaming on with a channel that does not show progress (the console today);
streaming on with a channel that takes every delta (``EventChannel``-like), the reply sent in 4-character
deltas. Prints the median µs per session of each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import replace

from handoffs_runtime import HandoffsRuntime, LocalModel, TeamPolicy, register_team
from handoffs_runtime.messages import PROGRESS, Event
from handoffs_runtime.models.scripted import FunctionModel

from .frameworks import ours
from .scenario import CallCounter, check

DELTA_CHARS = 4


class ChunkedStream(LocalModel):
    """A local model that streams its text in small deltas, as a real server does."""

    delta_chars = DELTA_CHARS


class ChunkedModel(ChunkedStream, FunctionModel):
    """A scripted model (``FunctionModel``) that streams."""


class ProgressChannel(ours.OnceChannel):
    """The benchmark's channel, also shown every delta (and counting them)."""

    shows_progress = True

    def __init__(self) -> None:
        super().__init__()
        self.deltas = 0

    async def show(self, session_id: str, event: Event) -> None:
        if isinstance(event, PROGRESS):
            self.deltas += 1
            return
        await super().show(session_id, event)


async def _framework(mode: str) -> ours.Ours:
    calls = CallCounter()
    models: dict[str, FunctionModel] = {
        name: ChunkedModel(model._responder) for name, model in ours._models(calls, 0.0).items()
    }
    for model in models.values():
        model.record_calls = False
    channel = ProgressChannel() if mode == "stream, deltas shown" else ours.OnceChannel()
    team = replace(ours.team(), policy=TeamPolicy(stream=mode != "no stream"))
    runtime = HandoffsRuntime()
    await register_team(
        runtime, team, model=models[ours.TRIAGE], models=models, channel=channel, on_session_end=channel.ended
    )
    runtime.start()
    return ours.Ours(runtime, channel, calls)


MODES = ("no stream", "stream, deltas not shown", "stream, deltas shown")


async def _run(mode: str, sessions: int, warmup: int) -> list[float]:
    fw = await _framework(mode)
    for i in range(warmup):
        await fw.session(-1 - i)
    fw.calls.triage = fw.calls.sales = 0
    times, outcomes = [], []
    for i in range(sessions):
        t0 = time.perf_counter_ns()
        outcomes.append(await fw.session(i))
        times.append((time.perf_counter_ns() - t0) / 1000)
    check("ours", outcomes, fw.calls)
    await fw.close()
    return times


async def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            times[mode] += await _run(mode, args.sessions, args.warmup)
    medians = {mode: statistics.median(values) for mode, values in times.items()}
    print("| mode | median µs per session | vs no stream |")
    print("| --- | ---: | ---: |")
    for mode, median in medians.items():
        print(f"| {mode} | {median:.0f} | {median / medians['no stream']:.2f}x |")
    return medians


if __name__ == "__main__":
    asyncio.run(main())
