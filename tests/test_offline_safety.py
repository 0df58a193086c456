"""The offline demo never acts on a guess: a table of customer utterances with their route and action.

Every row is followed by ``yes`` and ``y``: only the rows that propose an irreversible tool for a clear
object may then run it; every other row must end without an order placed or a refund made.
"""

from __future__ import annotations

import pytest

from handoffs_runtime import (
    AgentSpec,
    OfflineModel,
    TeamConfigError,
    TeamSpec,
    handoff,
    irreversible,
    is_irreversible,
    requires_approval,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.teams.acme import acme_team

from .support import run_sessions, texts

TRIAGE, SALES, ISSUES, HUMAN = "TriageAgent", "SalesAgent", "IssuesAndRepairsAgent", "HumanAgent"
OPERATOR = "Hi, Sam here."


def propose(tool: str, item: str) -> str:
    return f"I can {tool} for “{item}”. Shall I go ahead? (yes/no)"


def ask(tool: str, what: str) -> str:
    return f"To {tool} I need the {what}. Which {what}?"


OFFLINE = "offline demo model"  # the honest "a real answer needs a language model" reply
UNSURE = "I'm not sure I follow."
HELLO = "Hello, this is TriageAgent."
DECLINED = "All right, I won't. Is there anything else I can help with?"

# (what the customer says, the agents it is handed to, the first reply: exact text, or a part of it)
TABLE: list[tuple[str, list[str], str]] = [
    # cancelling, complaints and negations: never an order or a refund
    ("can I cancel my order?", [ISSUES], OFFLINE),
    ("my order never arrived", [ISSUES], OFFLINE),
    ("I need help with my order", [ISSUES], OFFLINE),
    ("cancel my subscription", [ISSUES], OFFLINE),
    ("stop my order", [ISSUES], OFFLINE),
    ("I never ordered this", [ISSUES], OFFLINE),
    ("I have a problem with my order", [ISSUES], OFFLINE),
    ("my anvil is broken", [ISSUES], OFFLINE),
    ("my rocket skates are damaged", [ISSUES], OFFLINE),
    ("the anvil I bought is faulty", [ISSUES], OFFLINE),
    ("the package is missing", [ISSUES], OFFLINE),
    ("my delivery was late", [ISSUES], OFFLINE),
    ("my shoes never arrived and I want a refund", [ISSUES], OFFLINE),
    ("I don't want to buy anything", [SALES], OFFLINE),
    ("please don't refund my anvil", [ISSUES], DECLINED),
    # refunds: a clear item is proposed, no item is asked for
    ("I want to return my shoes and buy new ones", [ISSUES], propose("execute refund", "shoes")),
    ("I want a refund for my shoes", [ISSUES], propose("execute refund", "shoes")),
    ("I'd like to return my anvil", [ISSUES], propose("execute refund", "anvil")),
    ("refund my broken anvil", [ISSUES], propose("execute refund", "broken anvil")),
    ("I want my money back for the skates", [ISSUES], propose("execute refund", "skates")),
    ("I want refunds for my rocket skates", [ISSUES], propose("execute refund", "rocket skates")),
    ("I want a refund", [ISSUES], ask("execute refund", "item")),
    ("I want a refund for my order", [ISSUES], ask("execute refund", "item")),
    ("refund it", [ISSUES], ask("execute refund", "item")),
    # purchases: a clear product is proposed, a vague one is asked for
    ("I'd like to buy rocket skates", [SALES], propose("execute order", "rocket skates")),
    ("I want to purchase an anvil", [SALES], propose("execute order", "anvil")),
    ("I want to order giant magnets", [SALES], propose("execute order", "giant magnets")),
    ("I'd like to shop for roadrunner traps", [SALES], propose("execute order", "roadrunner traps")),
    ("buying a jet-propelled unicycle", [SALES], propose("execute order", "jet-propelled unicycle")),
    ("I want to buy skates and return my anvil", [SALES], propose("execute order", "skates")),
    ("I want to buy something", [SALES], ask("execute order", "product")),
    ("buy new ones", [SALES], ask("execute order", "product")),
    ("I want to order", [SALES], ask("execute order", "product")),
    ("can you help me buy it", [SALES], ask("execute order", "product")),
    # a person
    ("I want to speak to a person", [HUMAN], OPERATOR),
    ("let me talk to a human", [HUMAN], OPERATOR),
    ("can I talk to a real person please", [HUMAN], OPERATOR),
    ("get me a manager", [HUMAN], OPERATOR),
    ("I'd like a representative", [HUMAN], OPERATOR),
    # nothing to act on
    ("hello", [], HELLO),
    ("hi there", [], HELLO),
    ("thanks", [], HELLO),
    ("what time do you open", [], UNSURE),
    ("where is my order", [], UNSURE),
]


def _matches(reply: str, expected: str) -> bool:
    return reply == expected or (expected in (OFFLINE, UNSURE, HELLO) and expected in reply)


async def test_acme_utterances_route_and_act_only_on_clear_requests() -> None:
    assert len(TABLE) >= 40
    sessions = {f"s{i}": [said, "yes", "y"] for i, (said, _, _) in enumerate(TABLE)}
    channel = ScriptedChannel.for_sessions(sessions, operator=[OPERATOR, OPERATOR, OPERATOR])
    await run_sessions(acme_team(), channel, model=OfflineModel(), sessions=sessions)
    wrong = []
    for i, (said, route, first) in enumerate(TABLE):
        session = f"s{i}"
        routes = [e.target for e in channel.events(session)][: len(route)]
        replies = texts(channel, session)
        if routes != route or not replies or not _matches(replies[0][1], first):
            wrong.append((said, routes, replies[:1]))
            continue
        acted = any(text.startswith("Done:") for _, text in replies)
        ordered = any("Confirm order?" in prompt for _, prompt in channel.asked[session])
        if (acted or ordered) != first.startswith("I can "):
            wrong.append((said, "acted" if acted or ordered else "did not act", replies))
    assert wrong == []


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_team() -> TeamSpec:
    return TeamSpec(name="weather", entry="Weather", agents=[AgentSpec("Weather", tools=[get_weather])])


async def test_a_missing_argument_is_asked_for_never_filled_with_the_request() -> None:
    channel = ScriptedChannel.for_sessions(
        {"s1": ["what is the weather", "yes"], "s2": ["what is the weather", "Paris", "yes"]}
    )
    await run_sessions(weather_team(), channel, model=OfflineModel(), sessions=["s1", "s2"])
    first = texts(channel, "s1")
    assert first[0] == ("Weather", ask("get weather", "city"))
    assert not any(text.startswith("Done") for _, text in first)
    assert texts(channel, "s2") == [
        ("Weather", ask("get weather", "city")),
        ("Weather", propose("get weather", "Paris")),
        ("Weather", "Done: get weather → sunny in Paris."),
    ]


def look_up_invoice(invoice_id: str) -> str:
    """Find an invoice by id."""
    return f"invoice {invoice_id}: paid"


def support_team() -> TeamSpec:
    """The README's library example."""
    return TeamSpec(
        name="support",
        entry="Triage",
        agents=[
            AgentSpec("Triage", system_message="Route the customer.", handoffs=["Billing"]),
            AgentSpec(
                "Billing",
                description="Invoices and payments.",
                tools=[look_up_invoice],
                handoffs=[handoff("Triage", tool_name_override="transfer_back_to_triage")],
            ),
        ],
    )


async def test_singular_words_route_and_an_agent_keeps_requests_of_its_own_area() -> None:
    channel = ScriptedChannel.for_sessions(
        {"s1": ["I have a question about my invoice", "INV-1001", "yes", "and what about payments?"]}
    )
    await run_sessions(support_team(), channel, model=OfflineModel())
    replies = texts(channel)
    assert replies[:3] == [
        ("Billing", ask("look up invoice", "invoice id")),
        ("Billing", propose("look up invoice", "INV-1001")),
        ("Billing", "Done: look up invoice → invoice INV-1001: paid."),
    ]
    assert replies[3][0] == "Billing" and OFFLINE in replies[3][1]
    # Billing never sent "payments" back to Triage to have it sent back again.
    assert [(e.source, e.target) for e in channel.events("s1")] == [("Triage", "Billing")]


async def test_irreversible_tools_of_any_team_need_a_clear_object() -> None:
    sent: list[str] = []

    def send_gift(recipient: str) -> str:
        """Send a gift."""
        sent.append(recipient)
        return "sent"

    ran: list[str] = []

    def run_command(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "ran"

    tools = [irreversible(send_gift), irreversible(run_command)]
    team = TeamSpec(name="gifts", entry="Gifts", agents=[AgentSpec("Gifts", tools=tools)])
    channel = ScriptedChannel.for_sessions(
        {
            "s1": ["send gift: something", "yes"],
            "s2": ["don't send a gift to Ann", "yes"],
            "s3": ["run command: rm -rf build", "yes"],
        }
    )
    await run_sessions(team, channel, model=OfflineModel(), sessions=["s1", "s2", "s3"])
    assert sent == []
    assert texts(channel, "s1")[0] == ("Gifts", ask("send gift", "recipient"))
    assert OFFLINE in texts(channel, "s2")[0][1]  # its own area, with nothing to do
    # Spelled out, but irreversible: proposed first, with the text as written, and run only after a yes.
    assert texts(channel, "s3") == [
        ("Gifts", propose("run command", "rm -rf build")),
        ("Gifts", "Done: run command → ran."),
    ]
    assert ran == ["rm -rf build"]


def test_the_irreversible_mark_survives_approval_and_rejects_what_is_no_tool() -> None:
    marked = irreversible(get_weather)
    assert marked.name == "get_weather" and is_irreversible(marked)
    assert is_irreversible(requires_approval(marked))
    assert not is_irreversible(requires_approval(get_weather))
    with pytest.raises(TeamConfigError, match="irreversible needs a Tool or a function"):
        irreversible(42)  # type: ignore[arg-type]
