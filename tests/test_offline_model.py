"""The offline model works for any team: routing by words, proposals, look-up chains, the way back."""

from __future__ import annotations

from pydantic import BaseModel

from handoffs_runtime import AgentSpec, HandoffContext, OfflineModel, TeamSpec, handoff
from handoffs_runtime.agents.human import OPERATOR_AWAY_REPLY
from handoffs_runtime.channels.memory import ScriptedChannel

from .support import run_sessions, texts

renewed: list[tuple[str, str]] = []


def find_book(title: str) -> str:
    """Use to find the book ID from a title."""
    return "book-42"


def renew_book(book_id: str, weeks: int) -> str:
    """Renew a borrowed book loan."""
    renewed.append((book_id, str(weeks)))
    return f"{book_id} renewed for {weeks} weeks"


def library() -> TeamSpec:
    return TeamSpec(
        name="library",
        entry="Desk",
        agents=[
            AgentSpec(
                "Desk", handoffs=[handoff("Loans", tool_description_override="Renewals and borrowed books.")]
            ),
            AgentSpec(
                "Loans",
                tools=[find_book, renew_book],
                handoffs=[
                    handoff(
                        "Desk", tool_name_override="back_to_desk", tool_description_override="Other topics."
                    )
                ],
            ),
        ],
    )


async def test_routes_proposes_and_runs_a_chain_of_tools_on_yes() -> None:
    renewed.clear()
    channel = ScriptedChannel.for_sessions(
        {"s1": ["hello", "please renew my borrowed book Dune for 3 weeks", "yes"]}
    )
    await run_sessions(library(), channel, model=OfflineModel())
    replies = texts(channel)
    # The desk says what it can do in words, not tool names.
    assert replies[0] == ("Desk", "Hello, this is Desk. I can put you through to Loans. What do you need?")
    assert replies[1][0] == "Loans" and replies[1][1].startswith("I can renew book for “")
    assert replies[2] == ("Loans", "Done: find book → book-42; renew book → book-42 renewed for 3 weeks.")
    assert renewed == [("book-42", "3")]


async def test_no_declines_and_nothing_runs() -> None:
    renewed.clear()
    channel = ScriptedChannel.for_sessions({"s1": ["renew my borrowed book", "no"]})
    await run_sessions(library(), channel, model=OfflineModel())
    assert texts(channel)[-1] == ("Loans", "All right, I won't. Is there anything else I can help with?")
    assert renewed == []


async def test_unmatched_words_take_the_way_back_but_never_bounce_straight_back() -> None:
    channel = ScriptedChannel.for_sessions({"s1": ["renew my borrowed book", "what time do you open"]})
    await run_sessions(library(), channel, model=OfflineModel())
    # Loans does not know, goes back to the desk; the desk does not bounce it back again.
    assert [(e.source, e.target) for e in channel.handoffs("s1")] == [("Desk", "Loans"), ("Loans", "Desk")]
    assert texts(channel)[-1][0] == "Desk"


async def test_an_operator_who_is_away_gets_a_clear_reply() -> None:
    team = TeamSpec(
        name="t",
        entry="Bot",
        agents=[
            AgentSpec("Bot", handoffs=[handoff("Person", tool_description_override="Talk to a human.")]),
            AgentSpec("Person", kind="human"),
        ],
    )
    channel = ScriptedChannel.for_sessions({"s1": ["can I talk to a human"]}, operator=[])
    await run_sessions(team, channel, model=OfflineModel())
    assert texts(channel) == [("Person", OPERATOR_AWAY_REPLY)]


async def test_a_handoff_with_an_input_type_gets_its_reason_from_the_words() -> None:
    reasons: list[str] = []

    class Why(BaseModel):
        reason: str

    async def note(ctx: HandoffContext, data: Why) -> None:
        reasons.append(data.reason)

    to_math = handoff("Math", tool_description_override="Algebra.", input_type=Why, on_handoff=note)
    team = TeamSpec(name="t", entry="Desk", agents=[AgentSpec("Desk", handoffs=[to_math]), AgentSpec("Math")])
    channel = ScriptedChannel.for_sessions({"s1": ["help me with algebra, 2x + 3 = 7"]})
    await run_sessions(team, channel, model=OfflineModel())
    assert reasons == ["help me with algebra, 2x + 3 = 7"]
