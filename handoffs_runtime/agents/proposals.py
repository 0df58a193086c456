"""A proposed call that asks first, checked against the tool's types before anyone is asked.

An irreversible tool (or one that needs an approval) puts its call to a person: a confirmation, an
approval, the effect ledger's "it may already have happened" question. A weak model proposes
``change_flight`` with a number for the booking reference, no date, or an argument the tool does not
take (which pydantic would drop without a word, so the call would run without it). Asked about such a
call, the person confirms something that cannot run as they read it. Here it never reaches them: the
model gets an error result that names each argument that is wrong, so it can correct it or ask the
person; nothing is recorded in the effect ledger and nothing runs. The tool loop answers a repeat of
the same proposal from memory, so it counts toward the progress guard like any failed call.

Only the tools that ask first are checked (:func:`asks_first`, decided once per agent type): every
other call is validated by its tool as it runs, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult
from autogen_core.tools import Tool
from pydantic import ValidationError

from handoffs_runtime.agents.toolcalls import describe_validation, error_result, parse_arguments
from handoffs_runtime.tools.approval import ApprovalTool
from handoffs_runtime.tools.capabilities import layers
from handoffs_runtime.tools.effects import is_irreversible

logger = logging.getLogger("handoffs_runtime")

NOT_PUT = (
    "invalid arguments for {name}: {problems}. It was not put to the person and nothing was done: "
    "correct the arguments from what the person said, or ask the person for what you do not know; never "
    "guess."
)
"""The error result of a refused proposal (after ``Error: ``), for the model."""

_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def asks_first(tool: Tool) -> bool:
    """Whether a call of ``tool`` is put to a person before it runs: irreversible, or approved."""
    return is_irreversible(tool) or any(isinstance(layer, ApprovalTool) for layer in layers(tool))


def refusal(tool: Tool, call: FunctionCall, agent: str, session: str) -> FunctionExecutionResult | None:
    """The error result for ``call`` when its arguments do not fit ``tool`` (logged), else ``None``."""
    problems = proposal_problems(tool, call)
    if problems is None:
        return None
    logger.warning(
        "%s proposed %s with arguments that do not fit it in session %s: %s",
        agent,
        call.name,
        session,
        problems,
    )
    return error_result(call, NOT_PUT.format(name=call.name, problems=problems))


async def answered(result: FunctionExecutionResult) -> FunctionExecutionResult:
    """``result`` as a run's answer (what the progress guard remembers)."""
    return result


def proposal_problems(tool: Tool, call: FunctionCall) -> str | None:
    """What is wrong with ``call``'s arguments for ``tool``, each by its argument's name; ``None`` when
    the call can run as proposed."""
    args = parse_arguments(call)
    if isinstance(args, str):
        return args
    parameters: Mapping[str, Any] = tool.schema.get("parameters") or {}
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    problems = []
    if properties and parameters.get("additionalProperties") is not True:
        takes = ", ".join(properties)
        problems += [
            f"{key}: {tool.name} takes no such argument (it takes {takes})"
            for key in args
            if key not in properties
        ]
    args_type = tool.args_type()
    try:
        args_type.model_validate(args)
    except ValidationError as exc:
        problems.append(describe_validation(exc))
    else:
        if not args_type.model_fields:  # a type that says nothing (an MCP tool's): its schema says it
            problems += _schema_problems(parameters, properties, args)
    return "; ".join(problems) or None


def _schema_problems(
    parameters: Mapping[str, Any], properties: Mapping[str, Any], args: Mapping[str, Any]
) -> list[str]:
    """The required arguments missing and the plain JSON types not met, by the tool's JSON schema."""
    required = parameters.get("required") or ()
    problems = [f"{name}: Field required" for name in required if name not in args]
    for name, value in args.items():
        declared = (properties.get(name) or {}).get("type")
        names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
        accepted = tuple(t for n in names for t in _JSON_TYPES.get(n, ()))
        is_bool = isinstance(value, bool)
        if accepted and (not isinstance(value, accepted) or (is_bool and bool not in accepted)):
            problems.append(f"{name}: Input should be {' or '.join(names)}")
    return problems
