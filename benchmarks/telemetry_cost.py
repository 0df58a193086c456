"""What telemetry costs on the hot path: ``python -m benchmarks.telemetry_cost [--sessions N] [--rounds R]``.

Runs the benchmark scenario (see ``benchmarks/scenario.py``) on ``HandoffsRuntime`` with telemetry off
(nothing installed: nothing is wrapped) and on (the OpenTelemetry SDK, every span through a batch
processor to an exporter that drops it, metrics into an in-memory reader), interleaved for ``rounds``
rounds; prints the medians, as ``benchmarks.ablation`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
from collections.abc import Iterator, Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from handoffs_runtime import HandoffsRuntime
from handoffs_runtime.telemetry import Telemetry, install

from .ablation import _measure


class _Dropped(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@contextlib.contextmanager
def _off() -> Iterator[None]:
    install(None)
    yield


@contextlib.contextmanager
def _on() -> Iterator[None]:
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    install(Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider))
    try:
        yield
    finally:
        install(None)
        tracer_provider.shutdown()
        meter_provider.shutdown()


STEPS = {"telemetry off (default)": _off, "telemetry on (SDK, spans batched and dropped)": _on}


async def main(sessions: int, concurrent: int, rounds: int) -> None:
    seq: dict[str, list[float]] = {name: [] for name in STEPS}
    conc: dict[str, list[float]] = {name: [] for name in STEPS}
    long: dict[str, list[float]] = {name: [] for name in STEPS}
    for _ in range(rounds):
        for name, setting in STEPS.items():
            with setting():
                s, c, lc = await _measure(HandoffsRuntime, sessions, concurrent)
            seq[name].append(s)
            conc[name].append(c)
            long[name].append(lc)
    print(
        f"| telemetry | µs per session (median) | {concurrent} sessions at 50 ms: wall s | "
        "20-turn conversation: ms |"
    )
    print("|---|---:|---:|---:|")
    for name in STEPS:
        print(
            f"| {name} | {statistics.median(seq[name]):,.0f} | {statistics.median(conc[name]):.2f} | "
            f"{statistics.median(long[name]):.1f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.sessions, args.concurrent, args.rounds))
