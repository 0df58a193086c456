"""Marking tools whose effect cannot be undone: an order placed, money refunded, a message sent.

The mark is data on the tool, read by whoever must be careful with it: the built-in offline model
never proposes such a tool on a guess (the person's words must ask for that action and name a clear
object), and an approval policy or a real model's prompt can use the same mark.

Example::

    AgentSpec("Sales", tools=[irreversible(execute_order)])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from autogen_core.tools import Tool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.tools.capabilities import WrapsTool
from handoffs_runtime.tools.functions import function_tool

_MARK = "irreversible"


def irreversible(tool: Tool | Callable[..., Any]) -> Tool:
    """``tool`` (a ``Tool`` or a plain function) marked as having an effect that cannot be undone."""
    if not isinstance(tool, Tool):
        if not callable(tool):
            raise TeamConfigError(f"irreversible needs a Tool or a function, got {tool!r}")
        tool = function_tool(tool, owner="irreversible")
    setattr(tool, _MARK, True)
    return tool


def is_irreversible(tool: object) -> bool:
    """Whether ``tool``, or the tool it wraps (``requires_approval``), is marked :func:`irreversible`."""
    while True:
        if getattr(tool, _MARK, False) is True:  # set by irreversible() on a tool of any class
            return True
        if not isinstance(tool, WrapsTool):
            return False
        tool = tool.inner


def irreversible_names(tools: Iterable[Tool]) -> frozenset[str]:
    """The names of the marked tools among ``tools``."""
    return frozenset(t.name for t in tools if is_irreversible(t))
