"""Turning telemetry on the standard way: the ``OTEL_*`` environment variables, or ``--trace``.

- ``OTEL_TRACES_EXPORTER``: ``console`` (each turn as a short tree on stderr, see :mod:`.summary`),
  ``otlp`` or ``none`` (comma-separated for several); ``--trace`` overrides it. With neither,
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) alone means ``otlp``; with nothing set,
  telemetry stays off.
- ``OTEL_EXPORTER_OTLP_PROTOCOL`` (or ``..._TRACES_PROTOCOL``): ``http/protobuf`` (default) or ``grpc``;
  the exporters read the endpoint, headers and timeouts from the standard variables themselves.
- ``OTEL_METRICS_EXPORTER``: ``console``, ``otlp`` or ``none``; by default metrics go over OTLP when
  traces do, and nowhere otherwise.
- ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the process; ``OTEL_SDK_DISABLED=true``
  turns everything off.

The providers are this package's own (not OpenTelemetry's globals), so autogen-core's per-message spans
stay off and ``HandoffsRuntime`` keeps its short path; they flush when the process exits.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handoffs_runtime.errors import TelemetryConfigError

if TYPE_CHECKING:
    from handoffs_runtime.telemetry.core import Telemetry

EXPORTERS = ("console", "otlp")
Write = Callable[[str], None]


def _names(value: str, variable: str) -> list[str]:
    names = [n.strip().lower() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in (*EXPORTERS, "none")]
    if unknown:
        raise TelemetryConfigError(
            f"{variable}={value!r}: unknown exporter {', '.join(unknown)}; use console, otlp or none"
        )
    return [n for n in names if n != "none"]


def _protocol(signal: str) -> str:
    value = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if value not in ("http/protobuf", "grpc"):
        raise TelemetryConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={value!r} is not supported; use http/protobuf or grpc"
        )
    return value


def telemetry_from_environment(
    trace: str | None = None, *, service_name: str = "handoffs", summary: Write | None = None
) -> Telemetry | None:
    """A ``Telemetry`` configured by ``trace`` (``console``/``otlp``) and the ``OTEL_*`` variables, or
    ``None`` when nothing asks for it. ``TelemetryConfigError`` for a bad setting or a missing extra.

    The ``console`` exporter writes each turn as a short tree (:mod:`.summary`) to ``summary`` (default:
    stderr), when the turn ends."""
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if trace is not None:
        traces = _names(trace, "--trace")
    elif "OTEL_TRACES_EXPORTER" in env:
        traces = _names(env["OTEL_TRACES_EXPORTER"], "OTEL_TRACES_EXPORTER")
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        traces = ["otlp"]
    else:
        traces = []
    if "OTEL_METRICS_EXPORTER" in env:
        metric_exporters = _names(env["OTEL_METRICS_EXPORTER"], "OTEL_METRICS_EXPORTER")
    else:
        metric_exporters = ["otlp"] if "otlp" in traces else []
    if not traces and not metric_exporters:
        return None
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TelemetryConfigError(
            "tracing needs the OpenTelemetry SDK: pip install 'handoffs-runtime[otel]'"
        ) from exc
    from handoffs_runtime.telemetry.core import Telemetry

    resource = Resource.create({} if env.get("OTEL_SERVICE_NAME") else {"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource)
    for name in traces:
        if name == "console":
            from handoffs_runtime.telemetry.summary import TurnSummary

            tracer_provider.add_span_processor(TurnSummary(summary))
        else:
            tracer_provider.add_span_processor(BatchSpanProcessor(_otlp_span_exporter()))
    readers: list[MetricReader] = [
        PeriodicExportingMetricReader(_metric_exporter(name)) for name in metric_exporters
    ]
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


def _otlp_span_exporter() -> Any:
    try:
        if _protocol("TRACES") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPExporter

        return HTTPExporter()
    except ImportError as exc:
        raise TelemetryConfigError(
            "the OTLP exporter is missing: pip install 'handoffs-runtime[otel]'"
        ) from exc


def _metric_exporter(name: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    try:
        if _protocol("METRICS") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

            return OTLPMetricExporter()
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HTTPExporter

        return HTTPExporter()
    except ImportError as exc:
        raise TelemetryConfigError(
            "the OTLP exporter is missing: pip install 'handoffs-runtime[otel]'"
        ) from exc


def add_trace_option(parser: argparse.ArgumentParser) -> None:
    """``--trace console|otlp`` on a subcommand that runs agents."""
    parser.add_argument(
        "--trace",
        choices=EXPORTERS,
        help="show each turn's spans as a short tree on stderr (console), or send traces to an OTLP "
        "endpoint (otlp; $OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318); default: "
        "$OTEL_TRACES_EXPORTER",
    )


def install_from_options(args: argparse.Namespace, service_name: str, summary: Write | None = None) -> None:
    """Install the telemetry that ``--trace`` and the environment ask for, if any, for this process;
    ``summary`` writes what ``--trace console`` shows (default: stderr)."""
    from handoffs_runtime.telemetry.installed import install

    telemetry = telemetry_from_environment(
        getattr(args, "trace", None), service_name=service_name, summary=summary
    )
    install(telemetry)
    exporters = logging.getLogger("opentelemetry")
    if telemetry is not None and exporters.getEffectiveLevel() > logging.ERROR:
        exporters.setLevel(logging.ERROR)  # an unreachable collector is said, not silently waited for
