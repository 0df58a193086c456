"""Strict JSON schemas for tool parameters, the shape OpenAI's strict function calling accepts.

Every object gets ``additionalProperties: false`` and lists all of its properties as required; a
``$ref`` with keys beside it is resolved in place, a lone ``allOf`` is merged, and ``default: null`` is
dropped. The OpenAI Agents SDK and the ``openai`` library make handoff and function schemas strict the
same way. A schema that cannot be strict (an object with free-form keys, such as a ``dict`` field) is
refused with the way out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from handoffs_runtime.errors import TeamConfigError


def to_strict_json_schema(schema: Mapping[str, Any], *, owner: str = "tool") -> dict[str, Any]:
    """A strict copy of ``schema``; ``owner`` names the tool in the error a non-strict schema raises."""
    root = copy.deepcopy(dict(schema))
    return _strict(root, root, owner)


def _strict(node: dict[str, Any], root: dict[str, Any], owner: str) -> dict[str, Any]:
    for key in ("$defs", "definitions"):
        definitions = node.get(key)
        if isinstance(definitions, dict):
            for definition in definitions.values():
                _strict_any(definition, root, owner)
    if node.get("type") == "object":
        if node.get("additionalProperties", False) is not False:
            raise TeamConfigError(
                f"{owner}: an object with free-form keys (a dict field, or extra='allow') cannot have a "
                "strict schema; give it named fields, or pass strict_json_schema=False"
            )
        node["additionalProperties"] = False
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        for prop in properties.values():
            _strict_any(prop, root, owner)
    _strict_any(node.get("items"), root, owner)
    for variant in node.get("anyOf") or ():
        _strict_any(variant, root, owner)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        node.pop("allOf")
        node.update(_strict(all_of[0], root, owner))
    else:
        for part in all_of or ():
            _strict_any(part, root, owner)
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:  # keys beside a $ref: resolve it so none is lost
        target = _resolve(root, ref)
        del node["$ref"]
        node.update({**copy.deepcopy(target), **node})
        return _strict(node, root, owner)
    return node


def _strict_any(node: object, root: dict[str, Any], owner: str) -> None:
    if isinstance(node, dict):
        _strict(node, root, owner)


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise TeamConfigError(f"cannot resolve the schema reference {ref!r}: only local ones are supported")
    node: object = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            raise TeamConfigError(f"cannot resolve the schema reference {ref!r}")
        node = node[part]
    if not isinstance(node, dict):
        raise TeamConfigError(f"the schema reference {ref!r} does not name a schema")
    return node
