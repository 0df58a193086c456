"""Figures 1-3 for one framework, in a process of its own so that imports and memory do not mix.

Run as ``python -m benchmarks.measure MODULE --sessions N --concurrent M --latency S``; prints one JSON
object. The concurrent run goes first, so its peak resident memory is measured on a fresh process.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from .scenario import Framework, check

STORE: str | None = None
"""The session store ``--store`` names (``ours`` only): a file, ``:memory:`` or a PostgreSQL URL."""
TUNED_COLLECTOR = False
"""``--tuned-collector``: the garbage collector set up as our runtime's start sets it, for any framework."""


async def _framework(module: str, latency: float) -> Framework:
    mod = importlib.import_module(f"benchmarks.frameworks.{module}")
    framework: Framework = await (mod.create(latency, store=STORE) if STORE else mod.create(latency))
    if TUNED_COLLECTOR:  # ours did it as its runtime started; the others run under Python's default
        from handoffs_runtime.runtime.collector import freeze_start_up  # only then: the peers run without it

        freeze_start_up()
    return framework


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _page_faults() -> int:
    """Page faults so far (minor ones: memory the system hands back in as it is touched again)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


@dataclass(frozen=True, slots=True)
class Burst:
    """One burst of sessions started at once: its wall and CPU seconds, page faults and peak memory
    growth (KiB)."""

    wall_s: float
    cpu_s: float
    page_faults: int
    peak_growth_kib: int


async def burst(module: str, fw: Framework, first: int, size: int) -> Burst:
    """Sessions ``first`` to ``first + size - 1`` started at once, measured, then checked; the collector
    runs before, outside the count."""
    fw.calls.triage = fw.calls.sales = 0
    gc.collect()
    before = _peak_rss_kib()
    start, cpu, faulted = time.perf_counter(), time.process_time(), _page_faults()
    outcomes = await asyncio.gather(*(fw.session(first + i) for i in range(size)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    measured = Burst(wall, cpu, _page_faults() - faulted, _peak_rss_kib() - before)
    check(module, outcomes, fw.calls)
    return measured


async def concurrent(
    module: str, sessions: int, latency: float, repeats: int = 1, warm: int = 0
) -> dict[str, Any]:
    """Wall and CPU time (medians of ``repeats`` runs) and peak memory growth (first run) of ``sessions``
    sessions started at once. ``warm`` runs go first and are not counted: the first bursts grow the heap
    and the collector's young threshold to what this many sessions in flight need, which a server pays
    once, not per session (their figures are reported apart)."""
    fw = await _framework(module, latency)
    check(module, [await fw.session(-1)], fw.calls)  # correctness first, and a warm-up
    bursts = [await burst(module, fw, run * sessions, sessions) for run in range(warm + repeats)]
    await fw.close()
    walls = [b.wall_s for b in bursts]
    cpus = [b.cpu_s for b in bursts]
    faults = [b.page_faults for b in bursts]
    growth = bursts[0].peak_growth_kib / 1024 * 1000 / sessions
    ideal = 2 * latency
    wall = statistics.median(walls[warm:])
    return {
        "sessions": sessions,
        "latency_s": latency,
        "repeats": repeats,
        "warm": warm,
        "wall_s": wall,
        "walls_s": walls[warm:],
        "ideal_s": ideal,
        "x_ideal": wall / ideal if ideal else None,
        "cpu_s": statistics.median(cpus[warm:]),
        "cpus_s": cpus[warm:],
        "page_faults": faults[warm:],
        "warm_cpus_s": cpus[:warm],
        "warm_page_faults": faults[:warm],
        "peak_rss_mib_per_1000": growth,
    }


async def alternating(
    module: str, sizes: list[int], latency: float, rounds: int, warm: int = 1
) -> dict[str, Any]:
    """CPU per burst of each of ``sizes`` sessions started at once, the sizes taking turns in this one
    process (in an order that reverses every round: ABBA), so that each size meets the heap the others
    leave. ``warm`` rounds go first and are not counted."""
    fw = await _framework(module, latency)
    check(module, [await fw.session(-1)], fw.calls)
    cpus: dict[int, list[float]] = {size: [] for size in sizes}
    faults: dict[int, list[int]] = {size: [] for size in sizes}
    start = 0
    for round_ in range(warm + rounds):
        for size in sizes if round_ % 2 == 0 else sizes[::-1]:
            measured = await burst(module, fw, start, size)
            if round_ >= warm:
                cpus[size].append(measured.cpu_s)
                faults[size].append(measured.page_faults)
            start += size
    await fw.close()
    return {"sizes": sizes, "cpus_s": cpus, "page_faults": faults}


async def sequential(module: str, sessions: int, warmup: int) -> dict[str, Any]:
    """Median and spread of one session's time, sessions run one after another on zero-latency models."""
    fw = await _framework(module, 0.0)
    check(module, [await fw.session(-1)], fw.calls)
    for i in range(warmup):
        await fw.session(-2 - i)
    fw.calls.triage = fw.calls.sales = 0
    times: list[float] = []
    outcomes = []
    clock = time.perf_counter_ns
    cpu = time.process_time()
    for i in range(sessions):
        t0 = clock()
        outcomes.append(await fw.session(i))
        times.append((clock() - t0) / 1000)
    cpu = time.process_time() - cpu
    check(module, outcomes, fw.calls)
    await fw.close()
    quartiles = statistics.quantiles(times, n=4)
    return {
        "sessions": sessions,
        "median_us": statistics.median(times),
        "p25_us": quartiles[0],
        "p75_us": quartiles[2],
        "cpu_us_per_session": cpu / sessions * 1e6,
    }


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("module")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=1, help="concurrent runs; the median wall time counts")
    parser.add_argument("--warm", type=int, default=0, help="concurrent runs before those, not counted")
    parser.add_argument("--alternate", help="sizes that take turns in this process, comma-separated")
    parser.add_argument("--store", help="a session store for `ours`: a file, :memory: or a PostgreSQL URL")
    parser.add_argument(
        "--tuned-collector",
        action="store_true",
        help="set the garbage collector up as our runtime's start does, whatever the framework",
    )
    args = parser.parse_args(argv)
    global STORE
    STORE = args.store
    global TUNED_COLLECTOR
    TUNED_COLLECTOR = args.tuned_collector
    result: dict[str, Any] = {}
    if args.alternate:
        sizes = [int(size) for size in args.alternate.split(",")]
        result["alternating"] = await alternating(args.module, sizes, args.latency, args.repeats, args.warm)
        return result
    if args.concurrent:
        result["concurrent"] = await concurrent(
            args.module, args.concurrent, args.latency, args.repeats, args.warm
        )
    if args.sessions:
        result["sequential"] = await sequential(args.module, args.sessions, args.warmup)
    return result


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))))
