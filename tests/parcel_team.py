"""A second trade for the offline model's tests: a parcel service, with its own tools and examples.

Its handoffs carry no descriptions of their own: they say what their targets' descriptions say, so
routing here rests on those descriptions and on each agent's example requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handoffs_runtime import AgentSpec, TeamSpec, handoff, human_agent, irreversible

COUNTER, TRACKING, SHIPPING, CLAIMS, PERSON = "Counter", "Tracking", "Shipping", "Claims", "Clerk"
CLERK_REPLY = "Hello, Kim from Swift Parcels here."

done: list[tuple[str, str]] = []
"""Every irreversible action carried out: (tool, argument)."""


def track_parcel(tracking_number: str) -> str:
    """Find where a parcel is and when it will arrive."""
    return f"{tracking_number} is at the depot, out for delivery tomorrow"


def book_shipment(destination: str) -> str:
    """Book a courier to send a new parcel."""
    done.append(("book_shipment", destination))
    return f"courier booked to {destination}"


def refund_postage(shipment: str) -> str:
    """Refund the postage paid for a shipment."""
    done.append(("refund_postage", shipment))
    return "postage refunded"


TRACKING_EXAMPLES = (
    "where is my parcel?",
    "when will my package arrive?",
    "has my delivery been dispatched yet?",
    "the courier hasn't come",
    "is my box still in transit",
    "what's the status of TRK-1",
)
SHIPPING_EXAMPLES = (
    "I want to send a parcel to Lyon",
    "how much does it cost to post a letter abroad?",
    "book a courier for tomorrow",
    "I need to ship a box to my mother",
    "do you deliver to Iceland?",
)
CLAIMS_EXAMPLES = (
    "my parcel arrived damaged",
    "the box was crushed",
    "you lost my package",
    "I want compensation",
    "can I get my money back?",
    "I was charged twice for postage",
)


def parcel_team(*, examples: bool = True) -> TeamSpec:
    """Counter routes to tracking, shipping and claims, or to a clerk; ``examples=False`` leaves the
    example requests out, to show what they add."""

    def listed(phrases: tuple[str, ...]) -> tuple[str, ...]:
        return phrases if examples else ()

    back = handoff(COUNTER, tool_name_override="back_to_counter", tool_description_override="Anything else.")

    def desk(name: str, description: str, tool: Callable[..., Any], phrases: tuple[str, ...]) -> AgentSpec:
        """A specialist desk: one tool, a way back to the counter, and its example requests."""
        return AgentSpec(
            name, description=description, tools=[tool], handoffs=[back], examples=listed(phrases)
        )

    return TeamSpec(
        name="parcels",
        title="Swift Parcels",
        entry=COUNTER,
        agents=[
            AgentSpec(
                COUNTER,
                description="The front counter of Swift Parcels.",
                handoffs=[TRACKING, SHIPPING, CLAIMS, PERSON],
            ),
            desk(
                TRACKING,
                "Tracks parcels: where a parcel is and when it will be delivered.",
                track_parcel,
                TRACKING_EXAMPLES,
            ),
            desk(
                SHIPPING,
                "Sends new parcels: couriers, postage and destinations.",
                irreversible(book_shipment),
                SHIPPING_EXAMPLES,
            ),
            desk(
                CLAIMS,
                "Claims for lost or damaged parcels, and postage refunds.",
                irreversible(refund_postage),
                CLAIMS_EXAMPLES,
            ),
            human_agent(PERSON, "A clerk of Swift Parcels, a person.", examples=listed(("a real person",))),
        ],
    )
