"""A team this project had never seen, written from the README alone: an airline desk.

A front desk, bookings (an irreversible ``change_flight``, a refund), baggage and a human supervisor;
no example requests, so the offline model routes by the descriptions and reads arguments by their names,
types and docstrings.
"""

from __future__ import annotations

from handoffs_runtime import AgentSpec, TeamSpec, handoff, human_agent, irreversible

DESK, BOOKINGS, BAGGAGE, SUPERVISOR = "Desk", "Bookings", "Baggage", "Supervisor"

done: list[tuple[str, dict[str, str]]] = []
"""Every irreversible action carried out: (tool, arguments)."""


def change_flight(booking_ref: str, new_date: str) -> str:
    """Move a booking to another date.

    booking_ref: the booking reference, e.g. SKY456.
    new_date: the date to fly on instead.
    """
    done.append(("change_flight", {"booking_ref": booking_ref, "new_date": new_date}))
    return f"booking {booking_ref} now flies on {new_date}"


def cancel_booking(booking_ref: str) -> str:
    """Cancel a booking and refund the fare."""
    done.append(("cancel_booking", {"booking_ref": booking_ref}))
    return f"booking {booking_ref} cancelled, fare refunded"


def track_bag(tag: str) -> str:
    """Find a checked bag by the number on its baggage tag."""
    return f"bag {tag} is at the airport, arriving on the next flight"


def airline_team() -> TeamSpec:
    back = handoff(DESK, tool_name_override="back_to_desk", tool_description_override="For anything else.")
    return TeamSpec(
        name="airline",
        title="Skyways help desk",
        entry=DESK,
        agents=[
            AgentSpec(
                DESK,
                description="Greets passengers and sends them to the right desk.",
                handoffs=[BOOKINGS, BAGGAGE, SUPERVISOR],
            ),
            AgentSpec(
                BOOKINGS,
                description=(
                    "Bookings and tickets: changes flight dates, cancels bookings, refunds fares and "
                    "sorts out payments and charges."
                ),
                tools=[irreversible(change_flight), irreversible(cancel_booking)],
                handoffs=[back],
            ),
            AgentSpec(
                BAGGAGE,
                description="Checked baggage: tracks delayed or lost bags and handles damaged luggage.",
                tools=[track_bag],
                handoffs=[back],
            ),
            human_agent(
                SUPERVISOR, "A duty supervisor, a person: complaints and anything the desks cannot do."
            ),
        ],
    )
