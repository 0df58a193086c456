"""A second team written from the docs alone, as a team file (``clinic_team.yaml``): a clinic's reception.

Appointments (an irreversible ``book_appointment`` with a doctor's name and a date, an irreversible
``cancel_appointment``), billing (a refund of an amount) and a practice manager, a person.
"""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime import TeamSpec
from handoffs_runtime.team.files import load_team_file

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
    """The team, read from its file as ``--team tests/clinic_team.yaml`` would read it."""
    return load_team_file(Path(__file__).with_name("clinic_team.yaml"))
