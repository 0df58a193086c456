"""The benchmark's correctness checks pass for our runtime (and the baseline), and catch a wrong run.

Timings are never asserted here; benchmarks/run.py measures them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import context_size
from benchmarks.frameworks import NEEDS, baseline, ours, ours_stock
from benchmarks.scenario import SALES, SALES_TEXT, BenchmarkError, CallCounter, Outcome, check


@pytest.mark.parametrize("module", [ours, ours_stock, baseline], ids=["ours", "ours-stock", "baseline"])
async def test_the_scenario_runs_correctly_one_by_one_and_at_once(module: object) -> None:
    framework = await module.create(0.0)  # type: ignore[attr-defined]
    check("one", [await framework.session(0)], framework.calls)
    framework.calls.triage = framework.calls.sales = 0
    outcomes = await asyncio.gather(*(framework.session(i) for i in range(1, 51)))
    check("many", outcomes, framework.calls)
    await framework.close()


def test_check_rejects_a_session_without_exactly_one_handoff() -> None:
    calls = CallCounter(triage=1, sales=1)
    check("ok", [Outcome(1, SALES, SALES_TEXT)], calls)
    with pytest.raises(BenchmarkError, match="session 0"):
        check("none", [Outcome(0, SALES, SALES_TEXT)], calls)
    with pytest.raises(BenchmarkError, match="session 0"):
        check("wrong agent", [Outcome(1, "triage", SALES_TEXT)], calls)


def test_check_rejects_missing_or_extra_model_calls() -> None:
    with pytest.raises(BenchmarkError, match="2 triage and 1 sales"):
        check("extra", [Outcome(1, SALES, SALES_TEXT)], CallCounter(triage=2, sales=1))


async def test_context_figure_filters_shrink_what_the_model_is_sent() -> None:
    full = await context_size.measure_mode(context_size.MODES["full context"])
    bare = await context_size.measure_mode(context_size.MODES["remove_all_tools"])
    nested = await context_size.measure_mode(context_size.MODES["nested history"])
    assert full["model_calls"] == bare["model_calls"] == nested["model_calls"] == 35
    assert bare["bytes"] < full["bytes"] and nested["bytes"] < full["bytes"]


@pytest.mark.parametrize("module", ["baseline", "openai_agents", "agentchat", "langgraph_swarm"])
def test_the_baseline_and_the_peers_run_without_our_package(module: str) -> None:
    if module in NEEDS and importlib.util.find_spec(NEEDS[module]) is None:
        pytest.skip(f"{NEEDS[module]} is not installed (the bench extra)")
    code = (
        f"import importlib, sys; importlib.import_module('benchmarks.frameworks.{module}'); "
        "assert 'handoffs_runtime' not in sys.modules, 'imports handoffs_runtime'"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def _in_flight(*options: str, timeout: float = 120) -> str:
    command = [sys.executable, "-m", "benchmarks.in_flight", "--sizes", "20,40", "--latency", "0.01"]
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [*command, *options], cwd=root, check=True, capture_output=True, text=True, timeout=timeout
    )
    return done.stdout


def _rows(out: str, columns: int) -> list[str]:
    """The table's rows: one per framework (ours, then the floor) and size, each of ``columns`` cells."""
    wanted = [f"| {framework} | {size} |" for framework in ("ours", "floor") for size in (20, 40)]
    rows = [line for line in out.splitlines() if line.startswith(tuple(wanted))]
    assert [row[: len(w)] for row, w in zip(rows, wanted, strict=False)] == wanted, out
    assert all(row.count("|") == columns + 1 for row in rows), out
    return rows


_CPU_RATIO = r"^{}: 40 against 20: [\d.]+x CPU per session, [-+][\d.]+ µs \(pair by pair [\d.]+-[\d.]+\)$"


def test_the_in_flight_benchmark_prints_a_row_per_size_and_their_ratio() -> None:
    """Small and fast: what is printed, not how fast (the warm bursts are run and reported apart)."""
    out = _in_flight("--rounds", "2", "--repeats", "1", "--warm", "1")
    _rows(out, 6)
    for framework in ("ours", "floor"):
        assert re.search(_CPU_RATIO.format(framework), out, re.M), out


def test_the_in_flight_benchmark_runs_the_sizes_in_turns_in_one_process() -> None:
    """``--same-process``: one row per size from the bursts of one process, each pair's ratio."""
    out = _in_flight("--same-process", "--rounds", "2", "--warm", "1")
    _rows(out, 5)
    for framework in ("ours", "floor"):
        assert re.search(_CPU_RATIO.format(framework), out, re.M), out


def test_the_in_flight_benchmark_names_what_counting_instructions_needs(tmp_path: Path) -> None:
    """Without valgrind, ``--instructions`` says what to install instead of failing on a missing file."""
    command = [sys.executable, "-m", "benchmarks.in_flight", "--instructions"]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on it: no valgrind
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--instructions needs valgrind" in done.stderr


def test_the_in_flight_benchmark_names_a_framework_it_does_not_know() -> None:
    """A mistyped framework is refused at once, by name, before any process is started."""
    command = [sys.executable, "-m", "benchmarks.in_flight", "--frameworks", "ours,../measure,flor"]
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "no such framework: ../measure, flor" in done.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="counting instructions needs valgrind")
def test_the_in_flight_benchmark_counts_instructions_per_session_in_flight() -> None:
    out = _in_flight("--instructions", timeout=600)
    for row in _rows(out, 3):
        assert 100_000 < int(row.split("|")[3].strip().replace(",", "")) < 10_000_000, row
    for framework in ("ours", "floor"):
        ratio = rf"^{framework}: 40 against 20: [\d.]+x instructions per session, [-+][\d,]+$"
        assert re.search(ratio, out, re.M), out


@pytest.mark.parametrize("tuned", [False, True], ids=["python-default", "tuned"])
def test_the_floor_runs_under_the_collector_our_runtime_sets_only_when_asked(tuned: bool) -> None:
    """``--tuned-collector`` gives any framework the collector our runtime's start sets (start-up frozen,
    young collections rarer), so that the in-flight benchmark compares like with like; without it the
    floor and the peers run under Python's default, and without our package."""
    flag = ", '--tuned-collector'" if tuned else ""
    run = f"['floor', '--sessions', '0', '--concurrent', '5', '--latency', '0'{flag}]"
    code = (
        f"import asyncio, gc, sys; from benchmarks import measure; asyncio.run(measure.main({run})); "
        "print(gc.get_threshold()[0], gc.get_freeze_count() > 0, 'handoffs_runtime' in sys.modules)"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    young, frozen, ours_imported = done.stdout.split()
    if tuned:
        assert int(young) >= 10_000 and frozen == "True" and ours_imported == "True", done.stdout
    else:
        assert (young, frozen, ours_imported) == ("700", "False", "False"), done.stdout
