"""Handoffs as data: names, schemas, callbacks, validation, filters, nesting, enabling, loops, events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from autogen_core import (
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TypeSubscription,
    message_handler,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from pydantic import BaseModel

from handoffs_runtime import (
    AgentSpec,
    HandoffContext,
    HandoffEvent,
    HandoffInputData,
    SessionContext,
    SQLiteSessionStore,
    TeamConfigError,
    TeamPolicy,
    TeamSpec,
    build_team,
    handoff,
    human_agent,
    keep_last_messages,
    register_team,
    remove_all_tools,
    start_session,
    tool_call,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.handoffs.filters import HISTORY_END, HISTORY_START, nest_history
from handoffs_runtime.handoffs.policy import LOOP_MESSAGE
from handoffs_runtime.messages import event_json
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.team.graph import team_mermaid
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.topics import HANDOFF_EVENTS

from .support import run_sessions, texts


class Escalation(BaseModel):
    reason: str
    priority: int = 1


def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def two_agents(*handoffs: Any, policy: TeamPolicy | None = None, **kw: Any) -> TeamSpec:
    return TeamSpec(
        name="t",
        entry="Front",
        policy=policy or TeamPolicy(),
        agents=[
            AgentSpec("Front", tools=[lookup], handoffs=list(handoffs) or ["BillingDesk"], **kw),
            AgentSpec("BillingDesk", description="Invoices and payments."),
        ],
    )


# --- names and schemas ---


def test_default_tool_name_and_description_come_from_the_target() -> None:
    built = build_team(two_agents())
    [h] = built["Front"].handoffs.values()
    assert h.tool_name == "transfer_to_billing_desk"
    assert h.schema["description"] == "Hand the conversation to BillingDesk. Invoices and payments."
    assert h.schema["parameters"] == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert h.schema.get("strict") is True


def test_overrides_and_input_type_shape_the_schema() -> None:
    h = handoff(
        "BillingDesk",
        tool_name_override="escalate",
        tool_description_override="Escalate.",
        input_type=Escalation,
    )
    [resolved] = build_team(two_agents(h))["Front"].handoffs.values()
    assert resolved.schema["name"] == "escalate"
    assert resolved.schema["description"] == "Escalate."
    params = resolved.schema["parameters"]
    assert params["required"] == ["reason", "priority"]  # strict: every property is required
    assert params["additionalProperties"] is False and resolved.schema.get("strict") is True


async def test_tools_and_schemas_offered_to_the_model() -> None:
    front = ScriptedModel(["hi"])
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    await run_sessions(
        two_agents(handoff("BillingDesk", input_type=Escalation)), channel, models={"Front": front}
    )
    _, tools = front.calls[0]
    assert [t["name"] for t in tools] == ["lookup", "transfer_to_billing_desk"]
    assert tools[1]["parameters"]["properties"]["reason"]["type"] == "string"


# --- on_handoff and input_type ---


async def test_on_handoff_sync_without_input_gets_the_context() -> None:
    seen: list[HandoffContext] = []
    front = ScriptedModel([[tool_call("transfer_to_billing_desk")]])
    billing = ScriptedModel(["billing here"])
    channel = ScriptedChannel.for_sessions({"s9": ["my invoice"]})
    team = two_agents(handoff("BillingDesk", on_handoff=seen.append))
    await run_sessions(team, channel, models={"Front": front, "BillingDesk": billing}, sessions=["s9"])
    [ctx] = seen
    assert (ctx.session_id, ctx.source, ctx.target) == ("s9", "Front", "BillingDesk")
    assert isinstance(ctx.conversation[0], UserMessage) and ctx.conversation[0].content == "my invoice"


async def test_on_handoff_async_receives_the_validated_input_and_the_event_carries_it() -> None:
    seen: list[Escalation] = []

    async def on_escalation(ctx: HandoffContext, data: Escalation) -> None:
        seen.append(data)

    front = ScriptedModel(
        [[tool_call("transfer_to_billing_desk", {"reason": "double charge", "priority": 3})]]
    )
    billing = ScriptedModel(["on it"])
    channel = ScriptedChannel.for_sessions({"s1": ["charged twice"]})
    team = two_agents(handoff("BillingDesk", input_type=Escalation, on_handoff=on_escalation))
    store = SQLiteSessionStore(":memory:")
    await run_sessions(team, channel, models={"Front": front, "BillingDesk": billing}, store=store)
    assert seen == [Escalation(reason="double charge", priority=3)]
    [event] = [e.event() for e in await store.entries("s1") if e.kind == "handoff"]
    assert event is not None and event.arguments == {"reason": "double charge", "priority": 3}
    [line] = channel.handoffs("s1")
    assert "arguments" not in event_json(line)  # the person never sees raw tool data
    await store.close()


async def test_invalid_handoff_input_names_the_field_and_no_handoff_happens() -> None:
    calls: list[Any] = []
    front = ScriptedModel(
        [
            [tool_call("transfer_to_billing_desk", {"priority": "urgent"})],
            "Could you tell me why you want billing?",
        ]
    )
    channel = ScriptedChannel.for_sessions({"s1": ["billing please"]})
    team = two_agents(handoff("BillingDesk", input_type=Escalation, on_handoff=lambda c, d: calls.append(d)))
    await run_sessions(team, channel, models={"Front": front})
    last = front.calls[1][0][-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    [result] = last.content
    assert result.is_error and "reason:" in result.content and "priority:" in result.content
    assert calls == []
    assert texts(channel) == [("Front", "Could you tell me why you want billing?")]
    assert [e.outcome for e in channel.handoffs("s1")] == ["refused"]


async def test_a_failing_on_handoff_keeps_the_conversation_with_the_source() -> None:
    def broken(ctx: HandoffContext) -> None:
        raise RuntimeError("CRM down")

    front = ScriptedModel([[tool_call("transfer_to_billing_desk")]])
    channel = ScriptedChannel.for_sessions({"s1": ["billing"]})
    await run_sessions(
        two_agents(handoff("BillingDesk", on_handoff=broken)), channel, models={"Front": front}
    )
    assert [r.agent for r in channel.replies("s1")] == ["Front"]
    [event] = channel.handoffs("s1")
    assert event.outcome == "refused" and "CRM down" in event.reason


# --- input filters and nesting ---


async def received_by_billing(team: TeamSpec, front_steps: list[Any]) -> Sequence[LLMMessage]:
    front = ScriptedModel(front_steps)
    billing = ScriptedModel(["ok"])
    channel = ScriptedChannel.for_sessions({"s1": ["look up my invoice"]})
    await run_sessions(team, channel, models={"Front": front, "BillingDesk": billing})
    messages, _ = billing.calls[0]
    return messages


LOOKUP_THEN_HANDOFF = [[tool_call("lookup", {"query": "invoice"})], [tool_call("transfer_to_billing_desk")]]


async def test_without_a_filter_the_next_agent_sees_everything() -> None:
    messages = await received_by_billing(two_agents(), LOOKUP_THEN_HANDOFF)
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
    ]


async def test_remove_all_tools_drops_tool_calls_and_results() -> None:
    team = two_agents(handoff("BillingDesk", input_filter=remove_all_tools))
    messages = await received_by_billing(team, LOOKUP_THEN_HANDOFF)
    assert [type(m).__name__ for m in messages] == ["SystemMessage", "UserMessage"]


async def test_keep_last_messages_never_starts_on_an_orphan_tool_result() -> None:
    team = two_agents(handoff("BillingDesk", input_filter=keep_last_messages(3)))
    messages = await received_by_billing(team, LOOKUP_THEN_HANDOFF)
    # [user, call, result, handoff call, result]: the last 3 would start on a result, so the cut skips it
    assert [type(m).__name__ for m in messages[1:]] == ["AssistantMessage", "FunctionExecutionResultMessage"]
    assert "Transferred to BillingDesk" in str(messages[-1].content)


def test_keep_last_messages_keeps_n_of_the_history() -> None:
    history = tuple(UserMessage(content=str(i), source="User") for i in range(5))
    data = HandoffInputData(history[:3], history[3:], "A", "B", "s")
    assert [m.content for m in keep_last_messages(2)(data).all_items] == ["3", "4"]
    assert keep_last_messages(0)(data).history == ()
    with pytest.raises(ValueError):
        keep_last_messages(-1)


async def test_team_wide_filter_applies_and_a_handoff_filter_overrides_it() -> None:
    policy = TeamPolicy(input_filter=remove_all_tools)
    messages = await received_by_billing(two_agents(policy=policy), LOOKUP_THEN_HANDOFF)
    assert [type(m).__name__ for m in messages] == ["SystemMessage", "UserMessage"]

    def tag(data: HandoffInputData) -> HandoffInputData:
        return data.replace(history=(UserMessage(content="tagged", source="User"),))

    overridden = two_agents(handoff("BillingDesk", input_filter=tag), policy=policy)
    messages = await received_by_billing(overridden, LOOKUP_THEN_HANDOFF)
    assert [getattr(m, "content", None) for m in messages[:2]][1] == "tagged"
    assert len(messages) == 6  # system, tagged, and this turn's two calls with their results


def chain_team(policy: TeamPolicy) -> TeamSpec:
    return TeamSpec(
        name="chain",
        entry="A",
        policy=policy,
        agents=[
            AgentSpec("A", handoffs=["B"]),
            AgentSpec("B", handoffs=["C", "A"]),
            AgentSpec("C", handoffs=["D", "B"]),
            AgentSpec("D", handoffs=["C"]),
        ],
    )


async def test_nested_history_over_two_and_three_handoffs() -> None:
    models = {
        "A": ScriptedModel([[tool_call("transfer_to_b")]]),
        "B": ScriptedModel([[tool_call("transfer_to_c")]]),
        "C": ScriptedModel([[tool_call("transfer_to_d")]]),
        "D": ScriptedModel(["D answers"]),
    }
    channel = ScriptedChannel.for_sessions({"s1": ["I need D"]})
    await run_sessions(chain_team(TeamPolicy(nest_handoff_history=True)), channel, models=models)
    for agent, handoffs_so_far in (("C", 2), ("D", 3)):
        messages, _ = models[agent].calls[0]  # type: ignore[attr-defined]
        system, block, latest = messages
        assert isinstance(system, SystemMessage)
        assert isinstance(block, AssistantMessage) and isinstance(block.content, str)
        assert block.content.startswith(HISTORY_START) and block.content.endswith(HISTORY_END)
        assert block.content.count(HISTORY_START) == 1  # re-nested, not nested inside itself
        assert block.content.count("User: I need D") == 1
        assert block.content.count("called transfer_to_") == handoffs_so_far
        assert isinstance(latest, UserMessage) and latest.content == "I need D"
    assert texts(channel) == [("D", "D answers")]


def test_nesting_markers_and_history_mapper_are_configurable() -> None:
    messages: list[LLMMessage] = [
        UserMessage(content="hi", source="User"),
        AssistantMessage(content="yo", source="A"),
    ]
    nested = nest_history(
        messages, source="A", mapper=lambda ms: f"{len(ms)} messages", start="<H>", end="</H>"
    )
    assert nested[0].content == "<H>\n2 messages\n</H>"
    assert not any(isinstance(m, SystemMessage) for m in nested)


async def test_per_handoff_nesting_overrides_the_team_default() -> None:
    team = two_agents(handoff("BillingDesk", nest_handoff_history=True))
    messages = await received_by_billing(team, LOOKUP_THEN_HANDOFF)
    assert [type(m).__name__ for m in messages] == ["SystemMessage", "AssistantMessage", "UserMessage"]
    assert "result of lookup: found invoice" in str(messages[1].content)


# --- enabling ---


async def test_is_enabled_per_session_hides_the_handoff_and_refuses_a_call_anyway() -> None:
    async def vip_only(ctx: SessionContext) -> bool:
        return ctx.session_id.startswith("vip")

    front = ScriptedModel(
        [
            [tool_call("transfer_to_billing_desk")],  # vip session: offered and taken
            [tool_call("transfer_to_billing_desk")],  # regular session: not offered, called anyway
            "Billing is for VIPs only.",
        ]
    )
    billing = ScriptedModel(["billing for vip"])
    channel = ScriptedChannel.for_sessions({"vip1": ["bill"], "reg1": ["bill"]})
    team = two_agents(handoff("BillingDesk", is_enabled=vip_only))
    runtime = SingleThreadedAgentRuntime()
    await register_team(runtime, team, model=front, channel=channel, models={"BillingDesk": billing})
    runtime.start()
    await start_session(runtime, "vip1")
    await runtime.stop_when_idle()
    runtime.start()
    await start_session(runtime, "reg1")
    await runtime.stop_when_idle()

    assert [t["name"] for t in front.calls[0][1]] == ["lookup", "transfer_to_billing_desk"]
    assert [t["name"] for t in front.calls[1][1]] == ["lookup"]
    refused = front.calls[2][0][-1]
    assert isinstance(refused, FunctionExecutionResultMessage) and refused.content[0].is_error
    assert texts(channel, "vip1") == [("BillingDesk", "billing for vip")]
    assert texts(channel, "reg1") == [("Front", "Billing is for VIPs only.")]
    assert [e.outcome for e in channel.handoffs("reg1")] == ["refused"]


async def test_is_enabled_false_never_offers_the_handoff() -> None:
    front = ScriptedModel(["hello"])
    channel = ScriptedChannel.for_sessions({"s1": ["hi"]})
    await run_sessions(two_agents(handoff("BillingDesk", is_enabled=False)), channel, models={"Front": front})
    assert [t["name"] for t in front.calls[0][1]] == ["lookup"]


# --- loop protection ---


async def test_budget_overrun_stops_the_chain_with_a_message() -> None:
    models = {
        "A": ScriptedModel([[tool_call("transfer_to_b")]]),
        "B": ScriptedModel([[tool_call("transfer_to_c")]]),
        "C": ScriptedModel([[tool_call("transfer_to_d")]]),
    }
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    await run_sessions(chain_team(TeamPolicy(handoff_budget=2, on_loop="message")), channel, models=models)
    assert texts(channel) == [("C", LOOP_MESSAGE)]
    outcomes = [(e.source, e.target, e.outcome) for e in channel.handoffs("s1")]
    assert outcomes == [("A", "B", "handoff"), ("B", "C", "handoff"), ("C", "D", "loop_stopped")]
    assert "budget of 2" in channel.handoffs("s1")[-1].reason


async def test_ping_pong_is_stopped_and_escalated_to_the_human() -> None:
    team = TeamSpec(
        name="pp",
        entry="A",
        policy=TeamPolicy(handoff_budget=10, on_loop="escalate"),
        agents=[AgentSpec("A", handoffs=["B"]), AgentSpec("B", handoffs=["A"]), human_agent("Human")],
    )
    models = {
        "A": ScriptedModel([[tool_call("transfer_to_b")], [tool_call("transfer_to_b")]]),
        "B": ScriptedModel([[tool_call("transfer_to_a")]]),
    }
    channel = ScriptedChannel.for_sessions({"s1": ["hello", "thanks"]}, operator=["A person here.", "Bye"])
    await run_sessions(team, channel, models=models)
    assert texts(channel)[0] == ("Human", "A person here.")
    events = channel.handoffs("s1")
    assert [(e.source, e.target, e.outcome) for e in events] == [
        ("A", "B", "handoff"),
        ("B", "A", "handoff"),
        ("A", "B", "loop_stopped"),
    ]
    assert "ping-pong between A and B" in events[-1].reason and "escalated to Human" in events[-1].reason
    for model in models.values():
        model.assert_done()


async def test_the_guard_resets_every_turn() -> None:
    models = {
        "A": ScriptedModel(
            [[tool_call("transfer_to_b")], "A again", [tool_call("transfer_to_b")], "A once more"]
        ),
        "B": ScriptedModel([[tool_call("transfer_to_a")], [tool_call("transfer_to_a")]]),
    }
    team = TeamSpec(
        name="t",
        entry="A",
        policy=TeamPolicy(handoff_budget=2, on_loop="message"),
        agents=[AgentSpec("A", handoffs=["B"]), AgentSpec("B", handoffs=["A"])],
    )
    channel = ScriptedChannel.for_sessions({"s1": ["one", "two"]})
    await run_sessions(team, channel, models=models)
    # Each turn goes A->B->A: 2 hops, within the budget of 2 because the count starts afresh every turn.
    assert texts(channel) == [("A", "A again"), ("A", "A once more")]
    assert [e.outcome for e in channel.handoffs("s1")] == ["handoff"] * 4


# --- events ---


class Observer(RoutedAgent):
    seen: ClassVar[list[HandoffEvent]] = []

    def __init__(self) -> None:
        super().__init__("records handoff events")

    @message_handler
    async def on_event(self, message: HandoffEvent, ctx: MessageContext) -> None:
        Observer.seen.append(message)


async def test_events_reach_any_observer_subscribed_to_the_events_topic() -> None:
    Observer.seen = []
    runtime = SingleThreadedAgentRuntime()
    channel = ScriptedChannel.for_sessions({"s1": ["buy"], "s2": ["buy"]})
    triage = ScriptedModel([[tool_call("transfer_to_sales_agent")]] * 2)
    sales = ScriptedModel(["sold"] * 2)
    models = {"TriageAgent": triage, "SalesAgent": sales}
    await register_team(runtime, acme_team(), model=triage, channel=channel, models=models)
    await Observer.register(runtime, "observer", Observer)
    await runtime.add_subscription(TypeSubscription(HANDOFF_EVENTS, "observer"))
    runtime.start()
    await start_session(runtime, "s1")
    await start_session(runtime, "s2")
    await runtime.stop_when_idle()
    assert sorted((e.session_id, e.source, e.target, e.tool, e.hop) for e in Observer.seen) == [
        ("s1", "TriageAgent", "SalesAgent", "transfer_to_sales_agent", 1),
        ("s2", "TriageAgent", "SalesAgent", "transfer_to_sales_agent", 1),
    ]


# --- topology picture ---


def test_mermaid_graph_of_the_acme_team() -> None:
    assert team_mermaid(acme_team()) == (
        "flowchart LR\n"
        '    User(["User"])\n'
        '    TriageAgent["TriageAgent"]\n'
        '    SalesAgent["SalesAgent<br/>tools: execute_order"]\n'
        '    IssuesAndRepairsAgent["IssuesAndRepairsAgent<br/>tools: execute_refund, look_up_item"]\n'
        '    HumanAgent["HumanAgent (human)"]\n'
        "    User --> TriageAgent\n"
        "    TriageAgent -->|transfer_to_issues_and_repairs| IssuesAndRepairsAgent\n"
        "    TriageAgent -->|transfer_to_sales_agent| SalesAgent\n"
        "    TriageAgent -->|escalate_to_human| HumanAgent\n"
        "    SalesAgent -->|transfer_back_to_triage| TriageAgent\n"
        "    IssuesAndRepairsAgent -->|transfer_back_to_triage| TriageAgent\n"
        '    HumanAgent -->|"/handoff"| IssuesAndRepairsAgent\n'
        '    HumanAgent -->|"/handoff"| SalesAgent\n'
        '    HumanAgent -->|"/handoff"| TriageAgent\n'
    )


def test_dynamically_enabled_handoffs_are_dashed() -> None:
    text = team_mermaid(two_agents(handoff("BillingDesk", is_enabled=lambda ctx: True)))
    assert "Front -.->|transfer_to_billing_desk| BillingDesk" in text


# --- wrong configurations fail when the team is built ---


@pytest.mark.parametrize(
    ("team", "message"),
    [
        (two_agents("Nobody"), "unknown agent 'Nobody'"),
        (two_agents("Front"), "cannot hand off to itself"),
        (two_agents(handoff("BillingDesk", on_handoff=lambda: None)), "def on_handoff(ctx: HandoffContext)"),
        (
            two_agents(handoff("BillingDesk", input_type=Escalation, on_handoff=lambda ctx: None)),
            "data: Escalation",
        ),
        (two_agents(handoff("BillingDesk", input_type=dict)), "pydantic BaseModel"),  # type: ignore[arg-type]
        (two_agents(handoff("BillingDesk", is_enabled=lambda: True)), "def is_enabled(ctx: SessionContext)"),
        (two_agents(handoff("BillingDesk", input_filter=lambda a, b: a)), "def my_filter"),
        (two_agents(handoff("BillingDesk", tool_name_override="bad name!")), "tool name 'bad name!'"),
        (two_agents(handoff("BillingDesk", tool_name_override="lookup")), "two tools are named 'lookup'"),
        (two_agents("BillingDesk", "BillingDesk"), "two tools are named 'transfer_to_billing_desk'"),
        (TeamSpec(name="t", entry="X", agents=[AgentSpec("A")]), "entry agent 'X'"),
        (TeamSpec(name="t", entry="A", agents=[AgentSpec("A"), AgentSpec("A")]), "must be unique"),
        (TeamSpec(name="t", entry="User", agents=[AgentSpec("User")]), "reserved"),
    ],
)
def test_wrong_configurations_are_rejected_when_the_team_is_built(team: TeamSpec, message: str) -> None:
    with pytest.raises(TeamConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_team(team)


def test_wrong_policy_is_rejected() -> None:
    with pytest.raises(TeamConfigError, match="handoff_budget"):
        TeamPolicy(handoff_budget=0)


def test_delegations_and_workers_are_drawn_apart_from_handoffs() -> None:
    from handoffs_runtime.teams.orchestrator import orchestrator_team

    text = team_mermaid(orchestrator_team())
    assert 'Worker[["Worker (worker)<br/>tools: execute_python_code"]]' in text
    assert "Orchestrator ==>|create_worker| Worker" in text
    team = TeamSpec(
        name="t",
        entry="Front",
        agents=[
            AgentSpec("Front", handoffs=["Expert"], agent_tools=["Expert"]),
            AgentSpec("Expert", description="Knows prices."),
        ],
    )
    text = team_mermaid(team)
    assert "Front -->|transfer_to_expert| Expert" in text and "Front ==>|ask_expert| Expert" in text
    assert 'Front["Front"]' in text  # the delegating tool is an edge, not listed as a regular tool


async def test_a_failing_is_enabled_hides_the_handoff_and_the_session_goes_on() -> None:
    def broken(ctx: SessionContext) -> bool:
        raise RuntimeError("feature flags down")

    front = ScriptedModel(["still here"])
    channel = ScriptedChannel.for_sessions({"s1": ["hi"]})
    await run_sessions(
        two_agents(handoff("BillingDesk", is_enabled=broken)), channel, models={"Front": front}
    )
    assert [t["name"] for t in front.calls[0][1]] == ["lookup"]
    assert texts(channel) == [("Front", "still here")]


async def test_a_failing_input_filter_keeps_the_conversation_with_the_source() -> None:
    def broken(data: HandoffInputData) -> HandoffInputData:
        raise ValueError("bad filter")

    front = ScriptedModel([[tool_call("transfer_to_billing_desk")]])
    channel = ScriptedChannel.for_sessions({"s1": ["billing"]})
    await run_sessions(
        two_agents(handoff("BillingDesk", input_filter=broken)), channel, models={"Front": front}
    )
    assert [r.agent for r in channel.replies("s1")] == ["Front"]
    [event] = channel.handoffs("s1")
    assert event.outcome == "refused" and "bad filter" in event.reason
