"""Each ACME path end to end, on scripted models and on the built-in offline model."""

from __future__ import annotations

from autogen_core.models import FunctionExecutionResultMessage, UserMessage

from handoffs_runtime import OfflineModel, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.teams.acme import ITEM_ID, acme_team

from .support import run_sessions, texts


async def test_refund_path_triage_to_issues_lookup_and_refund() -> None:
    triage = ScriptedModel([[tool_call("transfer_to_issues_and_repairs")]])
    issues = ScriptedModel(
        [
            "Sorry to hear that. Shall I refund your shoes?",
            [tool_call("look_up_item", {"search_query": "shoes"})],
            [tool_call("execute_refund", {"item_id": ITEM_ID, "reason": "too small"})],
            "Your refund is done.",
        ]
    )
    channel = ScriptedChannel.for_sessions({"s1": ["I want a refund for my shoes", "yes"]})
    await run_sessions(acme_team(), channel, models={"TriageAgent": triage, "IssuesAndRepairsAgent": issues})

    assert texts(channel) == [
        ("IssuesAndRepairsAgent", "Sorry to hear that. Shall I refund your shoes?"),
        ("IssuesAndRepairsAgent", "Your refund is done."),
    ]
    [event] = channel.handoffs("s1")
    assert (event.source, event.target, event.tool, event.outcome) == (
        "TriageAgent",
        "IssuesAndRepairsAgent",
        "transfer_to_issues_and_repairs",
        "handoff",
    )
    # The refund call saw the looked-up id; the last call saw the refund's result.
    refund_messages, _ = issues.calls[3]
    results = [r for m in refund_messages if isinstance(m, FunctionExecutionResultMessage) for r in m.content]
    assert [(r.name, r.content) for r in results[-2:]] == [
        ("look_up_item", ITEM_ID),
        ("execute_refund", "success"),
    ]
    # The specialist was offered exactly its tools and the way back.
    _, tools = issues.calls[0]
    assert [t["name"] for t in tools] == ["execute_refund", "look_up_item", "transfer_back_to_triage"]
    triage.assert_done()
    issues.assert_done()


async def test_purchase_path_asks_the_customer_to_confirm_the_order() -> None:
    triage = ScriptedModel([[tool_call("transfer_to_sales_agent")]])
    sales = ScriptedModel(
        [
            "Rocket skates catch any roadrunner. Yours for $500?",
            [tool_call("execute_order", {"product": "rocket skates", "price": 500})],
            "Ordered. Caveat: they only go forward.",
        ]
    )
    channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something", "yes", "y"]})
    await run_sessions(acme_team(), channel, models={"TriageAgent": triage, "SalesAgent": sales})

    assert ("customer", "Order summary: rocket skates for $500. Confirm order? y/n") in channel.asked["s1"]
    last_call_messages, _ = sales.calls[-1]
    result = last_call_messages[-1]
    assert isinstance(result, FunctionExecutionResultMessage)
    assert result.content[0].content == "Success"
    assert texts(channel)[-1] == ("SalesAgent", "Ordered. Caveat: they only go forward.")
    sales.assert_done()


async def test_purchase_cancelled_when_the_customer_declines() -> None:
    sales = ScriptedModel([[tool_call("execute_order", {"product": "anvil", "price": 10})], "Cancelled."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "n"]})
    triage = ScriptedModel([[tool_call("transfer_to_sales_agent")]])
    await run_sessions(acme_team(), channel, models={"TriageAgent": triage, "SalesAgent": sales})
    result = sales.calls[-1][0][-1]
    assert isinstance(result, FunctionExecutionResultMessage)
    assert result.content[0].content == "User cancelled order."


async def test_escalation_reaches_the_human_operator_who_answers() -> None:
    triage = ScriptedModel([[tool_call("escalate_to_human")]])
    channel = ScriptedChannel.for_sessions(
        {"s1": ["I want to speak to a person", "thank you"]},
        operator=["Hi, I'm Sam from ACME. How can I help?", "You're welcome."],
    )
    await run_sessions(acme_team(), channel, models={"TriageAgent": triage})

    assert texts(channel) == [
        ("HumanAgent", "Hi, I'm Sam from ACME. How can I help?"),
        ("HumanAgent", "You're welcome."),  # the person's next message stayed with the human
    ]
    assert [p for p, _ in channel.asked["s1"]] == ["customer", "operator", "customer", "operator", "customer"]


async def test_transfer_back_to_triage_and_on_to_sales() -> None:
    triage = ScriptedModel(
        [[tool_call("transfer_to_issues_and_repairs")], [tool_call("transfer_to_sales_agent")]]
    )
    issues = ScriptedModel(["What is wrong with it?", [tool_call("transfer_back_to_triage")]])
    sales = ScriptedModel(["Great choice!"])
    channel = ScriptedChannel.for_sessions({"s1": ["my anvil broke", "actually I want to buy a new one"]})
    await run_sessions(
        acme_team(),
        channel,
        models={"TriageAgent": triage, "IssuesAndRepairsAgent": issues, "SalesAgent": sales},
    )
    assert texts(channel) == [
        ("IssuesAndRepairsAgent", "What is wrong with it?"),
        ("SalesAgent", "Great choice!"),
    ]
    hops = [(e.source, e.target, e.hop) for e in channel.handoffs("s1")]
    assert hops == [
        ("TriageAgent", "IssuesAndRepairsAgent", 1),
        ("IssuesAndRepairsAgent", "TriageAgent", 1),
        ("TriageAgent", "SalesAgent", 2),
    ]
    # Sales received the whole conversation, both of the person's messages included.
    said = [m.content for m in sales.calls[0][0] if isinstance(m, UserMessage)]
    assert said == ["my anvil broke", "actually I want to buy a new one"]


async def test_offline_model_refund_then_purchase_then_human() -> None:
    channel = ScriptedChannel.for_sessions(
        {
            "s1": [
                "hi",
                "I want a refund for my shoes",
                "yes",
                "I'd like to buy rocket skates",
                "yes",
                "y",
                "let me talk to a person",
                "bye",
            ]
        },
        operator=["This is Sam, a person.", "Bye!"],
    )
    await run_sessions(acme_team(), channel, model=OfflineModel())
    replies = texts(channel)
    assert replies[0][0] == "TriageAgent" and "Hello" in replies[0][1]
    assert replies[1] == (
        "IssuesAndRepairsAgent",
        "I can execute refund for “shoes”. Shall I go ahead? (yes/no)",
    )
    assert replies[2] == (
        "IssuesAndRepairsAgent",
        f"Done: look up item → {ITEM_ID}; execute refund → success.",
    )
    assert replies[3][0] == "SalesAgent" and "rocket skates" in replies[3][1]
    assert replies[4] == ("SalesAgent", "Done: execute order → Success.")
    assert replies[5] == ("HumanAgent", "This is Sam, a person.")
    routes = [(e.source, e.target) for e in channel.handoffs("s1")]
    assert routes == [
        ("TriageAgent", "IssuesAndRepairsAgent"),
        ("IssuesAndRepairsAgent", "TriageAgent"),
        ("TriageAgent", "SalesAgent"),
        ("SalesAgent", "TriageAgent"),
        ("TriageAgent", "HumanAgent"),
    ]


async def test_operator_hands_the_conversation_back_to_an_ai_agent() -> None:
    triage = ScriptedModel([[tool_call("escalate_to_human")], "Triage again: how can I help?"])
    channel = ScriptedChannel.for_sessions(
        {"s1": ["a person please", "ok"]},
        operator=["/handoff Nobody", "Let me pass you back.", "/handoff TriageAgent"],
    )
    await run_sessions(acme_team(), channel, models={"TriageAgent": triage})
    assert texts(channel) == [
        ("HumanAgent", "Let me pass you back."),
        ("TriageAgent", "Triage again: how can I help?"),
    ]
    assert any("unknown agent 'Nobody'" in prompt for _, prompt in channel.asked["s1"])
    routes = [(e.source, e.target) for e in channel.handoffs("s1")]
    assert routes == [("TriageAgent", "HumanAgent"), ("HumanAgent", "TriageAgent")]
    triage.assert_done()


async def test_operator_handback_on_the_offline_model_does_not_bounce_back() -> None:
    channel = ScriptedChannel.for_sessions(
        {"s1": ["let me talk to a person"]}, operator=["/handoff TriageAgent"]
    )
    await run_sessions(acme_team(), channel, model=OfflineModel())
    routes = [(e.source, e.target) for e in channel.handoffs("s1")]
    assert routes == [("TriageAgent", "HumanAgent"), ("HumanAgent", "TriageAgent")]
    [(agent, text)] = texts(channel)
    assert agent == "TriageAgent" and "offline demo model" in text


async def test_the_operator_is_told_how_to_hand_the_conversation_back() -> None:
    triage = ScriptedModel([[tool_call("escalate_to_human")], "Triage again."])
    channel = ScriptedChannel.for_sessions(
        {"s1": ["a person please", "thanks", "ok"]},
        operator=["Hello, Sam here.", "/help", "Anything else?", "/handoff TriageAgent"],
    )
    await run_sessions(acme_team(), channel, models={"TriageAgent": triage})
    agents = "IssuesAndRepairsAgent, SalesAgent, TriageAgent"
    hint = f"/handoff AGENT hands the conversation back (AGENT: {agents})"
    operator = [prompt for person, prompt in channel.asked["s1"] if person == "operator"]
    assert operator == [
        f"HumanAgent input ({hint})",  # taking the conversation over
        "HumanAgent input",  # the customer's next message: the operator knows by now
        f"{hint}; HumanAgent input",  # after /help
        "HumanAgent input",
    ]
    assert texts(channel)[-1] == ("TriageAgent", "Triage again.")
