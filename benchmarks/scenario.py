"""The one scenario every framework runs, and the checks that make its timings comparable.

A person asks to buy; triage's model calls the handoff tool; sales' model answers in text. That is two
model calls and one handoff per session, on zero-latency scripted models unless a latency is asked for.
Every framework must produce exactly that before it is timed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

USER_TEXT = "I'd like to buy a pair of rocket skates."
SALES_TEXT = "Rocket skates it is: $500, and they only go forward."
TRIAGE = "triage"
SALES = "sales"
HANDOFF_TOOL = "transfer_to_sales"
TRIAGE_PROMPT = "You are a customer service bot for ACME Inc. Route the customer to the right department."
SALES_PROMPT = "You are a sales agent for ACME Inc. Be concise."
SALES_DESCRIPTION = "Sells ACME products."


class BenchmarkError(AssertionError):
    """A framework did not run the scenario as specified, so its timings would mean nothing."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one session produced, as each framework reports it."""

    handoffs: int
    final_agent: str
    final_text: str


@dataclass(slots=True)
class CallCounter:
    """Counts the scripted models' calls, so a framework that skips or repeats a call is caught."""

    triage: int = 0
    sales: int = 0

    @property
    def total(self) -> int:
        return self.triage + self.sales


class Framework(Protocol):
    """One framework set up for the scenario; ``session`` runs one whole session."""

    calls: CallCounter

    async def session(self, index: int) -> Outcome: ...

    async def close(self) -> None: ...


def check(name: str, outcomes: Sequence[Outcome], calls: CallCounter) -> None:
    """Raise :class:`BenchmarkError` unless every session made one handoff and ended with sales' text."""
    for index, outcome in enumerate(outcomes):
        expected = Outcome(handoffs=1, final_agent=SALES, final_text=SALES_TEXT)
        if outcome != expected:
            raise BenchmarkError(f"{name}: session {index} produced {outcome!r}, expected {expected!r}")
    n = len(outcomes)
    if (calls.triage, calls.sales) != (n, n):
        raise BenchmarkError(
            f"{name}: {n} session(s) made {calls.triage} triage and {calls.sales} sales model calls; "
            f"expected {n} of each"
        )
