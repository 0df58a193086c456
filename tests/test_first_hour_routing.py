"""Issue 35: the offline router on two teams it had never seen, written from the README alone (no example
requests): ordinary wording reaches the desk the team's descriptions name, and a code in the words is the
argument (``The tag says BG2002`` tracks BG2002).

Rate when this was written: airline 14/14, clinic 12/12 (before issue 35: 6/14 and 3/12).
"""

from __future__ import annotations

from handoffs_runtime import OfflineModel, TeamSpec
from handoffs_runtime.channels.memory import ScriptedChannel

from . import airline_team as air
from . import clinic_team as clinic
from .support import run_sessions, texts

Table = list[tuple[str, str, str]]
"""(what a customer says, the desk that must answer, words its answer must contain; "" for any)."""

AIRLINE: Table = [
    ("cancel my flight", air.BOOKINGS, "Which booking ref?"),
    ("I want to cancel my booking SKY789", air.BOOKINGS, "cancel booking with booking ref “SKY789”"),
    ("I was charged twice for my ticket", air.BOOKINGS, ""),
    ("I want a refund for my fare", air.BOOKINGS, ""),
    ("Could you move booking SKY456 to the 20th of December?", air.BOOKINGS, "new date “20 December”"),
    ("I need to change the date of my flight", air.BOOKINGS, "Which booking ref?"),
    ("My bag is lost. The tag says BG2002", air.BAGGAGE, "track bag with tag “BG2002”"),
    ("my suitcase didn't arrive", air.BAGGAGE, "Which tag?"),
    ("where is my bag? tag BG7", air.BAGGAGE, "track bag with tag “BG7”"),
    ("my luggage was damaged", air.BAGGAGE, ""),
    ("I lost my baggage", air.BAGGAGE, ""),
    ("I want to make a complaint", air.SUPERVISOR, ""),
    ("let me talk to a person", air.SUPERVISOR, ""),
    ("your staff were rude, I want to complain", air.SUPERVISOR, ""),
]

CLINIC: Table = [
    (
        "I'd like to book an appointment with Dr Patel on 12 March",
        clinic.APPOINTMENTS,
        "doctor name “Dr Patel”",
    ),
    ("can I see a doctor next week?", clinic.APPOINTMENTS, ""),
    ("cancel my appointment APT-31", clinic.APPOINTMENTS, "cancel appointment with appointment id “APT-31”"),
    ("I need to cancel my appointment", clinic.APPOINTMENTS, "Which appointment id?"),
    ("I was charged twice for my last visit", clinic.BILLING, ""),
    ("there is a double charge on my invoice", clinic.BILLING, ""),
    ("I want a refund for invoice INV-88", clinic.BILLING, "Which amount?"),
    ("my bill is wrong", clinic.BILLING, ""),
    ("I have a complaint about the receptionist", clinic.MANAGER, ""),
    ("I'd like to speak to the manager", clinic.MANAGER, ""),
    ("can I talk to someone", clinic.MANAGER, ""),
    ("I want to complain", clinic.MANAGER, ""),
]

HUMAN_REPLY = "Hello, a person here."


async def wrong_rows(team: TeamSpec, table: Table) -> list[tuple[str, str, str]]:
    """The rows whose first reply came from another desk, or said other words."""
    sessions = {f"s{i}": [said] for i, (said, _, _) in enumerate(table)}
    channel = ScriptedChannel.for_sessions(sessions, operator=[HUMAN_REPLY] * len(table))
    await run_sessions(team, channel, model=OfflineModel(), sessions=sessions)
    wrong: list[tuple[str, str, str]] = []
    for i, (said, desk, words) in enumerate(table):
        replies = texts(channel, f"s{i}")
        agent, text = replies[0] if replies else ("", "")
        if agent != desk or words not in text:
            wrong.append((said, agent, text))
    return wrong


async def test_the_airline_desk_routes_ordinary_wording_where_its_descriptions_say() -> None:
    wrong = await wrong_rows(air.airline_team(), AIRLINE)
    assert wrong == [], "\n".join(map(str, wrong))


async def test_the_clinic_routes_ordinary_wording_where_its_descriptions_say() -> None:
    wrong = await wrong_rows(clinic.clinic_team(), CLINIC)
    assert wrong == [], "\n".join(map(str, wrong))
