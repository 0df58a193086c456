"""How the offline model fills a tool's arguments from the person's words, and what it must ask for.

Arguments keep the words as written (letters of any language, accents, emoji); a symbol is dropped only
when the parameter's schema cannot hold it (a ``pattern`` it fails), and text is cut to ``maxLength``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autogen_core.tools import ToolSchema

from handoffs_runtime.models.offline.routing import tool_terms
from handoffs_runtime.models.offline.values import Kind, corrected, kind_of, masked, read
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


@dataclass(frozen=True)
class Reading:
    """A tool's arguments as read from a request, each by its parameter (see ``values``)."""

    values: dict[str, Any]
    """The arguments read from the words, the answers and the corrections, by parameter."""
    about: str
    """The object of the request, as written, once the values' words are taken out."""
    lacking: str | None
    """The first argument still to ask for, as the question names it; ``None``: nothing is lacking."""
    objects: frozenset[str] = frozenset()
    """The arguments that took the object (``about``), which the person confirms as they wrote it."""

    def quoted(self) -> str:
        """What a person confirms for a tool of one argument: the object as written (emoji and all),
        else the one value read (a code, a date)."""
        if self.objects or not self.values:
            return self.about
        return str(next(iter(self.values.values())))

    def named(self, tool: ToolSchema) -> list[tuple[str, Any]]:
        """The values a person confirms, by parameter, in the tool's order: a tool's one argument as
        :meth:`quoted` has it (the object as written, emoji and all); none when only some of several are
        read (the rest come from a look-up: the person confirms the object, ``about``)."""
        shown = [(name, self.values[name]) for name in properties(tool) if name in self.values]
        if len(properties(tool)) == 1:
            return [(name, self.quoted()) for name, _ in shown]
        return shown if len(shown) > 1 else []


_READ_FIRST = (Kind.DATE, Kind.REFERENCE, Kind.AMOUNT, Kind.PRICE, Kind.QUANTITY, Kind.NAME)
"""The most particular kinds read first: a date's ``20`` is no amount, a code's letters no name."""


def _labels(name: str) -> tuple[str, str]:
    return humanize(name), humanize(name.removesuffix("_id"))


def reading(
    tool: ToolSchema,
    clause: str,
    answers: Sequence[tuple[str, str]],
    corrections: Sequence[str],
    regular: list[ToolSchema],
    *,
    irreversible: bool,
    rest: str = "",
) -> Reading:
    """Each argument of ``tool`` read by its kind from ``clause`` (or a value of its kind from the
    ``rest`` of the request), the ``answers`` (each to the argument it was asked for) and the
    ``corrections``; what one argument took no other gets."""
    specs = properties(tool)
    kinds = {
        name: kind_of(name, spec)
        for name, spec in specs.items()
        if spec.get("type") in ("string", "integer", "number")
        and "enum" not in spec
        and not is_descriptive(name)
        and provider(name, tool, regular) is None
    }
    found: dict[str, Any] = {}
    about = ""
    for label, answer in answers:
        named = [n for n in kinds if label in _labels(n)]
        for name in named:
            value = read(kinds[name], answer)
            if value is not None:
                found[name] = value.value
            elif kinds[name] in (Kind.TEXT, Kind.NAME):
                found[name] = fit(answer, specs[name])
        if not named:
            about = answer  # "Which item?": the object itself
    text = clause
    for kind in _READ_FIRST:
        for name in [n for n, k in kinds.items() if k is kind and n not in found]:
            value = read(kind, text)
            if value is not None:
                found[name] = fit(value.value, specs[name]) if isinstance(value.value, str) else value.value
                text = masked(text, value)
            elif kind is not Kind.NAME and (value := read(kind, rest)) is not None:  # "... bag? tag BG7"
                found[name] = value.value
                rest = masked(rest, value)
    about = about or subject(text, tool)
    taken = {v for v in found.values() if isinstance(v, str)}
    objects: set[str] = set()
    for name in [n for n, k in kinds.items() if k in (Kind.TEXT, Kind.NAME) and n not in found]:
        if about and about not in taken:  # the object goes to one argument, never two
            found[name] = fit(about, specs[name])
            taken.add(about)
            objects.add(name)
    for said in corrections:
        for name, kind in kinds.items():
            value = corrected(kind, found.get(name), said)
            if value is not None and kind is not Kind.TEXT:
                found[name] = value
                break  # one correction, one argument
    lacking = _lacking(tool, kinds, found, about, regular, irreversible=irreversible)
    return Reading(found, about, lacking, frozenset(objects))


def _lacking(
    tool: ToolSchema,
    kinds: dict[str, Kind],
    found: dict[str, Any],
    about: str,
    regular: list[ToolSchema],
    *,
    irreversible: bool,
) -> str | None:
    """The first required argument with no value (a number only for an irreversible tool: a reversible
    one may try a default; never a price, the seller's to know); for an irreversible tool with nothing
    read, the object itself."""
    required = [p for p in parameters(tool).get("required") or [] if p in properties(tool)]
    for name in required:
        if name in kinds and name not in found:
            defaulted = kinds[name] in (Kind.AMOUNT, Kind.QUANTITY) and not irreversible
            if defaulted or kinds[name] is Kind.PRICE:
                continue
            return humanize(name)
    if irreversible and not about and not any(n in found for n in kinds):
        provided = [p for p in required if provider(p, tool, regular) is not None]
        return humanize(provided[0].removesuffix("_id")) if provided else "item"
    return None
