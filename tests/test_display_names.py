"""A person reads the team's words: the title, the greeting and display names, never class or tool names.

On the console (a subprocess, as a person runs it), in a Markdown export, in what the offline model says
of the team, and in the yes/no buttons a page is offered.
"""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime import (
    AgentSpec,
    EventChannel,
    OfflineModel,
    TeamSpec,
    handoff,
    register_team,
    start_session,
)
from handoffs_runtime.messages import Notice, Question, Reply
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.teams.acme import acme_team

from .cli_support import run_handoffs

BOOKSHOP = Path(__file__).resolve().parent.parent / "examples" / "bookshop" / "team.yaml"
BOOKSHOP_NAMES = ("FrontDesk", "Books ›", "Orders ›", "Manager ›")
"""The bookshop's agent names as a line would begin with them, where its display names belong."""


def test_the_console_shows_the_title_the_greeting_and_display_names() -> None:
    result = run_handoffs("chat", "--team", str(BOOKSHOP), stdin="where is my order BK-1001?\nexit\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("  handoffs · Bookshop help desk · model: offline")
    greeting = "Sam at the front desk › Hello, this is the bookshop. I can find a book for you"
    assert lines[2].startswith(greeting)  # before the person types anything
    assert "  ↪ Maya from Orders has joined" in lines
    assert any(line.startswith("Maya from Orders › ") for line in lines)
    assert not [line for line in lines if line.strip().startswith(BOOKSHOP_NAMES)]
    assert "FrontDesk" not in result.stdout


def test_the_markdown_export_names_agents_by_display_name(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions.sqlite3")
    chat = run_handoffs(
        "chat", "--team", str(BOOKSHOP), "--store", store, "--session", "s1",
        stdin="where is my order BK-1001?\nexit\n",
    )  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    export = run_handoffs("sessions", "export", "s1", "--store", store, "--team", str(BOOKSHOP))
    assert export.returncode == 0, export.stderr
    text = export.stdout
    assert "- team: Bookshop help desk (bookshop)" in text
    assert "*↪ Maya from Orders has joined*" in text
    assert "**Maya from Orders** (" in text
    assert "- active agent: Maya from Orders" in text
    assert not any(name in text for name in ("FrontDesk", "**Orders**", "active agent: Orders"))


def test_a_built_in_teams_sessions_show_its_display_names_without_team(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions.sqlite3")
    chat = run_handoffs("chat", "--store", store, "--session", "s1", stdin="I want a refund for my shoes\n")
    assert chat.returncode == 0, chat.stderr
    shown = run_handoffs("sessions", "show", "s1", "--store", store)
    assert shown.returncode == 0, shown.stderr
    assert "↪ ACME repairs has joined" in shown.stdout
    assert "ACME repairs › I can execute refund" in shown.stdout
    assert "IssuesAndRepairsAgent ›" not in shown.stdout


def _desk_and_billing() -> TeamSpec:
    """A team without example requests: the offline model says what it does from its descriptions."""

    def look_up_invoice(invoice_id: str) -> str:
        """Find an invoice by its number."""
        return f"invoice {invoice_id}: paid"

    desk = AgentSpec("Triage", display_name="the front desk", handoffs=[handoff("Billing")])
    billing = AgentSpec(
        "Billing",
        display_name="Maya from Billing",
        description="Invoices and payments.",
        tools=[look_up_invoice],
    )
    return TeamSpec(name="support", entry="Triage", agents=[desk, billing])


async def _first_events(team: TeamSpec, answers: list[str]) -> list[object]:
    """The events of a session of ``team`` on the offline model, answering each turn from ``answers``."""
    runtime = HandoffsRuntime()
    channel = EventChannel()
    await register_team(
        runtime, team, model=OfflineModel(), channel=channel, on_session_end=channel.ended, greet=True
    )
    runtime.start()
    await start_session(runtime, "s1")
    seen: list[object] = []
    pending = iter(answers)
    async for event in channel.events("s1"):
        seen.append(event)
        if isinstance(event, Question):
            await channel.answer("s1", next(pending, "exit"), person=event.person)
    await runtime.stop_when_idle()
    return seen


async def test_the_offline_model_describes_the_team_in_words_not_tool_names() -> None:
    seen = await _first_events(_desk_and_billing(), ["hello"])
    replies = [e for e in seen if isinstance(e, Reply)]
    assert replies[0].label == "the front desk"
    assert replies[0].text == (
        "Hello, this is the front desk. I can put you through to Maya from Billing (invoices and payments). "
        "What do you need?"
    )
    said = " ".join(r.text for r in replies)
    assert "transfer" not in said and "Billing (" not in said.replace("Maya from Billing (", "")


async def test_the_greeting_opens_a_session_and_a_yes_no_reply_offers_buttons() -> None:
    seen = await _first_events(acme_team(), ["I want a refund for my shoes", "no"])
    greeting = seen[0]
    assert isinstance(greeting, Reply) and greeting.text == acme_team().greeting
    assert greeting.agent == "TriageAgent" and greeting.label == "ACME assistant"
    questions = [e for e in seen if isinstance(e, Question)]
    assert questions[0].turn and questions[0].choices == ()
    offer = [e for e in seen if isinstance(e, Reply) and e.text.endswith("(yes/no)")]
    assert offer and offer[0].label == "ACME repairs"
    assert questions[1].turn and questions[1].choices == ("yes", "no")  # the reply asked for one
    assert questions[2].choices == ()  # the next turn, after "All right, I won't...", asks nothing
    assert not [e for e in seen if isinstance(e, Notice) and "--model" in e.text]
