"""``--trace console``: each turn written once, as a short tree, when it ends; a worker's part likewise."""

from __future__ import annotations

import re

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from handoffs_runtime.telemetry import Telemetry
from handoffs_runtime.telemetry.summary import TurnSummary

from .test_telemetry import run_refund

DURATION = r"\d+\.\d"


def _summary() -> tuple[TracerProvider, list[str]]:
    written: list[str] = []
    provider = TracerProvider()
    provider.add_span_processor(TurnSummary(written.append))
    return provider, written


async def test_each_turn_is_written_once_as_a_tree_when_it_ends() -> None:
    provider, written = _summary()
    await run_refund(Telemetry(tracer_provider=provider))
    assert len(written) == 2  # one per turn, whole
    first = written[0].splitlines()
    pattern = [
        rf"turn  {DURATION}  gen_ai\.conversation\.id=s1 team=acme turn\.agent=TriageAgent "
        r"turn\.replied_by=IssuesAndRepairsAgent input_tokens=150 output_tokens=15",
        rf"  invoke_agent TriageAgent  {DURATION}",
        rf"    chat scripted  {DURATION}  finish_reasons=\[function_calls\] input_tokens=50 output_tokens=5",
        rf"    handoff TriageAgent -> IssuesAndRepairsAgent  {DURATION}  "
        r"tool=transfer_to_issues_and_repairs hop=1",
        rf"  invoke_agent IssuesAndRepairsAgent  {DURATION}  hop=1",
        rf"    chat scripted  {DURATION}  finish_reasons=\[stop\] input_tokens=100 output_tokens=10",
    ]
    assert len(first) == len(pattern)
    for line, expected in zip(first, pattern, strict=True):
        assert re.fullmatch(expected, line), line
    second = [line.strip().split("  ")[0] for line in written[1].splitlines()]
    assert second == [
        "turn",
        "invoke_agent IssuesAndRepairsAgent",
        "chat scripted",
        "execute_tool look_up_item",
        "chat scripted",
        "execute_tool execute_refund",
        "chat scripted",
    ]
    assert "shoes" not in "".join(written)  # no content: that needs the opt-in and a real backend


def test_a_workers_part_is_written_when_its_handling_ends_and_errors_say_why() -> None:
    """On a worker the turn is in another process: the agent's handling is the root written here."""
    provider, written = _summary()
    tracer = provider.get_tracer("test")
    remote = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    parent = trace.set_span_in_context(NonRecordingSpan(remote))
    with tracer.start_as_current_span("invoke_agent SalesAgent", parent, attributes={"handoffs.hop": 1}):
        with tracer.start_as_current_span("execute_tool execute_order") as tool:
            tool.set_status(Status(StatusCode.ERROR, "price must be positive\nsecond line"))
        assert written == []  # the handling is still open
    [tree] = written
    lines = tree.splitlines()
    assert re.fullmatch(rf"invoke_agent SalesAgent  {DURATION}  hop=1", lines[0])
    assert re.fullmatch(
        rf"  execute_tool execute_order  {DURATION}  ERROR price must be positive second line", lines[1]
    )
