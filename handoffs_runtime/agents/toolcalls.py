"""Running one regular tool call, and the results a model gets back when a call cannot run.

A model's bad call never raises here: arguments that are not a JSON object, arguments that fail the
tool's validation, a tool that raises and a name nobody offered each become an error result that says
what went wrong, so the model can try again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import FunctionExecutionResult
from autogen_core.tools import Tool
from pydantic import ValidationError

from handoffs_runtime.agents.replies import cut_text

logger = logging.getLogger("handoffs_runtime")


async def run_tool_call(
    tool: Tool, call: FunctionCall, cancellation_token: CancellationToken
) -> FunctionExecutionResult:
    """Run one regular tool call; bad arguments and a tool that raises become error results."""
    args = parse_arguments(call)
    if isinstance(args, str):
        return error_result(call, args)
    try:
        value = await tool.run_json(args, cancellation_token, call_id=call.id)
    except ValidationError as exc:
        return error_result(call, f"invalid arguments for {call.name}: {describe_validation(exc)}")
    except Exception as exc:
        logger.warning("tool %s raised %s: %s", call.name, type(exc).__name__, exc)
        return error_result(call, f"tool {call.name} failed: {type(exc).__name__}: {exc}")
    content = tool.return_value_as_string(value)
    return FunctionExecutionResult(call_id=call.id, name=call.name, content=content)


def unknown_tool_result(call: FunctionCall, available: Iterable[str]) -> FunctionExecutionResult:
    """The error result for a call to a tool that was not offered, naming the ones that were."""
    offered = ", ".join(available) or "none"
    return error_result(call, f"there is no tool named {call.name!r}; available: {offered}")


def error_result(call: FunctionCall, text: str) -> FunctionExecutionResult:
    return FunctionExecutionResult(call_id=call.id, name=call.name, content=f"Error: {text}", is_error=True)


def parse_arguments(call: FunctionCall) -> dict[str, Any] | str:
    """The call's arguments as a dict, or an error text for the model."""
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError as exc:
        return f"arguments of {call.name} are not valid JSON ({exc}); send a JSON object"
    if not isinstance(args, dict):
        return f"arguments of {call.name} must be a JSON object, got {type(args).__name__}"
    return args


def describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def capped(result: FunctionExecutionResult, max_chars: int) -> FunctionExecutionResult:
    """``result`` with its content cut to ``max_chars`` (the policy's reply cap)."""
    if len(result.content) <= max_chars:
        return result
    return result.model_copy(update={"content": cut_text(result.content, max_chars, "result was")})
