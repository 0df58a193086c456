"""Plain functions as tools, refused when the team is built if a model could never call them.

A model calls a tool with JSON arguments checked against a schema made from the function's signature, so
every parameter needs a type hint that JSON can carry, and the tool needs a name (a lambda has none). Without
this check such a function fails deep inside autogen, on the first call, with ``KeyError: 'order_id'``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from autogen_core.tools import FunctionTool
from pydantic import TypeAdapter

from handoffs_runtime.errors import TeamConfigError

_HOW = (
    "write it as `def {name}({example}) -> str:` with a type hint on every parameter and a docstring "
    "that says what it does (the model reads it)"
)


def function_tool(
    function: Callable[..., Any], *, owner: str, description: str | None = None
) -> FunctionTool:
    """``function`` as a ``FunctionTool``, or a ``TeamConfigError`` naming it and saying what to write.

    ``owner`` names where the tool was given (``"agent 'Sales'"``); ``description`` defaults to the
    docstring.
    """
    name = getattr(function, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>" or not name.isidentifier():
        raise TeamConfigError(
            f"{owner}: a lambda cannot be a tool (a model calls tools by name); "
            + _HOW.format(name="my_tool", example="order_id: str")
        )
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function)
    except (TypeError, ValueError, NameError) as exc:
        raise TeamConfigError(f"{owner}: tool {name!r} cannot be read ({exc}); {_how(name, None)}") from None
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TeamConfigError(
                f"{owner}: tool {name!r} takes *{param.name}; a model sends named arguments only: "
                + _how(name, signature)
            )
        if param.name == "cancellation_token":
            continue
        hint = hints.get(param.name)
        if hint is None:
            raise TeamConfigError(
                f"{owner}: tool {name!r} has no type hint for its parameter {param.name!r}; "
                + _how(name, signature)
            )
        try:
            TypeAdapter(hint).json_schema()
        except Exception:
            raise TeamConfigError(
                f"{owner}: tool {name!r}: the type of {param.name!r} ({_type_name(hint)}) cannot be "
                "sent as JSON; use str, int, float, bool, a list, a dict, an Enum or a pydantic model"
            ) from None
    doc = description if description is not None else (inspect.getdoc(function) or "")
    try:
        return FunctionTool(function, description=doc.strip(), name=name)
    except Exception as exc:
        raise TeamConfigError(f"{owner}: tool {name!r} cannot be a tool: {exc}") from None


def _how(name: str, signature: inspect.Signature | None) -> str:
    params = list(signature.parameters) if signature is not None else []
    example = (
        ", ".join(f"{p}: str" for p in params if p not in ("self", "cancellation_token")) or "query: str"
    )
    return _HOW.format(name=name, example=example)


def _type_name(hint: object) -> str:
    return getattr(hint, "__name__", None) or str(hint)
