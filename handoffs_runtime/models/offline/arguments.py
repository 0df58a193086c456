"""How the offline model fills a tool's arguments from the person's words, and what it must ask for.

Arguments keep the words as written (letters of any language, accents, emoji); a symbol is dropped only
when the parameter's schema cannot hold it (a ``pattern`` it fails), and text is cut to ``maxLength``.
"""

from __future__ import annotations

import re
from typing import Any

from autogen_core.tools import ToolSchema

from handoffs_runtime.models.offline.routing import tool_terms
from handoffs_runtime.models.offline.words import object_text, stem, without_symbols, words

LITERAL_PARAMS = frozenset({"code", "script", "source", "command", "expression", "program", "snippet"})
SPELLED_OUT_PARAMS = frozenset({"task", "description", "request", "instruction", "prompt"})
"""Arguments that the whole request fills, also in an explicit ``<instruction>: <text>``."""
_DESCRIPTIVE_PARAMS = SPELLED_OUT_PARAMS | {"query", "reason", "details", "summary"}
_REFERENCES = frozenset({"id", "key", "ref"})


def humanize(name: str) -> str:
    return name.replace("_", " ")


def subject(clause: str, tool: ToolSchema) -> str:
    """What ``clause`` asks ``tool`` to act on, as written: its words that are not the tool's own, nor
    vague (``refund my naïve café shoes 👟`` → ``naïve café shoes 👟``)."""
    return object_text(clause, words(clause), tool_terms(tool))


def parameters(tool: ToolSchema) -> dict[str, Any]:
    return dict(tool.get("parameters") or {})


def properties(tool: ToolSchema) -> dict[str, dict[str, Any]]:
    props = parameters(tool).get("properties") or {}
    return {k: v for k, v in props.items() if isinstance(v, dict)}


def required_strings(tool: ToolSchema) -> list[str]:
    required = parameters(tool).get("required") or []
    return [p for p in required if properties(tool).get(p, {}).get("type") == "string"]


def _is_reference(param: str) -> bool:
    """A parameter that names something by a code (``tracking_number``, ``order_id``): it has digits."""
    return bool(set(param.lower().split("_")) & (_REFERENCES | {"number", "code"}))


def is_descriptive(param: str) -> bool:
    return bool(set(param.lower().split("_")) & _DESCRIPTIVE_PARAMS)


def provider(param: str, target: ToolSchema, tools: list[ToolSchema]) -> ToolSchema | None:
    """Another tool whose description says it finds ``param`` (e.g. "find item ID" for ``item_id``)."""
    wanted = {stem(p) for p in param.lower().split("_") if p}
    if len(wanted) < 2:
        return None
    for tool in tools:
        if tool is not target and wanted <= tool_terms(tool) and "find" in tool_terms(tool):
            return tool
    return None


def missing(tool: ToolSchema, about: str, regular: list[ToolSchema], *, irreversible: bool) -> str | None:
    """What the person must still name before ``tool`` can be proposed for ``about`` (its subject): a
    required argument the words do not give, or, for an irreversible tool, the object itself."""
    for param in required_strings(tool):
        provided = provider(param, tool, regular) is not None
        if provided or is_descriptive(param):
            if irreversible and not about:
                return humanize(param.removesuffix("_id")) if provided else humanize(param)
            continue
        if not about or (_is_reference(param) and not any(c.isdigit() for c in about)):
            return humanize(param)  # "my package" is no tracking number
    if irreversible and not about:
        return "item"
    return None


def explicit(request: str, tools: list[ToolSchema], best: Any) -> tuple[ToolSchema, str] | None:
    """The tool and the spelled-out text of an ``<instruction>: <text>`` request, if it is one
    (``best`` picks the tool the instruction names)."""
    head, colon, payload = request.partition(":")
    if not colon or not payload.strip():
        return None
    tool: ToolSchema | None = best(words(head), tools)
    if tool is None:
        return None
    params = required_strings(tool)
    known = LITERAL_PARAMS | SPELLED_OUT_PARAMS
    if not params or not all(set(p.lower().split("_")) & known for p in params):
        return None
    return tool, payload.strip()


def explicit_arguments(tool: ToolSchema, payload: str, request: str) -> dict[str, Any]:
    args = arguments(tool, request, {}, about=payload)
    for param in required_strings(tool):
        args[param] = payload if set(param.lower().split("_")) & LITERAL_PARAMS else request
    return args


def fit(value: str, spec: dict[str, Any]) -> str:
    """``value`` as the parameter ``spec`` can hold it: symbols dropped if its ``pattern`` refuses them,
    cut to its ``maxLength``."""
    pattern = spec.get("pattern")
    if isinstance(pattern, str) and not _matches(pattern, value):
        value = without_symbols(value)
    limit = spec.get("maxLength")
    if isinstance(limit, int) and len(value) > limit:
        value = value[:limit].rstrip()
    return value


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:  # a pattern in a dialect Python does not read: keep the words as they are
        return True


def arguments(
    tool: ToolSchema, clause: str, found: dict[str, str], *, request: str | None = None, about: str = ""
) -> dict[str, Any]:
    """Arguments read off the words: descriptive ones get the whole ``request``, the others ``about``
    (the object of ``clause``, or the person's answer) or what a provider tool found, numbers the first
    number of ``clause``."""
    request = request or clause
    required = set(parameters(tool).get("required") or [])
    numbers = re.findall(r"\d+(?:\.\d+)?", clause)
    provider_result = next((v for k, v in found.items() if k != tool["name"]), None)
    args: dict[str, Any] = {}
    for name, spec in properties(tool).items():
        kind = spec.get("type")
        if kind == "string":
            if "enum" in spec:
                args[name] = spec["enum"][0]
            elif name in required and provider_result is not None and set(name.split("_")) & _REFERENCES:
                args[name] = provider_result
            elif is_descriptive(name):
                args[name] = fit(request, spec)
            elif name in required:
                args[name] = fit(about or request, spec)
        elif kind in ("integer", "number") and name in required:
            value = float(numbers[0]) if numbers else 100
            args[name] = int(value) if kind == "integer" else value
        elif kind == "boolean" and name in required:
            args[name] = True
    return args
