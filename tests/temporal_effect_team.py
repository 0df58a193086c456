"""ACME whose sales agent, in one step, sends a gift voucher (irreversible: a line appended to a file), asks
the person to confirm the order (a question in the middle of the step), then places it (irreversible, a
line in the same file). The question ends the step; its next try runs the turn again with the answer, so
without the effect ledger every try would send another voucher.

The sales agent's model is a function of the conversation (the rest of the team keeps the offline model):
to "buy an anvil for 30 dollars" it asks "(yes/no)"; to "yes" it calls ``send_voucher``, then
``confirm_order`` (which asks "Confirm order? y/n"), then ``place_order``, and says the order is in.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path

from autogen_core.models import FunctionExecutionResultMessage, LLMMessage, UserMessage
from autogen_core.tools import FunctionTool, Tool, ToolSchema

from handoffs_runtime import irreversible
from handoffs_runtime.models.local import Reply, tool_call
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.tools.context import ask_person, current_tool_context

EFFECTS_FILE = "TEMPORAL_TEST_EFFECTS"
"""The environment variable naming the file each effect is appended to: ``<session> <tool> <key>``."""
ASK = "An anvil for $30, and a voucher with it. Shall I go ahead? (yes/no)"
CONFIRM = "Order summary: anvil for $30. Confirm order? y/n"
ORDERED = "Your anvil is ordered and your voucher is sent."
ORDER = {"product": "anvil", "price": 30}


def _effects() -> Path:
    return Path(os.environ[EFFECTS_FILE])


def _happened(tool: str) -> str:
    ctx = current_tool_context()
    session = ctx.session_id if ctx is not None else "?"
    key = ctx.idempotency_key if ctx is not None else None
    with _effects().open("a") as effects:
        effects.write(f"{session} {tool} {key}\n")
    return "Success"


async def send_voucher(note: str) -> str:
    """Send the customer a gift voucher (it cannot be taken back)."""
    return _happened("send_voucher")


async def place_order(product: str, price: int) -> str:
    """Place the order (it cannot be taken back)."""
    return _happened("place_order")


async def confirm_order(product: str, price: int) -> str:
    """Ask the customer to confirm the order."""
    answer = await ask_person(f"Order summary: {product} for ${price}. Confirm order? y/n")
    return "confirmed" if answer is not None and answer.strip().lower() in ("y", "yes") else "cancelled"


def happened(idempotency_key: str, arguments: dict[str, object]) -> bool:
    """Whether the effect of ``idempotency_key`` is in the file (a worker killed inside the tool)."""
    path = _effects()
    lines = path.read_text().splitlines() if path.exists() else []
    return any(line.split()[-1] == idempotency_key for line in lines)


def _sales(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
    said = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    last = said[-1] if said else 0
    text = str(messages[last].content).strip().lower() if said else ""
    results = {
        r.name: r.content
        for m in messages[last + 1 :]
        if isinstance(m, FunctionExecutionResultMessage)
        for r in m.content
    }
    if text != "yes":
        return ASK
    if "send_voucher" not in results:
        return [tool_call("send_voucher", {"note": "anvil"})]
    if "confirm_order" not in results:
        return [tool_call("confirm_order", ORDER)]
    if results["confirm_order"] != "confirmed":
        return "All right, no order."
    if "place_order" not in results:
        return [tool_call("place_order", ORDER)]
    return ORDERED


def _irreversible(function: Callable[..., Awaitable[str]], description: str) -> Tool:
    return irreversible(FunctionTool(function, description=description), reconcile=happened)


_acme = acme_team()
team = replace(
    _acme,
    agents=[
        replace(
            a,
            tools=[
                _irreversible(send_voucher, "Send a gift voucher."),
                FunctionTool(confirm_order, description="Ask the customer to confirm."),
                _irreversible(place_order, "Place the order."),
            ],
            model=FunctionModel(_sales),
        )
        if a.name == "SalesAgent"
        else a
        for a in _acme.agents
    ],
)
