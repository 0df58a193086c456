"""Marks on tools: an effect that cannot be undone (an order placed, money refunded), running code.

The marks are data on the tool, read by whoever must be careful with it: the built-in offline model
never proposes an irreversible tool on a guess (the person's words must ask for that action and name a
clear object); ``handoffs serve`` has the operator approve every call of either kind (see
:mod:`handoffs_runtime.team.oversight`), and a real model's prompt can use the same marks.

An irreversible tool may bring a ``reconcile`` function: when the runtime finds an earlier call of it
whose outcome is unknown (its process died inside the tool), it asks ``reconcile(key, arguments)`` (the
call's idempotency key and arguments) whether the effect happened: ``True`` it did, ``False`` it did not,
``None`` it cannot tell (see :mod:`handoffs_runtime.agents.ledgered`).

Example::

    AgentSpec("Sales", tools=[irreversible(execute_order, reconcile=order_exists)])
    AgentSpec("Lab", tools=[runs_code(my_shell_tool)])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from autogen_core.tools import Tool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.tools.capabilities import layers
from handoffs_runtime.tools.functions import function_tool

_MARK = "irreversible"
_RECONCILE = "reconcile_effect"
_CODE_MARK = "runs_code"
_CODE_MODULES = ("autogen_ext.tools.code_execution",)
"""autogen-ext's code execution tools, which run code without carrying our mark."""


Reconcile = Callable[[str, dict[str, Any]], "bool | Awaitable[bool | None] | None"]
"""``reconcile(idempotency_key, arguments)``: whether an effect whose outcome is unknown happened."""


def irreversible(tool: Tool | Callable[..., Any], *, reconcile: Reconcile | None = None) -> Tool:
    """``tool`` (a ``Tool`` or a plain function) marked as having an effect that cannot be undone;
    ``reconcile`` tells whether an earlier call whose outcome is unknown happened (module docstring)."""
    if reconcile is not None and not callable(reconcile):
        raise TeamConfigError(f"reconcile must be a function, got {reconcile!r}")
    marked = _marked(tool, _MARK)
    if reconcile is not None:
        setattr(marked, _RECONCILE, reconcile)
    return marked


def reconciler(tool: object) -> Reconcile | None:
    """The ``reconcile`` function given to :func:`irreversible` for ``tool`` (or the tool it wraps)."""
    for layer in layers(tool):
        found = getattr(layer, _RECONCILE, None)
        if callable(found):
            return found  # type: ignore[no-any-return]
    return None


def runs_code(tool: Tool | Callable[..., Any]) -> Tool:
    """``tool`` (a ``Tool`` or a plain function) marked as running code it is given (a model's code)."""
    return _marked(tool, _CODE_MARK)


def _marked(tool: Tool | Callable[..., Any], mark: str) -> Tool:
    if not isinstance(tool, Tool):
        if not callable(tool):
            raise TeamConfigError(f"{mark} needs a Tool or a function, got {tool!r}")
        tool = function_tool(tool, owner=mark)
    setattr(tool, mark, True)
    return tool


def is_irreversible(tool: object) -> bool:
    """Whether ``tool``, or the tool it wraps (``requires_approval``), is marked :func:`irreversible`."""
    return any(getattr(t, _MARK, False) is True for t in layers(tool))


def is_code_runner(tool: object) -> bool:
    """Whether ``tool``, or the tool it wraps, runs code: marked :func:`runs_code`, or autogen-ext's."""
    return any(
        getattr(t, _CODE_MARK, False) is True or type(t).__module__.startswith(_CODE_MODULES)
        for t in layers(tool)
    )


def irreversible_names(tools: Iterable[Tool]) -> frozenset[str]:
    """The names of the marked tools among ``tools``."""
    return frozenset(t.name for t in tools if is_irreversible(t))
