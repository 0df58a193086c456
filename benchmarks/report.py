"""The benchmark's outputs: a Markdown table, a JSON file and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .frameworks import OURS, PEERS


def ratio_to_fastest_peer(frameworks: dict[str, dict[str, Any]]) -> float | None:
    """Our median per-session time divided by the fastest peer's (the baseline counts as a peer)."""
    ours = frameworks.get(OURS, {}).get("sequential")
    peers = [
        float(frameworks[p]["sequential"]["median_us"])
        for p in PEERS
        if "sequential" in frameworks.get(p, {})
    ]
    if not ours or not peers:
        return None
    return float(ours["median_us"]) / min(peers)


def _cell(value: Any, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _sessions_per_s(run: dict[str, Any]) -> str:
    """The throughput figure of one gRPC run, whatever its key is called; the whole dict if none."""
    for key, value in run.items():
        if "per_s" in key and isinstance(value, int | float):
            return format(value, ",.0f")
    return json.dumps(run)


def markdown(results: dict[str, Any]) -> str:
    c = results["config"]
    lines = [
        f"| framework | µs per session (median) | {c['concurrent']} sessions at "
        f"{c['latency_s'] * 1000:.0f} ms: wall s | × ideal | peak RSS MiB per 1000 sessions |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in results["frameworks"].items():
        if "error" in r:
            lines.append(f"| {name} | {r['error']} | | | |")
            continue
        seq, conc = r.get("sequential", {}), r.get("concurrent", {})
        lines.append(
            f"| {name} | {_cell(seq.get('median_us'), ',.0f')} | {_cell(conc.get('wall_s'), '.2f')} | "
            f"{_cell(conc.get('x_ideal'), '.1f')} | {_cell(conc.get('peak_rss_mib_per_1000'), '.0f')} |"
        )
    ratio = results.get("ratio_to_fastest_peer")
    lines += ["", f"ratio to fastest peer: {_cell(ratio, '.2f')}"]
    context = results.get("context")
    if context:
        lines += [
            "",
            "| 20 turns, 5 handoffs | model calls | bytes sent | est. tokens | last call bytes |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {mode} | {v['model_calls']} | {v['bytes']:,} | {v['est_tokens']:,} | "
            f"{v['last_call_bytes']:,} |"
            for mode, v in context.items()
        ]
    grpc = results.get("grpc")
    if isinstance(grpc, dict) and grpc.get("runs"):
        lines += ["", "| gRPC workers | sessions per second |", "|---:|---:|"]
        lines += [f"| {w} | {_sessions_per_s(r)} |" for w, r in grpc["runs"].items()]
    elif isinstance(grpc, dict) and grpc.get("note"):
        lines += ["", f"gRPC: {grpc['note']}"]
    return "\n".join(lines)


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


def write_chart(results: dict[str, Any], path: Path) -> None:
    """Per-session time, concurrency against the ideal, memory, context sizes, and gRPC throughput."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = {n: r for n, r in results["frameworks"].items() if "sequential" in r and "concurrent" in r}
    names = list(measured)
    colours = ["tab:green" if n.startswith(OURS) else "tab:grey" for n in names]
    fig, axes = plt.subplots(2, 3, figsize=(20, 8), layout="constrained")
    panels = [
        (
            axes[0][0],
            [measured[n]["sequential"]["median_us"] for n in names],
            "µs per session (median, lower is better)",
        ),
        (
            axes[0][1],
            [measured[n]["concurrent"]["x_ideal"] for n in names],
            f"{results['config']['concurrent']} concurrent sessions: wall time ÷ ideal",
        ),
        (
            axes[0][2],
            [measured[n]["concurrent"]["peak_rss_mib_per_1000"] for n in names],
            "peak RSS growth, MiB per 1000 sessions",
        ),
    ]
    for ax, values, title in panels:
        ax.barh(names, values, color=colours)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:,.1f}" if v < 100 else f" {v:,.0f}", va="center", fontsize=8)
    ax = axes[1][0]
    context = results.get("context") or {}
    modes = list(context)
    tokens = [context[m]["est_tokens"] for m in modes]
    ax.barh(modes, tokens, color="tab:blue")
    ax.invert_yaxis()
    ax.set_title("estimated tokens sent, 20 turns with 5 handoffs", fontsize=10)
    for i, v in enumerate(tokens):
        ax.text(v, i, f" {v:,}", va="center", fontsize=8)
    _grpc_panel(axes[1][1], results.get("grpc"))
    axes[1][2].axis("off")
    fig.suptitle(f"handoffs benchmarks ({results['config']['mode']} mode, {results['machine']['cpus']} CPUs)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _grpc_panel(ax: Any, grpc: Any) -> None:
    """Sessions per second through the gRPC host by number of worker processes, when measured."""
    runs = grpc.get("runs") if isinstance(grpc, dict) else None
    if not runs:
        ax.axis("off")
        return
    workers = list(runs)
    rates = [float(_sessions_per_s(runs[w]).replace(",", "")) for w in workers]
    ax.bar([str(w) for w in workers], rates, color="tab:green")
    ax.set_title("gRPC host: sessions per second by worker processes", fontsize=10)
    ax.set_xlabel("worker processes")
    for i, v in enumerate(rates):
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
