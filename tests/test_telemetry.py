"""Telemetry: the span tree of a turn, metrics, content opt-in, and that nothing is wrapped when off."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from autogen_core import AgentId
from autogen_core.models import ChatCompletionClient, UserMessage
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from handoffs_runtime import (
    AgentSpec,
    HandoffsRuntime,
    TeamPolicy,
    TeamSpec,
    openai_model,
    register_team,
    start_session,
    tool_call,
    worker_tools,
)
from handoffs_runtime.agents import AIAgent
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import UserTask
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.teams.acme import ITEM_ID, acme_team
from handoffs_runtime.telemetry import CAPTURE_CONTENT_ENV, Telemetry, install
from handoffs_runtime.telemetry.propagation import context_of, passed_on
from handoffs_runtime.topics import session_topic

from .fake_openai import fake_openai
from .support import ReportingModel


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
                            found.append(
                                (dict(point.attributes or {}), value if value is not None else point.count)
                            )
        return found


Usage = ReportingModel


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
        runtime,
        team,
        model=ScriptedModel([]),
        channel=channel,
        models=models or refund_models(),
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
    tokens = [
        (t.attributes["gen_ai.usage.input_tokens"], t.attributes["gen_ai.usage.output_tokens"]) for t in turns
    ]  # type: ignore[index]
    assert tokens == [(50 + 100, 5 + 10), (300, 30)]  # every agent's calls in the turn
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
    second = next(s for s in spans if s.name == "invoke_agent IssuesAndRepairsAgent")
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


def content_attributes(spans: list[ReadableSpan]) -> set[str]:
    content = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "handoffs.handoff.input",
    }
    return {k for s in spans for k in (s.attributes or {}) if k in content}


async def test_message_content_is_recorded_only_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    default = Recorder()
    await run_refund(default.telemetry)
    assert content_attributes(default.finished()) == set()
    words = "I want a refund for my shoes"
    assert not any(words in str(v) for s in default.finished() for v in (s.attributes or {}).values())

    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    opted = Recorder()
    await run_refund(opted.telemetry)
    spans = opted.finished()
    assert content_attributes(spans) == {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    refund = next(s for s in spans if s.name == "execute_tool execute_refund")
    assert refund.attributes is not None
    assert refund.attributes["gen_ai.tool.call.result"] == "success"
    assert words in str(next(s for s in spans if s.name == "turn").attributes)


async def test_metrics_count_turns_handoffs_tokens_tools_and_sessions() -> None:
    recorder = Recorder()
    await run_refund(recorder.telemetry)
    turns = recorder.points("handoffs.turns")
    assert sum(v for _, v in turns) == 2
    assert {a["handoffs.turn.replied_by"] for a, _ in turns} == {"IssuesAndRepairsAgent"}
    assert recorder.points("handoffs.handoffs") == [
        (
            {
                "handoffs.team": "acme",
                "handoffs.handoff.source": "TriageAgent",
                "handoffs.handoff.target": "IssuesAndRepairsAgent",
                "handoffs.handoff.outcome": "handoff",
            },
            1,
        )
    ]
    tokens = {a["gen_ai.token.type"]: v for a, v in recorder.points("gen_ai.client.token.usage")}
    assert tokens == {"input": 5, "output": 5}  # five model calls: a histogram point counts them
    assert sum(v for _, v in recorder.points("gen_ai.client.operation.duration")) == 5
    assert sorted((a["gen_ai.tool.name"], v) for a, v in recorder.points("handoffs.tool.calls")) == [
        ("execute_refund", 1),
        ("look_up_item", 1),
    ]
    assert recorder.points("handoffs.tool.errors") == []
    assert recorder.points("handoffs.sessions.active") == [({"handoffs.team": "acme"}, 0)]  # opened, ended


def token_sums(recorder: Recorder) -> dict[object, float]:
    data = recorder.metrics.get_metrics_data()
    assert data is not None
    return {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum
        for r in data.resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == "gen_ai.client.token.usage"
        for p in m.data.data_points
    }


async def test_token_histogram_sums_the_usage_every_reply_reports() -> None:
    recorder = Recorder()
    await run_refund(recorder.telemetry)
    assert token_sums(recorder) == {"input": 50 + 4 * 100, "output": 5 + 4 * 10}


async def test_refused_handoff_and_loop_stop_are_error_spans_with_the_reason() -> None:
    recorder = Recorder()
    models: dict[str, ChatCompletionClient] = {
        "TriageAgent": ScriptedModel(
            [
                [tool_call("transfer_to_sales_agent", "{not json")],
                [tool_call("transfer_to_issues_and_repairs")],
                [tool_call("transfer_to_issues_and_repairs")],
            ]
        ),
        "IssuesAndRepairsAgent": ScriptedModel([[tool_call("transfer_back_to_triage")]]),
    }
    channel = ScriptedChannel.for_sessions({"s1": ["help"]})
    runtime = HandoffsRuntime()
    await register_team(
        runtime,
        acme_team(policy=TeamPolicy(on_loop="message")),
        model=ScriptedModel([]),
        channel=channel,
        models=models,
        telemetry=recorder.telemetry,
    )
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    handoffs = [s for s in recorder.finished() if s.name.startswith("handoff ")]
    outcomes = [(s.name, s.attributes["handoffs.handoff.outcome"], s.status.status_code) for s in handoffs]  # type: ignore[index]
    assert outcomes == [
        ("handoff TriageAgent -> SalesAgent", "refused", StatusCode.ERROR),
        ("handoff TriageAgent -> IssuesAndRepairsAgent", "handoff", StatusCode.UNSET),
        ("handoff IssuesAndRepairsAgent -> TriageAgent", "handoff", StatusCode.UNSET),
        ("handoff TriageAgent -> IssuesAndRepairsAgent", "loop_stopped", StatusCode.ERROR),
    ]
    assert "not valid JSON" in (handoffs[0].status.description or "")
    assert "ping-pong" in (handoffs[-1].status.description or "")
    assert len({s.context.trace_id for s in recorder.finished()}) == 1  # all one turn
    assert recorder.points("handoffs.loop_stops") == [
        ({"handoffs.team": "acme", "gen_ai.agent.name": "TriageAgent"}, 1)
    ]


async def test_a_tool_that_raises_and_a_model_that_fails_are_error_spans() -> None:
    recorder = Recorder()
    models: dict[str, ChatCompletionClient] = {
        "TriageAgent": ScriptedModel([[tool_call("transfer_to_issues_and_repairs")]]),
        "IssuesAndRepairsAgent": ScriptedModel(
            # an ordinary tool: an irreversible one's bad proposal is refused before it runs (no span)
            [[tool_call("look_up_item", {"search_query": 3})], RuntimeError("model down"), "OK."]
        ),
    }
    channel = await run_refund(recorder.telemetry, models)
    assert channel.replies("s1")[0].text.startswith("Sorry, I'm having trouble")
    spans = recorder.finished()
    tool = next(s for s in spans if s.name == "execute_tool look_up_item")
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes is not None and tool.attributes["error.type"] == "ValidationError"
    # the error's message quotes the rejected input (content): without the opt-in only the type is kept
    assert tool.status.description == "ValidationError"
    assert "input_value" not in str([e.attributes for e in tool.events])
    assert [e.name for e in tool.events] == ["exception"]
    failed = [s for s in spans if s.name == "chat scripted" and s.status.status_code == StatusCode.ERROR]
    assert [s.attributes["error.type"] for s in failed] == ["RuntimeError"]  # type: ignore[index]
    assert recorder.points("handoffs.tool.errors") == [
        ({"gen_ai.tool.name": "look_up_item", "error.type": "ValidationError"}, 1)
    ]


async def test_a_malformed_or_oversized_trace_context_from_outside_starts_a_new_trace() -> None:
    assert context_of({"traceparent": "garbage"}) is None  # names no valid parent
    valid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert context_of({"traceparent": valid}) is not None
    assert passed_on({"traceparent": valid, "junk": "x" * 500}) == {"traceparent": valid}
    assert passed_on({"traceparent": "garbage"}) is None
    assert context_of({"traceparent": "00-" + "a" * 2000}) is None
    assert context_of({"traceparent": 5}) is None
    assert context_of(["traceparent"]) is None
    recorder = Recorder()
    runtime = HandoffsRuntime()
    channel = ScriptedChannel.for_sessions({"s1": []})
    await register_team(
        runtime,
        acme_team(),
        model=ScriptedModel(["Hello."]),
        channel=channel,
        with_user=False,
        telemetry=recorder.telemetry,
    )
    runtime.start()
    task = UserTask(context=[UserMessage(content="hi", source="User")], trace={"traceparent": "00-zz-zz-01"})
    await runtime.publish_message(task, session_topic("TriageAgent", "s1"))
    await runtime.stop_when_idle()
    [agent] = [s for s in recorder.finished() if s.name == "invoke_agent TriageAgent"]
    assert agent.parent is None


async def test_nothing_is_wrapped_when_telemetry_is_off() -> None:
    install(None)
    runtime = HandoffsRuntime()
    model = ScriptedModel(["Hello."])
    channel = ScriptedChannel.for_sessions({"s1": ["hi"]})
    built = await register_team(runtime, acme_team(), model=model, channel=channel)
    assert all(
        type(t).__module__.startswith("autogen_core") for b in built.values() for t in b.tools.values()
    )
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    agent = await runtime.try_get_underlying_agent_instance(AgentId("TriageAgent", "s1"), AIAgent)
    assert type(agent) is AIAgent
    assert agent._config.model is model


async def test_installed_telemetry_is_the_default_of_register_team() -> None:
    recorder = Recorder()
    install(recorder.telemetry)
    try:
        await run_refund(None)
    finally:
        install(None)
    assert sum(1 for s in recorder.finished() if s.name == "turn") == 2


async def test_a_worker_created_by_a_tool_is_traced_under_that_tool_call() -> None:
    recorder = Recorder()
    team = TeamSpec(
        name="lab",
        entry="Boss",
        agents=[AgentSpec("Boss", tools=worker_tools("Worker")), AgentSpec("Worker", kind="worker")],
    )
    models: dict[str, ChatCompletionClient] = {
        "Boss": ScriptedModel([[tool_call("create_worker", {"task_description": "compute 6*7"})], "42."]),
        "Worker": ScriptedModel(["42"]),
    }
    runtime = HandoffsRuntime()
    channel = ScriptedChannel.for_sessions({"s1": ["what is 6*7?"]})
    await register_team(
        runtime, team, model=ScriptedModel([]), channel=channel, models=models, telemetry=recorder.telemetry
    )
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    assert tree(recorder.finished()) == [
        "turn",
        "  invoke_agent Boss",
        "    chat scripted",
        "    execute_tool create_worker",
        "      invoke_agent Worker",
        "        chat scripted",
        "    chat scripted",
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_calls_through_the_real_openai_client_are_chat_spans_with_the_reported_tokens(
    stream: bool,
) -> None:
    recorder = Recorder()
    answers = [[("transfer_to_sales_agent", {})], "Rocket skates, $500. Interested?"]
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="test-key")
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        runtime = HandoffsRuntime()
        await register_team(
            runtime,
            acme_team(policy=TeamPolicy(stream=stream)),
            model=model,
            channel=channel,
            telemetry=recorder.telemetry,
        )
        runtime.start()
        await start_session(runtime, "s1")
        await runtime.stop_when_idle()
    assert [r.text for r in channel.replies("s1")] == ["Rocket skates, $500. Interested?"]
    chats = [s for s in recorder.finished() if s.name == "chat gpt-4o-mini"]
    assert [(s.attributes or {}).get("gen_ai.agent.name") for s in chats] == ["TriageAgent", "SalesAgent"]
    for span, finish in zip(chats, ("function_calls", "stop"), strict=True):
        attributes = span.attributes or {}
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert tuple(attributes["gen_ai.response.finish_reasons"]) == (finish,)  # type: ignore[arg-type]
        assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (10, 5)
