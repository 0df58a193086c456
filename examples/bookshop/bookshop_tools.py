"""The bookshop's tools: plain functions with type hints and docstrings (the model reads both)."""

from __future__ import annotations

from handoffs_runtime.tools.context import ask_person

ORDERS = {"BK-1001": "shipped on Monday; it should arrive by Thursday", "BK-1002": "being packed"}


def find_book(title: str) -> str:
    """Look a book up by its title and say whether it is in stock and what it costs."""
    return f"{title!r} is in stock: 12.50 EUR, paperback."


def order_status(order_number: str) -> str:
    """Say where an order is, from its order number (BK-...)."""
    return ORDERS.get(
        order_number.strip().upper(), f"no order {order_number!r}; check the number on the receipt"
    )


async def place_order(title: str, copies: int = 1) -> str:
    """Order copies of a book for the customer, after they confirm it."""
    answer = await ask_person(f"Order {copies} × {title!r} for {12.5 * copies:.2f} EUR? y/n")
    if answer is not None and answer.strip().lower() in ("y", "yes"):
        return f"Ordered {copies} × {title!r}: order BK-2001."
    return "The customer did not confirm; nothing was ordered."


def refund_order(order_number: str, reason: str) -> str:
    """Refund an order that arrived damaged or wrong."""
    return f"Refund for {order_number} started ({reason})."
