"""ACME with an order tool that leaves a trace in a file and then takes its time: a chat killed inside it
shows whether the order was placed once (the file holds one line per order placed)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

from autogen_core.tools import FunctionTool

from handoffs_runtime import irreversible
from handoffs_runtime.teams.acme import acme_team

ORDERS_FILE = "EFFECT_TEST_ORDERS"
"""The environment variable naming the file each order is appended to."""


async def execute_order(product: str, price: int) -> str:
    """Place an order: written to the orders file at once, then a slow confirmation from the supplier."""
    with Path(os.environ[ORDERS_FILE]).open("a") as orders:
        orders.write(f"{product} {price}\n")
    await asyncio.sleep(float(os.environ.get("EFFECT_TEST_SLEEP", "30")))
    return "Success"


_tool = irreversible(FunctionTool(execute_order, description="Price should be in USD."))
_acme = acme_team()
team = replace(
    _acme,
    agents=[replace(a, tools=[_tool]) if a.tools and a.name == "SalesAgent" else a for a in _acme.agents],
)
