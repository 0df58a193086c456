"""What the sandbox costs: the median time of ``run_python("print(1)")``, per containment, next to a bare
``python -I -c "print(1)"`` child (the floor: starting an interpreter), and the CPU time each takes::

    python benchmarks/sandbox_overhead.py --runs 30

Numbers depend on the machine; compare them on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

from handoffs_runtime.tools.sandbox import tool as sandbox


async def bare() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-c", "print(1)", stdout=asyncio.subprocess.PIPE
    )
    await proc.communicate()


async def contained(strongest: sandbox.Containment) -> None:
    sandbox._STRONGEST_CONTAINMENT = strongest
    await sandbox.run_python("print(1)")


async def main(runs: int) -> None:
    """Runs the variants in turn, ``runs`` rounds, so that a busy moment of the machine hits all alike."""
    variants: dict[str, Callable[[], Awaitable[None]]] = {"bare python -I -c 'print(1)'": bare}
    strongest: sandbox.Containment
    for strongest in ("pidns", "subreaper", "group"):
        sandbox._STRONGEST_CONTAINMENT = strongest
        used = (await sandbox.run_python("print(1)")).containment  # also warms the file cache
        if used == strongest:
            variants[f"run_python('print(1)'), {used}"] = functools.partial(contained, strongest)
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, float] = dict.fromkeys(variants, 0.0)
    for _ in range(runs):
        for name, run in variants.items():
            started, cpu_before = time.perf_counter(), cpu_seconds()
            await run()
            times[name].append(time.perf_counter() - started)
            cpu[name] += cpu_seconds() - cpu_before
    for name, taken in times.items():
        median, cpu_each = statistics.median(taken) * 1000, cpu[name] / runs * 1000
        print(f"{name}: median {median:.1f} ms, CPU {cpu_each:.1f} ms")


def cpu_seconds() -> float:
    """CPU time of this process and of its reaped descendants: steadier than wall time on a busy machine."""
    mine, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
