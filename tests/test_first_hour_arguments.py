"""Issue 35: with teams it has never seen, the offline model reads each argument by its parameter, asks
for each one it cannot read, never fills two with the same words, names each one in its confirmation and
takes a correction in the answer."""

from __future__ import annotations

import pytest

from handoffs_runtime import OfflineModel
from handoffs_runtime.channels.memory import ScriptedChannel

from . import airline_team, clinic_team
from .support import run_sessions, texts


async def converse(team: object, *said: str) -> list[str]:
    """The replies to ``said`` in one session of ``team`` on the offline model."""
    channel = ScriptedChannel.for_sessions({"s1": list(said)})
    await run_sessions(team, channel, model=OfflineModel())  # type: ignore[arg-type]
    return [text for _, text in texts(channel)]


@pytest.fixture(autouse=True)
def _forget_what_was_done() -> None:
    airline_team.done.clear()
    clinic_team.done.clear()


async def test_each_argument_is_read_from_its_own_words_and_named_in_the_confirmation() -> None:
    replies = await converse(
        airline_team.airline_team(), "Could you move booking SKY456 to the 20th of December?", "yes"
    )
    assert "booking ref “SKY456”" in replies[-2] and "new date “20 December”" in replies[-2]
    assert airline_team.done == [("change_flight", {"booking_ref": "SKY456", "new_date": "20 December"})]


async def test_a_missing_argument_is_asked_for_by_name_one_question_each() -> None:
    replies = await converse(
        airline_team.airline_team(), "I want to change my flight", "SKY123", "the 3rd of January", "yes"
    )
    asked = [r for r in replies if r.startswith("To change flight I need")]
    assert asked == [
        "To change flight I need the booking ref. Which booking ref?",
        "To change flight I need the new date. Which new date?",
    ]
    assert airline_team.done == [("change_flight", {"booking_ref": "SKY123", "new_date": "3 January"})]


async def test_an_answer_that_gives_nothing_for_the_asked_argument_runs_nothing() -> None:
    replies = await converse(airline_team.airline_team(), "I want to change my flight", "SKY123", "yes")
    assert replies[-2] == "To change flight I need the new date. Which new date?"
    assert not any("Shall I go ahead" in r for r in replies)
    assert airline_team.done == []


async def test_a_correction_in_the_answer_changes_the_argument_and_asks_again() -> None:
    replies = await converse(
        airline_team.airline_team(), "Please change booking SKY456 to 20 December", "no, the 21st", "yes"
    )
    assert "new date “20 December”" in replies[-3]
    assert "new date “21 December”" in replies[-2] and "booking ref “SKY456”" in replies[-2]
    assert airline_team.done == [("change_flight", {"booking_ref": "SKY456", "new_date": "21 December"})]


async def test_a_plain_no_still_declines() -> None:
    replies = await converse(airline_team.airline_team(), "Please change booking SKY456 to 20 December", "no")
    assert replies[-1].startswith("All right, I won't.")
    assert airline_team.done == []


async def test_a_reference_is_never_taken_from_words_without_one() -> None:
    replies = await converse(airline_team.airline_team(), "cancel my booking please", "yes")
    assert replies[-2] == "To cancel booking I need the booking ref. Which booking ref?"
    assert not any("Shall I go ahead" in r for r in replies)
    assert airline_team.done == []


async def test_a_second_team_names_dates_people_and_amounts() -> None:
    replies = await converse(
        clinic_team.clinic_team(), "I'd like to book an appointment with Dr Patel on 12 March", "yes"
    )
    assert "doctor name “Dr Patel”" in replies[-2] and "date “12 March”" in replies[-2]
    assert clinic_team.done == [("book_appointment", {"doctor_name": "Dr Patel", "date": "12 March"})]


async def test_an_amount_is_asked_for_never_guessed() -> None:
    replies = await converse(
        clinic_team.clinic_team(), "please refund my payment on invoice INV-204", "42.50 pounds", "yes"
    )
    assert "Which amount?" in replies[-3]
    assert "invoice number “INV-204”" in replies[-2] and "amount 42.5" in replies[-2]
    assert clinic_team.done == [("refund_payment", {"invoice_number": "INV-204", "amount": 42.5})]


async def test_the_clinic_asks_for_the_doctor_and_the_date_by_name() -> None:
    replies = await converse(
        clinic_team.clinic_team(), "I need to book an appointment", "Dr Okafor", "next Monday", "yes"
    )
    assert [r for r in replies if r.startswith("To book appointment")] == [
        "To book appointment I need the doctor name. Which doctor name?",
        "To book appointment I need the date. Which date?",
    ]
    assert clinic_team.done == [("book_appointment", {"doctor_name": "Dr Okafor", "date": "next Monday"})]
