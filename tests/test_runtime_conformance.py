"""Conformance: ``HandoffsRuntime`` behaves as autogen-core's ``SingleThreadedAgentRuntime`` where the stock
runtime's own tests do not look. Each behaviour runs on both runtimes, so any divergence fails here."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from autogen_core import (
    AgentId,
    DefaultInterventionHandler,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
    TypeSubscription,
    message_handler,
)

from handoffs_runtime import HandoffsRuntime, register_team, start_session
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.local import tool_call
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.teams.acme import acme_team

RUNTIMES = [SingleThreadedAgentRuntime, HandoffsRuntime]


@dataclass
class Ping:
    text: str


class Recorder(RoutedAgent):
    """Keeps every ``Ping`` it receives, with the context it came with."""

    built: ClassVar[list[AgentId]] = []

    def __init__(self) -> None:
        super().__init__("records pings")
        self.received: list[tuple[Ping, MessageContext]] = []
        Recorder.built.append(self.id)

    @message_handler
    async def on_ping(self, message: Ping, ctx: MessageContext) -> None:
        self.received.append((message, ctx))


async def _recorder(runtime: SingleThreadedAgentRuntime, agent_type: str = "recorder") -> None:
    await Recorder.register(runtime, agent_type, Recorder)


async def _received(
    runtime: SingleThreadedAgentRuntime, agent_id: AgentId
) -> list[tuple[Ping, MessageContext]]:
    agent = await runtime.try_get_underlying_agent_instance(agent_id, Recorder)
    return agent.received


@pytest.fixture(autouse=True)
def _forget_built() -> None:
    Recorder.built.clear()


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_publish_from_an_unregistered_sender_type_is_not_delivered(runtime_class: type) -> None:
    runtime = runtime_class(ignore_unhandled_exceptions=False)
    await _recorder(runtime)
    await runtime.add_subscription(TypeSubscription("news", "recorder"))
    runtime.start()
    await runtime.publish_message(Ping("hi"), TopicId("news", "s1"), sender=AgentId("ghost", "s1"))
    with pytest.raises(LookupError):
        await runtime.stop_when_idle()
    assert Recorder.built == []


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_publish_builds_a_registered_sender_that_was_not_built(runtime_class: type) -> None:
    runtime = runtime_class()
    await _recorder(runtime)
    await _recorder(runtime, "sender")
    await runtime.add_subscription(TypeSubscription("news", "recorder"))
    runtime.start()
    await runtime.publish_message(Ping("hi"), TopicId("news", "s1"), sender=AgentId("sender", "s1"))
    await runtime.stop_when_idle()
    assert sorted(str(a) for a in Recorder.built) == ["recorder/s1", "sender/s1"]


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_publish_to_the_sender_alone_checks_nothing(runtime_class: type) -> None:
    runtime = runtime_class(ignore_unhandled_exceptions=False)
    await _recorder(runtime)
    await runtime.add_subscription(TypeSubscription("news", "recorder"))
    runtime.start()
    await runtime.publish_message(Ping("me"), TopicId("news", "s1"), sender=AgentId("recorder", "s1"))
    await runtime.stop_when_idle()
    assert Recorder.built == []


class CountingHandler(DefaultInterventionHandler):
    def __init__(self) -> None:
        self.published = 0

    async def on_publish(self, message: Any, *, message_context: MessageContext) -> Any:
        self.published += 1
        return message


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_a_handler_appended_to_the_callers_list_later_runs(runtime_class: type) -> None:
    handlers: list[Any] = []
    runtime = runtime_class(intervention_handlers=handlers)
    await _recorder(runtime)
    await runtime.add_subscription(TypeSubscription("news", "recorder"))
    late = CountingHandler()
    handlers.append(late)
    runtime.start()
    await runtime.publish_message(Ping("hi"), TopicId("news", "s1"))
    await runtime.stop_when_idle()
    assert late.published == 1


class EveryTopic(TypeSubscription):
    """A ``TypeSubscription`` whose ``is_match`` accepts every topic type."""

    def is_match(self, topic_id: TopicId) -> bool:
        return True


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_a_type_subscription_subclass_with_its_own_is_match_is_honoured(runtime_class: type) -> None:
    runtime = runtime_class()
    await _recorder(runtime)
    await runtime.add_subscription(EveryTopic("news", "recorder"))
    runtime.start()
    await runtime.publish_message(Ping("a"), TopicId("news", "s1"))
    await runtime.publish_message(Ping("b"), TopicId("weather", "s1"))
    await runtime.stop_when_idle()
    texts = [m.text for m, _ in await _received(runtime, AgentId("recorder", "s1"))]
    assert texts == ["a", "b"]


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_message_ids_are_distinct_uuid_strings(runtime_class: type) -> None:
    runtime = runtime_class()
    await _recorder(runtime)
    await runtime.add_subscription(TypeSubscription("news", "recorder"))
    runtime.start()
    for i in range(3):
        await runtime.publish_message(Ping(str(i)), TopicId("news", "s1"))
    await runtime.stop_when_idle()
    ids = [ctx.message_id for _, ctx in await _received(runtime, AgentId("recorder", "s1"))]
    assert len(set(ids)) == 3
    assert all(uuid.UUID(i).version == 4 for i in ids)


class Relay(RoutedAgent):
    """Logs when it starts and ends handling each ``Ping``; an ``echo`` ping makes it publish two more at
    once (to another session's instance: a publish never returns to its sender)."""

    log: ClassVar[list[str]] = []

    def __init__(self) -> None:
        super().__init__("relays pings")

    @message_handler
    async def on_ping(self, message: Ping, ctx: MessageContext) -> None:
        Relay.log.append(f"start {message.text}")
        if message.text.startswith("echo"):
            for i in range(2):
                await self.publish_message(Ping(f"{message.text}.{i}"), TopicId("news", "s2"))
        await asyncio.sleep(0.01)
        Relay.log.append(f"end {message.text}")


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_deliveries_start_in_publish_order_and_stop_when_idle_waits_for_them(
    runtime_class: type,
) -> None:
    """What a handler publishes while messages wait in the queue starts after them, and so does what is
    published from outside; ``stop_when_idle`` waits for every handler to end."""
    Relay.log.clear()
    runtime = runtime_class()
    await Relay.register(runtime, "relay", Relay)
    await runtime.add_subscription(TypeSubscription("news", "relay"))
    for text in ("echo", "a", "b"):
        await runtime.publish_message(Ping(text), TopicId("news", "s1"))
    runtime.start()
    await runtime.publish_message(Ping("late"), TopicId("news", "s1"))
    await runtime.stop_when_idle()
    order = ["echo", "a", "b", "late", "echo.0", "echo.1"]
    assert Relay.log[:6] == [f"start {text}" for text in order]
    assert sorted(Relay.log[6:]) == sorted(f"end {text}" for text in order)


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_a_factory_is_called_and_checked_as_registered(runtime_class: type) -> None:
    """A coroutine factory is awaited; one that builds another class than registered fails the delivery."""
    runtime = runtime_class(ignore_unhandled_exceptions=False)

    async def build() -> Recorder:
        return Recorder()

    await runtime.register_factory("recorder", build, expected_class=Recorder)
    await runtime.register_factory("wrong", Relay, expected_class=Recorder)
    await runtime.add_subscription(TypeSubscription("news", "recorder"))
    await runtime.add_subscription(TypeSubscription("gossip", "wrong"))
    runtime.start()
    await runtime.publish_message(Ping("hi"), TopicId("news", "s1"))
    await runtime.stop_when_idle()
    assert [m.text for m, _ in await _received(runtime, AgentId("recorder", "s1"))] == ["hi"]
    runtime.start()
    await runtime.publish_message(Ping("hi"), TopicId("gossip", "s1"))
    with pytest.raises(ValueError, match="wrong type: expected Recorder, got Relay"):
        await runtime.stop_when_idle()


@pytest.mark.parametrize("runtime_class", RUNTIMES)
async def test_the_purchase_conversation_is_the_same(runtime_class: type) -> None:
    runtime = runtime_class()
    channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something", "yes", "y"]})
    models = {
        "TriageAgent": ScriptedModel([[tool_call("transfer_to_sales_agent", call_id="c1")]]),
        "SalesAgent": ScriptedModel(
            [
                "Rocket skates, $500?",
                [tool_call("execute_order", {"product": "rocket skates", "price": 500}, call_id="c2")],
                "Ordered.",
            ]
        ),
    }
    await register_team(runtime, acme_team(), model=ScriptedModel([]), models=models, channel=channel)
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    assert [(r.agent, r.text) for r in channel.replies("s1")] == [
        ("SalesAgent", "Rocket skates, $500?"),
        ("SalesAgent", "Ordered."),
    ]
