"""Whether a session costs more CPU with more sessions in flight: 1000 against 5000 (50 ms model).

Each size runs in a process of its own, the sizes alternating, ``--rounds`` times; each process starts
``--warm`` bursts of N sessions that are not counted (they grow the heap and the collector's young
threshold to what N sessions in flight need: a server pays that once, not per session), then
``--repeats`` counted bursts. Prints CPU per session (the median burst of each process, then the
median and range over the rounds), the first bursts' cost apart, and page faults per session::

    python -m benchmarks.in_flight
    python -m benchmarks.in_flight --sizes 1000,3000,5000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def burst(size: int, repeats: int, warm: int, latency: float) -> dict[str, list[float]]:
    """One process's bursts of ``size`` sessions: CPU µs per session and page faults per session."""
    command = [sys.executable, "-m", "benchmarks.measure", "ours", "--sessions", "0", "--concurrent"]
    command += [str(size), "--repeats", str(repeats), "--warm", str(warm), "--latency", str(latency)]
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True, timeout=1800).stdout
    run = json.loads(out)["concurrent"]
    return {
        "cpu": [c / size * 1e6 for c in run["cpus_s"]],
        "warm_cpu": [c / size * 1e6 for c in run["warm_cpus_s"]],
        "faults": [f / size for f in run["page_faults"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,5000", help="sessions in flight, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="processes per size, the sizes alternating")
    parser.add_argument("--repeats", type=int, default=5, help="counted bursts per process")
    parser.add_argument("--warm", type=int, default=2, help="bursts per process before those, not counted")
    parser.add_argument("--latency", type=float, default=0.05, help="the model's latency, seconds")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs: dict[int, list[dict[str, list[float]]]] = {size: [] for size in sizes}
    for round_ in range(args.rounds):
        for size in sizes:
            runs[size].append(burst(size, args.repeats, args.warm, args.latency))
            print(f"round {round_ + 1}/{args.rounds}, {size} in flight: done", file=sys.stderr, flush=True)
    print("| in flight | CPU µs/session (median of rounds) | range | first bursts | page faults/session |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    medians: dict[int, float] = {}
    for size in sizes:
        per_round = [statistics.median(r["cpu"]) for r in runs[size]]
        medians[size] = statistics.median(per_round)
        warm = [c for r in runs[size] for c in r["warm_cpu"]]
        first = f"{min(warm):.0f}-{max(warm):.0f}" if warm else "-"
        faults = statistics.median(f for r in runs[size] for f in r["faults"])
        spread = f"{min(per_round):.1f}-{max(per_round):.1f}"
        print(f"| {size} | {medians[size]:.1f} | {spread} | {first} | {faults:.2f} |")
    smallest = sizes[0]
    for size in sizes[1:]:
        print(f"{size} against {smallest}: {medians[size] / medians[smallest]:.3f}x CPU per session")


if __name__ == "__main__":
    main()
