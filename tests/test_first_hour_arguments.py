"""Issue 35: with teams it has never seen, the offline model reads each argument by its parameter, asks
for each one it cannot read, never fills two with the same words, names each one in its confirmation and
takes a correction in the answer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from handoffs_runtime import OfflineModel
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.team.spec import TeamSpec

from . import airline_team, clinic_team
from .support import run_sessions, texts

Done = tuple[str, dict[str, object]]
"""A tool that ran, and its arguments."""


async def converse(team: TeamSpec, *said: str) -> list[str]:
    """The replies to ``said`` in one session of ``team`` on the offline model."""
    channel = ScriptedChannel.for_sessions({"s1": list(said)})
    await run_sessions(team, channel, model=OfflineModel())
    return [text for _, text in texts(channel)]


@pytest.fixture(autouse=True)
def _forget_what_was_done() -> None:
    airline_team.done.clear()
    clinic_team.done.clear()


def ran() -> list[Done]:
    """What the tools of both teams did: of the one that was asked, nothing of the other."""
    return [*airline_team.done, *clinic_team.done]


AIRLINE, CLINIC = airline_team.airline_team, clinic_team.clinic_team


def change(ref: str, date: str) -> Done:
    return ("change_flight", {"booking_ref": ref, "new_date": date})


def book(doctor: str, date: str) -> Done:
    return ("book_appointment", {"doctor_name": doctor, "date": date})


CONFIRMED = {
    "airline: each argument from its own words": (
        AIRLINE,
        ["Could you move booking SKY456 to the 20th of December?"],
        None,
        change("SKY456", "20 December"),
    ),
    "clinic: dates and people": (
        CLINIC,
        ["I'd like to book an appointment with Dr Patel on 12 March"],
        None,
        book("Dr Patel", "12 March"),
    ),
    "a correction changes the argument and asks again": (
        AIRLINE,
        ["Please change booking SKY456 to 20 December", "no, the 21st"],
        "new date “20 December”",
        change("SKY456", "21 December"),
    ),
    "a correction on the team file's team too": (
        CLINIC,
        ["I'd like to book an appointment with Dr Patel on 12 March", "no, the 14th"],
        "date “12 March”",
        book("Dr Patel", "14 March"),
    ),
    "an amount is asked for, never guessed": (
        CLINIC,
        ["please refund my payment on invoice INV-204", "42.50 pounds"],
        "Which amount?",
        ("refund_payment", {"invoice_number": "INV-204", "amount": 42.5}),
    ),
}
"""Each team, what the person says (then "yes"), what the team said before its confirmation (``asked``,
when it asked something), and what then runs: the confirmation names each of its arguments."""


def spoken(name: str) -> str:
    """A tool's or an argument's name as the team says it: ``booking_ref`` -> ``booking ref``."""
    return name.replace("_", " ")


def named(arguments: dict[str, object]) -> list[str]:
    """How a confirmation names each argument: a text in quotes after its name, a number plainly."""
    return [
        f"{spoken(name)} “{value}”" if isinstance(value, str) else f"{spoken(name)} {value}"
        for name, value in arguments.items()
    ]


@pytest.mark.parametrize(("team", "said", "asked", "done"), CONFIRMED.values(), ids=CONFIRMED)
async def test_each_argument_is_read_from_the_words_and_named_in_the_confirmation(
    team: Callable[[], TeamSpec], said: list[str], asked: str | None, done: Done
) -> None:
    replies = await converse(team(), *said, "yes")
    if asked is not None:
        assert asked in replies[-3]
    assert all(name in replies[-2] for name in named(done[1])), replies[-2]
    assert ran() == [done]


ASKED = [
    pytest.param(
        airline_team.airline_team,
        ["I want to change my flight", "SKY123", "the 3rd of January"],
        ("change_flight", {"booking_ref": "SKY123", "new_date": "3 January"}),
        id="airline",
    ),
    pytest.param(
        clinic_team.clinic_team,
        ["I need to book an appointment", "Dr Okafor", "next Monday"],
        ("book_appointment", {"doctor_name": "Dr Okafor", "date": "next Monday"}),
        id="clinic",
    ),
]
"""Each team, a request without its arguments then each one in turn, and what runs: a question was
asked for each argument by its name, in order."""


@pytest.mark.parametrize(("team", "said", "done"), ASKED)
async def test_a_missing_argument_is_asked_for_by_name_one_question_each(
    team: Callable[[], TeamSpec], said: list[str], done: Done
) -> None:
    replies = await converse(team(), *said, "yes")
    asking = f"To {spoken(done[0])} I need "
    questions = [f"the {name}. Which {name}?" for name in map(spoken, done[1])]
    assert [r for r in replies if r.startswith(asking)] == [asking + question for question in questions]
    assert ran() == [done]


NOT_GUESSED = [
    pytest.param(
        ["I want to change my flight", "SKY123"],
        "To change flight I need the new date. Which new date?",
        id="an answer that gives nothing for the asked argument",
    ),
    pytest.param(
        ["cancel my booking please"],
        "To cancel booking I need the booking ref. Which booking ref?",
        id="a reference from words without one",
    ),
]
"""Words that leave an argument unread, and the question that asks for it again."""


@pytest.mark.parametrize(("said", "question"), NOT_GUESSED)
async def test_an_argument_is_never_guessed_and_nothing_runs(said: list[str], question: str) -> None:
    replies = await converse(airline_team.airline_team(), *said, "yes")
    assert replies[-2] == question
    assert not any("Shall I go ahead" in r for r in replies)
    assert ran() == []


async def test_a_plain_no_still_declines() -> None:
    replies = await converse(airline_team.airline_team(), "Please change booking SKY456 to 20 December", "no")
    assert replies[-1].startswith("All right, I won't.")
    assert ran() == []
