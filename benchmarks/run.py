"""Benchmark handoffs-runtime against its peers in one run: ``python benchmarks/run.py [--quick]``.

Each framework runs the same scenario (see scenario.py) on identical scripted models, in a process of
its own, and is checked for correctness before it is timed. Prints a Markdown table and the line
``ratio to fastest peer: X``; writes JSON and a PNG chart to benchmarks/results/. Peers come from the
optional extra: ``pip install -e ".[bench]"``. Exits non-zero when a framework fails its checks.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``benchmarks`` package importable
    sys.path.insert(0, str(ROOT))

from benchmarks import context_size, report  # noqa: E402
from benchmarks.frameworks import FRAMEWORKS, NEEDS  # noqa: E402

GRPC_WORKERS = (1, 2, 4)


def _measure(module: str, args: argparse.Namespace) -> dict[str, Any]:
    need = NEEDS.get(module)
    if need is not None and importlib.util.find_spec(need) is None:
        return {"error": f"skipped: {need} is not installed (pip install -e '.[bench]')"}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [
        sys.executable,
        "-m",
        "benchmarks.measure",
        module,
        "--sessions",
        str(args.sessions),
        "--warmup",
        str(args.warmup),
        "--concurrent",
        str(args.concurrent),
        "--latency",
        str(args.latency),
        "--repeats",
        str(args.repeats),
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"FAILED: {last}", "failed": True}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _grpc(sessions: int) -> dict[str, Any]:
    try:
        grpc_throughput = importlib.import_module("benchmarks.grpc_throughput")
    except ModuleNotFoundError:
        return {"note": "skipped: benchmarks/grpc_throughput.py is not there yet (distributed mode)"}
    runs = {str(w): grpc_throughput.measure(w, sessions) for w in GRPC_WORKERS}
    return {"runs": runs}


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in (
        "handoffs-runtime",
        "autogen-core",
        "autogen-agentchat",
        "openai-agents",
        "langgraph",
        "langgraph-swarm",
        "pydantic",
    ):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer sequential sessions; under 3 minutes")
    parser.add_argument("--only", nargs="+", choices=list(FRAMEWORKS), help="run only these frameworks")
    parser.add_argument("--concurrent", type=int, default=1000, help="sessions started at once (figure 2)")
    parser.add_argument("--latency", type=float, default=0.05, help="model latency in s for figure 2")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.sessions, args.warmup, args.repeats = (300, 30, 2) if args.quick else (3000, 200, 5)
    mode = "quick" if args.quick else "full"

    frameworks: dict[str, dict[str, Any]] = {}
    for name, module in FRAMEWORKS.items():
        if args.only and name not in args.only:
            continue
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        frameworks[name] = _measure(module, args)
    results: dict[str, Any] = {
        "config": {
            "repeats": args.repeats,
            "mode": mode,
            "sequential_sessions": args.sessions,
            "concurrent": args.concurrent,
            "latency_s": args.latency,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.machine()}",
            "versions": _versions(),
        },
        "frameworks": frameworks,
        "ratio_to_fastest_peer": report.ratio_to_fastest_peer(frameworks),
        "context": asyncio.run(context_size.measure()),
        "grpc": _grpc(200 if args.quick else 2000),
    }
    print(report.markdown(results))
    stem = "latest" if mode == "full" else "latest-quick"
    report.write_json(results, args.out / f"{stem}.json")
    report.write_chart(results, args.out / f"{stem}.png")
    print(f"\nwrote {args.out / stem}.json and .png", file=sys.stderr)
    return 1 if any(r.get("failed") for r in frameworks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
