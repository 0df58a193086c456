"""Which tool or handoff the offline model picks, by the words of its name, description and examples.

A handoff is also matched by its target's example requests (``AgentSpec.examples``).

An example counts as a description written in the customers' own words: ``where is my order?`` listed
for issues and repairs sends ``where is my parcel?`` there too, as both ask about a status. A team with
no examples routes by names and descriptions alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from autogen_core.tools import ToolSchema

from handoffs_runtime.models.offline.intents import intent_words
from handoffs_runtime.models.offline.words import CONCEPTS, Word, score, terms

Examples = Mapping[str, Sequence[str]]
"""Example requests by handoff tool name (its target's), and the calling agent's own under its name."""


def tool_terms(tool: ToolSchema) -> frozenset[str]:
    """The words of a tool's name and description, with the concepts its description's phrases stand
    for (``double charges`` is about billing; ``transfer to sales agent`` asks for no person)."""
    description = tool.get("description", "")
    return _terms(tool["name"].replace("_", " ")) | example_terms(description)


@lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


@lru_cache(maxsize=4096)
def example_terms(example: str) -> frozenset[str]:
    """The words of an example request, with the concepts its phrases stand for."""
    return frozenset(terms(example) | {w.norm for w in intent_words(example)})


def concepts(examples: Iterable[str]) -> set[str]:
    """The concepts (``buy``, ``status``...) that ``examples`` are about: an agent's own area."""
    return {t for e in examples for t in example_terms(e) if t in CONCEPTS}


def best(
    found: list[Word], tools: Iterable[ToolSchema], examples: Examples | None = None
) -> ToolSchema | None:
    """The tool that ``found`` fits best (the first one of a tie), or ``None`` when none fits at all."""
    scored = [(fit(found, t, examples or {}), i, t) for i, t in enumerate(tools)]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: (s[0], -s[1]))[2] if scored else None


def fit(found: list[Word], tool: ToolSchema, examples: Examples | None = None) -> float:
    """The description's score, plus the best of the examples' (an example says more than a word)."""
    own = score(found, tool_terms(tool))
    listed = (examples or {}).get(tool["name"], ())
    return own + max((score(found, set(example_terms(e))) for e in listed), default=0.0)
