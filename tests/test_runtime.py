"""HandoffsRuntime: the same conversations as autogen-core's runtime, and every observer still served."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from autogen_core import (
    AgentId,
    DefaultInterventionHandler,
    DefaultSubscription,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
    TypePrefixSubscription,
    TypeSubscription,
    message_handler,
)
from autogen_core._runtime_impl_helpers import SubscriptionManager
from autogen_core.logging import MessageEvent
from opentelemetry.trace import INVALID_SPAN, NoOpTracer, Span, TracerProvider

from handoffs_runtime import (
    HandoffEvent,
    HandoffsRuntime,
    OfflineModel,
    QueueChannel,
    register_team,
    start_session,
    tool_call,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.runtime.subscriptions import TypeIndexedSubscriptions
from handoffs_runtime.teams.acme import acme_team

PURCHASE = ["I want to buy something", "yes", "y"]


def _purchase_models() -> dict[str, ScriptedModel]:
    return {
        "TriageAgent": ScriptedModel([[tool_call("transfer_to_sales_agent", call_id="c1")]]),
        "SalesAgent": ScriptedModel(
            [
                "Rocket skates, $500?",
                [tool_call("execute_order", {"product": "rocket skates", "price": 500}, call_id="c2")],
                "Ordered.",
            ]
        ),
    }


async def _purchase(
    runtime: SingleThreadedAgentRuntime, sessions: tuple[str, ...] = ("s1",)
) -> ScriptedChannel:
    channel = ScriptedChannel.for_sessions({s: PURCHASE for s in sessions})
    models = _purchase_models()
    await register_team(runtime, acme_team(), model=ScriptedModel([]), models=models, channel=channel)
    runtime.start()
    for session in sessions:
        await start_session(runtime, session)
    await runtime.stop_when_idle()
    return channel


async def test_a_conversation_is_the_same_as_on_the_stock_runtime() -> None:
    runtime = HandoffsRuntime()
    ours = await _purchase(runtime)
    assert runtime._background_tasks == set()  # each delivery's task left as it ended
    stock = await _purchase(SingleThreadedAgentRuntime())
    assert ours.shown["s1"] == stock.shown["s1"]
    assert ours.asked["s1"] == stock.asked["s1"]
    assert [type(o).__name__ for o in ours.shown["s1"]].count("Reply") == 2


async def test_unobserved_by_default_and_observed_when_anyone_listens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = HandoffsRuntime()
    assert not runtime.observed()
    with caplog.at_level(logging.INFO, logger="autogen_core.events"):
        assert runtime.observed()
    assert not HandoffsRuntime(intervention_handlers=[DefaultInterventionHandler()]).observed()


async def test_event_log_records_every_publish_when_enabled(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="autogen_core.events")
    await _purchase(HandoffsRuntime())
    events = [r.msg for r in caplog.records if isinstance(r.msg, MessageEvent)]
    assert len(events) >= 10  # each publish is logged when sent and when delivered
    assert any("transfer_to_sales_agent" in str(e) for e in events)


async def test_no_event_log_records_when_nobody_listens(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="autogen_core")
    await _purchase(HandoffsRuntime())
    assert not [r for r in caplog.records if isinstance(r.msg, MessageEvent)]


class _RecordingTracer(NoOpTracer):
    def __init__(self, names: list[str]) -> None:
        self.names = names

    @contextlib.contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: Any, **kwargs: Any
    ) -> Iterator[Span]:
        self.names.append(name)
        yield INVALID_SPAN


class _RecordingProvider(TracerProvider):
    def __init__(self) -> None:
        self.names: list[str] = []

    def get_tracer(self, *args: Any, **kwargs: Any) -> NoOpTracer:
        return _RecordingTracer(self.names)


async def test_a_tracer_provider_gets_the_runtime_spans() -> None:
    provider = _RecordingProvider()
    runtime = HandoffsRuntime(tracer_provider=provider)
    assert runtime.observed()
    await _purchase(runtime)
    assert any(name.startswith("autogen publish") for name in provider.names), provider.names[:5]
    assert any(name.startswith("autogen process") for name in provider.names)


class _AuditHandoffEvents(DefaultInterventionHandler):
    """Sees every publish and rewrites handoff events (dropping one would hang autogen-core's
    ``stop_when_idle``: the stock runtime never marks a dropped message done)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_publish(self, message: Any, *, message_context: MessageContext) -> Any:
        self.seen.append(type(message).__name__)
        if isinstance(message, HandoffEvent):
            return message.model_copy(update={"reason": "audited"})
        return message


async def test_intervention_handlers_still_see_and_change_messages() -> None:
    audit = _AuditHandoffEvents()
    channel = await _purchase(HandoffsRuntime(intervention_handlers=[audit]))
    assert [e.reason for e in channel.handoffs("s1")] == ["audited"]
    assert audit.seen == [
        "UserLogin",
        "UserTask",
        "HandoffEvent",
        "UserTask",
        "AgentResponse",
        "UserTask",
        "AgentResponse",
    ]
    assert [r.text for r in channel.replies("s1")] == ["Rocket skates, $500?", "Ordered."]


class _Boom(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("fails on every message")

    @message_handler
    async def on_event(self, message: HandoffEvent, ctx: MessageContext) -> None:
        raise ValueError("boom")


def _event() -> HandoffEvent:
    return HandoffEvent(session_id="s1", source="a", target="b", tool="t")


async def test_a_failing_handler_is_logged_and_the_runtime_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    runtime = HandoffsRuntime()
    await _Boom.register(runtime, "boom", _Boom)
    await runtime.add_subscription(TypeSubscription("boom", "boom"))
    runtime.start()
    await runtime.publish_message(_event(), TopicId("boom", "s1"))
    await runtime.publish_message(_event(), TopicId("boom", "s2"))
    await runtime.stop_when_idle()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and "boom" in r.getMessage()]
    assert len(errors) == 2


async def test_unhandled_exceptions_surface_when_asked_to() -> None:
    runtime = HandoffsRuntime(ignore_unhandled_exceptions=False)
    await _Boom.register(runtime, "boom", _Boom)
    await runtime.add_subscription(TypeSubscription("boom", "boom"))
    runtime.start()
    await runtime.publish_message(_event(), TopicId("boom", "s1"))
    with pytest.raises(ValueError, match="boom"):
        await runtime.stop_when_idle()


async def test_a_failing_agent_factory_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> _Boom:
        raise RuntimeError("cannot build")

    runtime = HandoffsRuntime()
    await runtime.register_factory("boom", broken)
    await runtime.add_subscription(TypeSubscription("boom", "boom"))
    runtime.start()
    await runtime.publish_message(_event(), TopicId("boom", "s1"))
    await runtime.stop_when_idle()
    assert any("Error constructing agent" in r.getMessage() for r in caplog.records)


async def test_sessions_stay_apart_under_concurrency() -> None:
    sessions = tuple(f"s{i}" for i in range(20))
    channel = ScriptedChannel.for_sessions({s: ["I want to buy something"] for s in sessions})
    models = {
        "TriageAgent": ScriptedModel([[tool_call("transfer_to_sales_agent")]] * len(sessions)),
        "SalesAgent": ScriptedModel([lambda messages, tools: f"for {messages[1].content}"] * len(sessions)),
    }
    runtime = HandoffsRuntime()
    await register_team(runtime, acme_team(), model=ScriptedModel([]), models=models, channel=channel)
    runtime.start()
    for s in sessions:
        await start_session(runtime, s)
    await runtime.stop_when_idle()
    for s in sessions:
        assert [(e.source, e.target) for e in channel.handoffs(s)] == [("TriageAgent", "SalesAgent")]
        assert len(channel.replies(s)) == 1


# --- subscriptions -----------------------------------------------------------------------------------


def _subscriptions() -> list[Any]:
    return [
        TypeSubscription("Sales", "Sales"),
        TypePrefixSubscription("Sales:", "Sales"),
        TypeSubscription("User", "User"),
        DefaultSubscription(topic_type="User", agent_type="Audit"),
        TypeSubscription("HandoffEvents", "User"),
        TypeSubscription("Sales", "Audit"),
    ]


async def test_recipients_match_the_stock_subscription_manager_in_order() -> None:
    stock, ours = SubscriptionManager(), TypeIndexedSubscriptions()
    topics = [
        TopicId(t, s) for t in ("Sales", "Sales:direct", "User", "HandoffEvents", "Nobody") for s in "ab"
    ]
    subscriptions = _subscriptions()
    for subscription in subscriptions:
        await stock.add_subscription(subscription)
        await ours.add_subscription(subscription)
        for topic in topics:  # lookups between additions: a cached answer must not go stale
            assert await ours.get_subscribed_recipients(topic) == await stock.get_subscribed_recipients(topic)
    removed = subscriptions[0].id
    await stock.remove_subscription(removed)
    await ours.remove_subscription(removed)
    for topic in topics:
        assert await ours.get_subscribed_recipients(topic) == await stock.get_subscribed_recipients(topic)
    assert await ours.get_subscribed_recipients(TopicId("Sales", "a")) == [AgentId("Audit", "a")]


async def test_a_subscription_to_an_invalid_agent_type_fails_when_matched_as_on_the_stock_manager() -> None:
    for manager in (SubscriptionManager(), TypeIndexedSubscriptions()):
        await manager.add_subscription(TypeSubscription("User", "User"))
        await manager.add_subscription(TypePrefixSubscription("Sales", "not a type"))
        assert await manager.get_subscribed_recipients(TopicId("User", "a")) == [AgentId("User", "a")]
        with pytest.raises(ValueError, match="Invalid agent type"):
            await manager.get_subscribed_recipients(TopicId("Sales", "a"))


async def test_subscription_lookups_keep_nothing_per_session() -> None:
    ours = TypeIndexedSubscriptions()
    await ours.add_subscription(TypeSubscription("Sales", "Sales"))
    for i in range(100):
        await ours.get_subscribed_recipients(TopicId("Sales", f"s{i}"))
    assert not ours._seen_topics and not ours._subscribed_recipients
    with pytest.raises(ValueError, match="already exists"):
        await ours.add_subscription(TypeSubscription("Sales", "Sales"))


async def test_stop_cancels_a_turn_that_waits_for_the_person(caplog: pytest.LogCaptureFixture) -> None:
    """The stock runtime leaves it waiting forever (asyncio reports it destroyed when it is collected)."""
    runtime = HandoffsRuntime()
    channel = QueueChannel()
    await register_team(runtime, acme_team(), model=OfflineModel(), channel=channel)
    before = asyncio.all_tasks()
    runtime.start()
    await start_session(runtime, "s1")
    await channel.say("s1", "hello")
    await channel.next_reply("s1", timeout=10)  # now the person's turn: the UserAgent waits for a line
    waiting = set(runtime._background_tasks)
    await runtime.stop()
    assert asyncio.all_tasks() - before == set()
    assert [t.exception() for t in waiting if not t.cancelled()] == [None] * len(waiting)  # ended cleanly
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
