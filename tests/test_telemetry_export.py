"""Telemetry turned on the standard way: real processes exporting to a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffs_runtime import QueueChannel
from handoffs_runtime.distributed import FrontEnd
from handoffs_runtime.errors import TelemetryConfigError
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.telemetry import Telemetry, install, telemetry_from_environment

from .distributed_support import TIMEOUT, Process, start_host, start_worker
from .otlp_receiver import ReceivedSpan, otlp_receiver

OTEL_VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_SDK_DISABLED",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def chat(stdin: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HANDOFFS_"))}
    return subprocess.run(
        [sys.executable, "-m", "handoffs_runtime", "chat", "--store", ":memory:", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def test_a_cli_chat_sends_its_spans_and_metrics_where_the_standard_variables_say() -> None:
    with otlp_receiver() as (endpoint, received):
        result = chat(
            "I want a refund for my shoes\nyes\nexit\n",
            {
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                "OTEL_SERVICE_NAME": "acme-support",
            },
        )
        assert result.returncode == 0, result.stderr
        spans = received.wait_for(2, {"turn"})
        metric_names = set(received.metric_names)
    names = [s.name for s in spans]
    assert names.count("turn") == 2
    for expected in (
        "invoke_agent TriageAgent",
        "invoke_agent IssuesAndRepairsAgent",
        "chat offline",
        "handoff TriageAgent -> IssuesAndRepairsAgent",
        "execute_tool look_up_item",
        "execute_tool execute_refund",
    ):
        assert expected in names
    assert {s.service for s in spans} == {"acme-support"}
    turns = {s.span_id: s for s in spans if s.name == "turn"}
    for agent in (s for s in spans if s.name.startswith("invoke_agent")):
        assert agent.parent_span_id in turns  # every agent's handling hangs under its turn
        assert turns[agent.parent_span_id].trace_id == agent.trace_id
    assert {"handoffs.turns", "handoffs.handoffs", "gen_ai.client.operation.duration"} <= metric_names
    assert "shoes" not in str([s.attributes for s in spans])  # no content unless opted in


def test_trace_console_writes_spans_to_stderr_and_leaves_the_conversation_on_stdout() -> None:
    result = chat("hi\nexit\n", {}, "--trace", "console")
    assert result.returncode == 0, result.stderr
    assert '"name": "turn"' in result.stderr
    assert '"name"' not in result.stdout  # the conversation stays readable


def test_an_unknown_exporter_is_one_clear_error_before_the_chat_starts() -> None:
    result = chat("hi\n", {"OTEL_TRACES_EXPORTER": "jaeger"})
    assert result.returncode == 2
    assert (
        "OTEL_TRACES_EXPORTER='jaeger': unknown exporter jaeger; use console, otlp or none" in result.stderr
    )
    assert "session" not in result.stdout


def test_nothing_configured_means_no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert telemetry_from_environment() is None
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert telemetry_from_environment() is None
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert telemetry_from_environment() is None
    monkeypatch.delenv("OTEL_SDK_DISABLED")
    assert isinstance(telemetry_from_environment(), Telemetry)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(TelemetryConfigError, match="http/json"):
        telemetry_from_environment("otlp")


async def test_one_turn_across_a_grpc_host_and_two_workers_is_one_trace(
    processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    with otlp_receiver() as (endpoint, received):
        for name, value in {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        }.items():
            monkeypatch.setenv(name, value)  # the worker processes inherit these
        host, address = await start_host()
        processes.append(host)
        triage = await start_worker(address, "TriageAgent")
        issues = await start_worker(address, "IssuesAndRepairsAgent,SalesAgent,HumanAgent")
        processes += [triage, issues]
        channel = QueueChannel()
        install(Telemetry(tracer_provider=provider))
        try:
            async with FrontEnd(acme_team(), address, channel) as front:
                await front.open("s1")
                await channel.say("s1", "I want a refund for my shoes")
                reply = await channel.next_reply("s1", TIMEOUT)
                assert reply.agent == "IssuesAndRepairsAgent"
                await channel.say("s1", "exit")
        finally:
            install(None)
        assert await triage.stop() == 0 and await issues.stop() == 0  # a clean exit flushes the exporters
        remote = await asyncio.to_thread(
            received.wait_for, 2, {"invoke_agent TriageAgent", "invoke_agent IssuesAndRepairsAgent"}
        )
    [turn] = [s for s in spans.get_finished_spans() if s.name == "turn"]
    trace_id = f"{turn.context.trace_id:032x}"
    turn_id = f"{turn.context.span_id:016x}"
    agents: dict[str, ReceivedSpan] = {s.name: s for s in remote if s.name.startswith("invoke_agent")}
    assert set(agents) == {"invoke_agent TriageAgent", "invoke_agent IssuesAndRepairsAgent"}
    for span in agents.values():
        assert (span.trace_id, span.parent_span_id, span.service) == (trace_id, turn_id, "handoffs-worker")
    on_issues = [s for s in remote if s.name == "chat offline" and s.trace_id == trace_id]
    assert {s.attributes["gen_ai.agent.name"] for s in on_issues} == {"TriageAgent", "IssuesAndRepairsAgent"}


def test_an_unreachable_collector_is_reported_and_the_chat_still_ends_cleanly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the chat starts: nobody listens there
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    result = chat("hi\nexit\n", env, "--trace", "otlp")
    assert result.returncode == 0
    assert "Failed to export spans" in result.stderr
    assert "ACME assistant ›" in result.stdout
