"""Whether a session costs more CPU with more sessions in flight: 1000 against 5000 (50 ms model).

Three ways to look, each printing a table and the ratio of every size to the first::

    python -m benchmarks.in_flight                    # each size in processes of its own
    python -m benchmarks.in_flight --same-process     # the sizes taking turns in one process
    python -m benchmarks.in_flight --instructions     # instructions per session, under callgrind

Each way measures our runtime beside the floor (``benchmarks/frameworks/floor.py``: the same session on
the least a pub/sub runtime can be), both with the garbage collector set up as our runtime's start sets
it. What the floor pays more per session with more in flight is what Python, asyncio and the machine
charge for holding more sessions at once; what ours pays beyond that is the runtime's own.

By default each size runs in a process of its own, the sizes alternating, ``--rounds`` times; each process
starts ``--warm`` bursts of N sessions that are not counted (they grow the heap and the collector's young
threshold to what N sessions in flight need: a server pays that once, not per session), then ``--repeats``
counted bursts. Printed: CPU per session (the median burst of each process, then the median and range over
the rounds), the first bursts' cost apart, page faults per session, and the ratio of each round's pair.

``--same-process`` runs the sizes in turns in one process (ABBA, ``--rounds`` rounds after ``--warm``):
each size meets the heap the others leave, as one server whose load changes does; the ratio is taken per
round. ``--instructions`` counts CPU instructions per session in flight with callgrind (the difference
between one and three counted bursts): the work done, free of the machine's noise, caches and page
faults; it needs valgrind and takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = "ours,floor"


def _measure(framework: str) -> list[str]:
    """``benchmarks.measure`` for ``framework``, the collector set up as our runtime sets it."""
    return [sys.executable, "-m", "benchmarks.measure", framework, "--sessions", "0", "--tuned-collector"]


def _run(command: list[str], timeout: float = 1800) -> dict[str, Any]:
    """What ``benchmarks.measure`` printed (one JSON object)."""
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True, timeout=timeout)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def burst(framework: str, size: int, args: argparse.Namespace) -> dict[str, list[float]]:
    """One process's bursts of ``size`` sessions: CPU µs per session and page faults per session."""
    command = [*_measure(framework), "--concurrent", str(size), "--repeats", str(args.repeats)]
    run = _run([*command, "--warm", str(args.warm), "--latency", str(args.latency)])["concurrent"]
    return {
        "cpu": [c / size * 1e6 for c in run["cpus_s"]],
        "warm_cpu": [c / size * 1e6 for c in run["warm_cpus_s"]],
        "faults": [f / size for f in run["page_faults"]],
    }


def _ratios(framework: str, sizes: list[int], cpu: dict[int, list[float]]) -> None:
    """Each size against the first: the ratio of the medians, what a session costs more in µs, and the
    range of the paired ratios."""
    first = sizes[0]
    for size in sizes[1:]:
        pairs = [b / a for a, b in zip(cpu[first], cpu[size], strict=True)]
        more = statistics.median(cpu[size]) - statistics.median(cpu[first])
        ratio = statistics.median(cpu[size]) / statistics.median(cpu[first])
        spread = f"{min(pairs):.3f}-{max(pairs):.3f}"
        print(
            f"{framework}: {size} against {first}: {ratio:.3f}x CPU per session, {more:+.1f} µs "
            f"(pair by pair {spread})"
        )


def separate(frameworks: list[str], sizes: list[int], args: argparse.Namespace) -> None:
    """Each framework and size in processes of its own, all of them taking turns round by round."""
    runs: dict[tuple[str, int], list[dict[str, list[float]]]] = {}
    for round_ in range(args.rounds):
        for framework in frameworks:
            for size in sizes:
                runs.setdefault((framework, size), []).append(burst(framework, size, args))
                done = f"round {round_ + 1}/{args.rounds}, {framework}, {size} in flight: done"
                print(done, file=sys.stderr, flush=True)
    print(
        "| framework | in flight | CPU µs/session (median of rounds) | range | first bursts "
        "| page faults/session |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    per_round: dict[str, dict[int, list[float]]] = {framework: {} for framework in frameworks}
    for framework in frameworks:
        for size in sizes:
            these = runs[framework, size]
            cpu = per_round[framework][size] = [statistics.median(r["cpu"]) for r in these]
            warm = [c for r in these for c in r["warm_cpu"]]
            first = f"{min(warm):.0f}-{max(warm):.0f}" if warm else "-"
            faults = statistics.median(f for r in these for f in r["faults"])
            median, spread = statistics.median(cpu), f"{min(cpu):.1f}-{max(cpu):.1f}"
            print(f"| {framework} | {size} | {median:.1f} | {spread} | {first} | {faults:.2f} |")
    for framework in frameworks:
        _ratios(framework, sizes, per_round[framework])


def same_process(frameworks: list[str], sizes: list[int], args: argparse.Namespace) -> None:
    """The sizes in turns in one process per framework: each meets the heap the others leave."""
    print("| framework | in flight | CPU µs/session (median of rounds) | range | page faults/session |")
    print("| --- | ---: | ---: | ---: | ---: |")
    cpu: dict[str, dict[int, list[float]]] = {framework: {} for framework in frameworks}
    for framework in frameworks:
        command = [*_measure(framework), "--alternate", ",".join(map(str, sizes))]
        command += ["--repeats", str(args.rounds), "--warm", str(args.warm), "--latency", str(args.latency)]
        run = _run(command)["alternating"]
        for size in sizes:
            these = cpu[framework][size] = [c / size * 1e6 for c in run["cpus_s"][str(size)]]
            faults = statistics.median(f / size for f in run["page_faults"][str(size)])
            median, spread = statistics.median(these), f"{min(these):.1f}-{max(these):.1f}"
            print(f"| {framework} | {size} | {median:.1f} | {spread} | {faults:.2f} |", flush=True)
    for framework in frameworks:
        _ratios(framework, sizes, cpu[framework])


def instructions(frameworks: list[str], sizes: list[int], args: argparse.Namespace) -> None:
    """Instructions per session in flight: callgrind's total with three counted bursts less that with
    one, over two bursts' sessions (start-up and the warm burst cancel out)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    print("| framework | in flight | instructions per session |")
    print("| --- | ---: | ---: |")
    counts: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for framework in frameworks:
            for size in sizes:
                totals = []
                for repeats in (1, 3):
                    out = Path(scratch) / f"callgrind.{framework}.{size}.{repeats}"
                    command = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}"]
                    command += [*_measure(framework), "--concurrent", str(size), "--repeats", str(repeats)]
                    command += ["--warm", "1", "--latency", str(args.latency)]
                    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=7200)
                    totals.append(_total(out))
                counts[framework, size] = (totals[1] - totals[0]) / (2 * size)
                print(f"| {framework} | {size} | {counts[framework, size]:,.0f} |", flush=True)
    first = sizes[0]
    for framework in frameworks:
        for size in sizes[1:]:
            ratio = counts[framework, size] / counts[framework, first]
            more = counts[framework, size] - counts[framework, first]
            print(f"{framework}: {size} against {first}: {ratio:.4f}x instructions per session, {more:+,.0f}")


def _total(callgrind_out: Path) -> int:
    for line in callgrind_out.read_text().splitlines():
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError(f"no total in {callgrind_out}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,5000", help="sessions in flight, comma-separated")
    parser.add_argument(
        "--frameworks", default=FRAMEWORKS, help="benchmarks.frameworks modules, comma-separated"
    )
    parser.add_argument("--rounds", type=int, default=3, help="processes per size, the sizes alternating")
    parser.add_argument("--repeats", type=int, default=5, help="counted bursts per process")
    parser.add_argument("--warm", type=int, default=2, help="bursts per process before those, not counted")
    parser.add_argument("--latency", type=float, default=0.05, help="the model's latency, seconds")
    way = parser.add_mutually_exclusive_group()
    way.add_argument("--same-process", action="store_true", help="the sizes take turns in one process")
    way.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    frameworks = args.frameworks.split(",")
    known = {path.stem for path in (ROOT / "benchmarks" / "frameworks").glob("*.py")} - {"__init__"}
    unknown = [name for name in frameworks if name not in known]
    if unknown:
        parser.error(f"no such framework: {', '.join(unknown)} (see benchmarks/frameworks/)")
    if args.same_process:
        same_process(frameworks, sizes, args)
    elif args.instructions:
        instructions(frameworks, sizes, args)
    else:
        separate(frameworks, sizes, args)


if __name__ == "__main__":
    main()
