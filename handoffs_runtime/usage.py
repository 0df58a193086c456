"""Token usage per session as a value: what every model reply reported, by agent, and the token budget.

The count travels with the conversation: the ``UserAgent`` puts the session's usage so far into each
``UserTask``, each agent adds what its model calls report, and the reply brings the total back. The
``UserAgent`` stores the turn's share (``reply.usage - before``) with the reply entry
(``body["usage"]``), so a session's usage is the sum over its entries, and a resumed session starts
from it.

Example::

    spent = Usage.of("Triage", 50, 5) + Usage.of("Sales", 100, 10)
    spent.total                        # 165
    spent.to_json()                    # {"Triage": [50, 5], "Sales": [100, 10]}: stored, sent
    Usage.from_json(spent.to_json()) == spent
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from autogen_core.models import RequestUsage
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

BUDGET_REPLY = (
    "Sorry, this conversation has used up its token budget, so I cannot answer any more here. "
    "Please start a new session."
)


class Tokens(NamedTuple):
    """One agent's tokens: sent to its model (``input``) and written by it (``output``)."""

    input: int
    output: int


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens by agent; immutable, so a count can be shared by messages and agents without copies.

    Agents that used no tokens are left out, so equal counts are equal values. ``a + b`` adds two
    counts (a turn and its workers'); ``after - before`` is what ``after`` counts beyond ``before``
    (one turn's share), never below zero.
    """

    by_agent: Mapping[str, Tokens] = field(default_factory=dict)
    """Read only; every count is at least 1 token in all."""

    EMPTY: ClassVar[Usage]
    """No tokens: the start of every count."""

    def __post_init__(self) -> None:
        checked: dict[str, Tokens] = {}
        for agent, counts in self.by_agent.items():
            tokens = Tokens(*counts)
            if not isinstance(agent, str) or not all(type(n) is int and n >= 0 for n in tokens):
                raise ValueError(
                    f"token counts must be whole numbers of at least 0, got {agent!r}: {counts!r}"
                )
            if tokens.input or tokens.output:
                checked[agent] = tokens
        object.__setattr__(self, "by_agent", checked)  # a private copy: nobody else holds it

    @classmethod
    def of(cls, agent: str, input: int, output: int) -> Usage:
        """One agent's count: ``Usage.of("Sales", 100, 10)``."""
        return cls({agent: Tokens(input, output)})

    @classmethod
    def reported(cls, agent: str, reported: RequestUsage) -> Usage:
        """What a model reply reports for ``agent`` (a client's negative counts read as 0)."""
        prompt, completion = int(reported.prompt_tokens), int(reported.completion_tokens)
        if prompt <= 0 and completion <= 0:
            return _EMPTY  # local models report nothing: no allocation on the hot path
        return _unchecked({agent: Tokens(max(prompt, 0), max(completion, 0))})

    @classmethod
    def from_json(cls, value: object) -> Usage:
        """A count read from a store or another process: ``{agent: [input, output]}``.

        Untrusted, so forgiving: anything that is not such a pair is left out, negatives read as 0."""
        if not isinstance(value, Mapping):
            return _EMPTY
        counts: dict[str, Tokens] = {}
        for agent, pair in value.items():
            if (
                isinstance(agent, str)
                and isinstance(pair, list | tuple)
                and len(pair) == 2
                and all(type(n) is int for n in pair)
                and (pair[0] > 0 or pair[1] > 0)
            ):
                counts[agent] = Tokens(max(pair[0], 0), max(pair[1], 0))
        return _unchecked(counts) if counts else _EMPTY

    @classmethod
    def sum(cls, counts: Iterable[Usage]) -> Usage:
        """All of ``counts`` added up (e.g. the usage stored with each entry of a session)."""
        result = _EMPTY
        for usage in counts:
            result = result + usage
        return result

    def to_json(self) -> dict[str, list[int]]:
        """``{agent: [input, output]}``: the shape stored with entries and sent between processes."""
        return {agent: [tokens.input, tokens.output] for agent, tokens in self.by_agent.items()}

    @property
    def input(self) -> int:
        """Input tokens of all agents together."""
        return sum(tokens.input for tokens in self.by_agent.values())

    @property
    def output(self) -> int:
        """Output tokens of all agents together."""
        return sum(tokens.output for tokens in self.by_agent.values())

    @property
    def total(self) -> int:
        """Input and output tokens of all agents together: what a budget counts."""
        return sum(tokens.input + tokens.output for tokens in self.by_agent.values())

    def over(self, budget: int | None) -> bool:
        """Whether a session that used this much may not call a model again under ``budget``."""
        return budget is not None and self.total >= budget

    def describe(self) -> str:
        """``TriageAgent 50 in + 5 out · ... · total 55 tokens`` (``no tokens reported`` when empty)."""
        if not self.by_agent:
            return "no tokens reported"
        parts = [f"{agent} {t.input:,} in + {t.output:,} out" for agent, t in sorted(self.by_agent.items())]
        return " · ".join([*parts, f"total {self.total:,} tokens"])

    def __add__(self, other: Usage) -> Usage:
        if not other.by_agent:
            return self
        if not self.by_agent:
            return other
        counts = dict(self.by_agent)
        for agent, (more_in, more_out) in other.by_agent.items():
            had_in, had_out = counts.get(agent, _NONE)
            counts[agent] = Tokens(had_in + more_in, had_out + more_out)
        return _unchecked(counts)

    def __sub__(self, other: Usage) -> Usage:
        if not other.by_agent:
            return self
        counts: dict[str, Tokens] = {}
        for agent, (now_in, now_out) in self.by_agent.items():
            was_in, was_out = other.by_agent.get(agent, _NONE)
            delta = Tokens(max(now_in - was_in, 0), max(now_out - was_out, 0))
            if delta.input or delta.output:
                counts[agent] = delta
        return _unchecked(counts) if counts else _EMPTY

    def __bool__(self) -> bool:
        return bool(self.by_agent)

    def __hash__(self) -> int:
        return hash(frozenset(self.by_agent.items()))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """In a pydantic message: ``{agent: [input, output]}`` on the wire, a ``Usage`` in Python; a null
        (or a missing field) is no usage."""
        wire = core_schema.dict_schema(
            core_schema.str_schema(), core_schema.list_schema(core_schema.int_schema())
        )
        return core_schema.no_info_plain_validator_function(
            _validated,
            json_schema_input_schema=core_schema.nullable_schema(wire),
            serialization=core_schema.plain_serializer_function_ser_schema(cls.to_json),
        )


_NONE = Tokens(0, 0)


def _validated(value: object) -> Usage:
    """A message's ``usage`` field: a ``Usage``, or its JSON from another process (``None``: no usage)."""
    if isinstance(value, Usage):
        return value
    if value is None or isinstance(value, Mapping):
        return Usage.from_json(value)
    raise ValueError(f"usage must be {{agent: [input tokens, output tokens]}}, got {type(value).__name__}")


def _unchecked(counts: dict[str, Tokens]) -> Usage:
    """A ``Usage`` of counts that are valid by construction (sums and differences of valid ones)."""
    usage = object.__new__(Usage)
    object.__setattr__(usage, "by_agent", counts)
    return usage


_EMPTY = Usage()
Usage.EMPTY = _EMPTY
