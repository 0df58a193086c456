"""A second team written from the README alone: a clinic's reception.

Appointments (an irreversible ``book_appointment`` with a doctor's name and a date, an irreversible
``cancel_appointment``), billing (a refund of an amount) and a practice manager, a person.
"""

from __future__ import annotations

from handoffs_runtime import AgentSpec, TeamSpec, handoff, human_agent, irreversible

RECEPTION, APPOINTMENTS, BILLING, MANAGER = "Reception", "Appointments", "Billing", "Manager"

done: list[tuple[str, dict[str, object]]] = []
"""Every irreversible action carried out: (tool, arguments)."""


def book_appointment(doctor_name: str, date: str) -> str:
    """Book an appointment with a doctor on a date."""
    done.append(("book_appointment", {"doctor_name": doctor_name, "date": date}))
    return f"booked with {doctor_name} on {date}"


def cancel_appointment(appointment_id: str) -> str:
    """Cancel an appointment by its reference (APT-...)."""
    done.append(("cancel_appointment", {"appointment_id": appointment_id}))
    return f"appointment {appointment_id} cancelled"


def refund_payment(invoice_number: str, amount: float) -> str:
    """Refund an amount paid on an invoice."""
    done.append(("refund_payment", {"invoice_number": invoice_number, "amount": amount}))
    return f"{amount} refunded on {invoice_number}"


def clinic_team() -> TeamSpec:
    back = handoff(
        RECEPTION, tool_name_override="back_to_reception", tool_description_override="Anything else."
    )
    return TeamSpec(
        name="clinic",
        title="Green Street Clinic",
        entry=RECEPTION,
        agents=[
            AgentSpec(
                RECEPTION,
                description="The clinic's reception: sends patients to the right desk.",
                handoffs=[APPOINTMENTS, BILLING, MANAGER],
            ),
            AgentSpec(
                APPOINTMENTS,
                description="Appointments with doctors: books, moves and cancels appointments.",
                tools=[irreversible(book_appointment), irreversible(cancel_appointment)],
                handoffs=[back],
            ),
            AgentSpec(
                BILLING,
                description="Bills, invoices and payments: refunds and double charges.",
                tools=[irreversible(refund_payment)],
                handoffs=[back],
            ),
            human_agent(MANAGER, "The practice manager, a person: complaints and anything else."),
        ],
    )
