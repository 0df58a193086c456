"""Telemetry: the span tree of a turn, metrics, content opt-in, and that nothing is wrapped when off."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from autogen_core.models import ChatCompletionClient, RequestUsage
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from handoffs_runtime import (
    HandoffsRuntime,
    ScriptedChannel,
    ScriptedModel,
    TeamPolicy,
    acme_team,
    register_team,
    start_session,
    tool_call,
)
from handoffs_runtime.agents import AIAgent
from handoffs_runtime.telemetry import CAPTURE_CONTENT_ENV, Telemetry, install
from handoffs_runtime.tools.acme import ITEM_ID


class Recorder:
    """A real SDK tracer and meter provider that keep everything in memory."""

    def __init__(self, *, capture_content: bool | None = None) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.telemetry = Telemetry(
            tracer_provider=tracer_provider,
            meter_provider=MeterProvider(metric_readers=[self.metrics]),
            capture_content=capture_content,
        )

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[tuple[dict[str, object], float]]:
        """(attributes, value) of every data point of the metric ``name`` (sum, or histogram count)."""
        data = self.metrics.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            value = getattr(point, "value", None)
                            found.append((dict(point.attributes or {}), value if value is not None else point.count))
        return found


class Usage(ScriptedModel):
    """A scripted model whose replies report token usage."""

    def __init__(self, steps: list[object], prompt: int = 100, completion: int = 10) -> None:
        super().__init__(steps)  # type: ignore[arg-type]
        self.usage = RequestUsage(prompt_tokens=prompt, completion_tokens=completion)

    async def create(self, *args: object, **kwargs: object):  # type: ignore[no-untyped-def,override]
        result = await super().create(*args, **kwargs)  # type: ignore[arg-type]
        return result.model_copy(update={"usage": self.usage})


def refund_models() -> dict[str, ChatCompletionClient]:
    return {
        "TriageAgent": Usage([[tool_call("transfer_to_issues_and_repairs")]], 50, 5),
        "IssuesAndRepairsAgent": Usage(
            [
                "Sorry to hear that. Shall I refund your shoes?",
                [tool_call("look_up_item", {"search_query": "shoes"})],
                [tool_call("execute_refund", {"item_id": ITEM_ID, "reason": "too small"})],
                "Your refund is done.",
            ]
        ),
    }


async def run_refund(
    telemetry: Telemetry | None, models: Mapping[str, ChatCompletionClient] | None = None, **policy: object
) -> ScriptedChannel:
    channel = ScriptedChannel.for_sessions({"s1": ["I want a refund for my shoes", "yes"]})
    runtime = HandoffsRuntime()
    team = acme_team(policy=TeamPolicy(**policy)) if policy else acme_team()  # type: ignore[arg-type]
    await register_team(
        runtime, team, model=ScriptedModel([]), channel=channel, models=models or refund_models(),
        telemetry=telemetry,
    )
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    return channel


def tree(spans: list[ReadableSpan]) -> list[str]:
    """The spans as an indented outline, children in start order."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(span)

    def walk(parent: int | None, depth: int) -> Iterator[str]:
        for span in sorted(by_parent.get(parent, []), key=lambda s: s.start_time or 0):
            yield "  " * depth + span.name
            yield from walk(span.context.span_id, depth + 1)

    return list(walk(None, 0))


async def test_refund_path_is_one_trace_per_turn_with_a_span_per_agent_model_tool_and_handoff() -> None:
    recorder = Recorder()
    await run_refund(recorder.telemetry)
    spans = recorder.finished()
    assert tree(spans) == [
        "turn",
        "  invoke_agent TriageAgent",
        "    chat scripted",
        "    handoff TriageAgent -> IssuesAndRepairsAgent",
        "  invoke_agent IssuesAndRepairsAgent",
        "    chat scripted",
        "turn",
        "  invoke_agent IssuesAndRepairsAgent",
        "    chat scripted",
        "    execute_tool look_up_item",
        "    chat scripted",
        "    execute_tool execute_refund",
        "    chat scripted",
    ]
    turns = [s for s in spans if s.name == "turn"]
    assert len({s.context.trace_id for s in spans}) == 2  # one trace per turn
    for turn in turns:
        assert turn.parent is None
        assert turn.attributes is not None
        assert turn.attributes["gen_ai.conversation.id"] == "s1"
        assert turn.attributes["handoffs.team"] == "acme"
        assert turn.attributes["handoffs.turn.replied_by"] == "IssuesAndRepairsAgent"
    assert [t.attributes["handoffs.turn.agent"] for t in turns] == [  # type: ignore[index]
        "TriageAgent",
        "IssuesAndRepairsAgent",
    ]
    [handoff] = [s for s in spans if s.name.startswith("handoff")]
    assert handoff.attributes == {
        "gen_ai.conversation.id": "s1",
        "handoffs.team": "acme",
        "handoffs.handoff.source": "TriageAgent",
        "handoffs.handoff.target": "IssuesAndRepairsAgent",
        "handoffs.handoff.tool": "transfer_to_issues_and_repairs",
        "handoffs.handoff.outcome": "handoff",
        "handoffs.hop": 1,
    }
    second = [s for s in spans if s.name == "invoke_agent IssuesAndRepairsAgent"][0]
    assert second.attributes is not None and second.attributes["handoffs.hop"] == 1
    chat = next(s for s in spans if s.name == "chat scripted")
    assert chat.attributes is not None
    assert {k: chat.attributes[k] for k in chat.attributes if k != "gen_ai.response.finish_reasons"} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "handoffs_runtime",
        "gen_ai.request.model": "scripted",
        "gen_ai.response.model": "scripted",
        "gen_ai.agent.name": "TriageAgent",
        "gen_ai.conversation.id": "s1",
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 5,
    }
    assert tuple(chat.attributes["gen_ai.response.finish_reasons"]) == ("function_calls",)  # type: ignore[arg-type]
    tool = next(s for s in spans if s.name == "execute_tool execute_refund")
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.name"] == "execute_refund"
    assert tool.status.status_code == StatusCode.UNSET
