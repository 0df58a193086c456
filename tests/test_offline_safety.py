"""The offline demo never acts on a guess: missing arguments are asked for, irreversible tools need a
clear object. (The table of customer utterances is in ``test_offline_customers``.)"""

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

from .support import run_sessions, texts

TRIAGE, SALES, ISSUES, HUMAN = "TriageAgent", "SalesAgent", "IssuesAndRepairsAgent", "HumanAgent"
OPERATOR = "Hi, Sam here."


ONE_ARGUMENT = {"get weather": "city", "look up invoice": "invoice id", "run command": "command"}


def propose(tool: str, item: str) -> str:
    """A tool of one argument names it, like any other (issue 35)."""
    return f"I can {tool} with {ONE_ARGUMENT[tool]} “{item}”. Shall I go ahead? (yes/no)"


def ask(tool: str, what: str) -> str:
    return f"To {tool} I need the {what}. Which {what}?"


OFFLINE = "offline demo model"  # the honest "a real answer needs a language model" reply
DECLINED = "All right, I won't. Is there anything else I can help with?"


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
    assert [(e.source, e.target) for e in channel.handoffs("s1")] == [("Triage", "Billing")]


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
    assert texts(channel, "s2")[0] == ("Gifts", DECLINED)
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
