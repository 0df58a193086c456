"""Token usage per session: what every model reply reported, by agent, and the team's token budget.

The count travels with the conversation: the ``UserAgent`` puts the session's usage so far into each
``UserTask``, each agent adds what its model calls report, and the reply brings the total back. The
``UserAgent`` stores the turn's share with the reply entry (``body["usage"]``), so a session's usage is
the sum over its entries, and a resumed session starts from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autogen_core.models import RequestUsage

UsageByAgent = dict[str, list[int]]
"""``{agent: [input tokens, output tokens]}``."""

BUDGET_REPLY = (
    "Sorry, this conversation has used up its token budget, so I cannot answer any more here. "
    "Please start a new session."
)


def add(usage: UsageByAgent, agent: str, reported: RequestUsage) -> None:
    """Count one model reply's ``reported`` usage for ``agent`` (nothing for a reply that reports none)."""
    if not (reported.prompt_tokens or reported.completion_tokens):
        return
    counts = usage.setdefault(agent, [0, 0])
    counts[0] += max(int(reported.prompt_tokens), 0)
    counts[1] += max(int(reported.completion_tokens), 0)


def copy(usage: Mapping[str, list[int]] | None) -> UsageByAgent:
    """A copy to count on; it may come from another process, so only pairs of counts, none below 0."""
    if not usage:
        return {}
    return {
        agent: [max(counts[0], 0), max(counts[1], 0)] for agent, counts in usage.items() if len(counts) == 2
    }


def total(usage: Mapping[str, list[int]] | None) -> int:
    return sum(counts[0] + counts[1] for counts in (usage or {}).values())


def over_budget(budget: int | None, usage: Mapping[str, list[int]] | None) -> bool:
    """Whether a session that has used ``usage`` may not call a model again under ``budget``."""
    return budget is not None and total(usage) >= budget


def difference(after: Mapping[str, list[int]] | None, before: Mapping[str, list[int]]) -> UsageByAgent:
    """What ``after`` counts beyond ``before`` (the usage of one turn); never negative."""
    turn: UsageByAgent = {}
    for agent, counts in copy(after).items():
        base = before.get(agent, [0, 0])
        delta = [max(counts[0] - base[0], 0), max(counts[1] - base[1], 0)]
        if delta != [0, 0]:
            turn[agent] = delta
    return turn


def summed(turns: Iterable[Mapping[str, list[int]] | None]) -> UsageByAgent:
    """The usage of several turns together (e.g. every stored entry's ``body.get("usage")``)."""
    result: UsageByAgent = {}
    for turn in turns:
        if not isinstance(turn, Mapping):
            continue
        for agent, counts in turn.items():
            if isinstance(counts, list) and len(counts) == 2 and all(isinstance(n, int) for n in counts):
                into = result.setdefault(str(agent), [0, 0])
                into[0] += counts[0]
                into[1] += counts[1]
    return result


def merge(into: UsageByAgent, more: Mapping[str, list[int]] | None) -> None:
    """Add ``more`` (another agent's count, e.g. a worker's) to ``into``."""
    for agent, counts in summed([more]).items():
        mine = into.setdefault(agent, [0, 0])
        mine[0] += counts[0]
        mine[1] += counts[1]


_TOOL_USAGE = "usage"


def note_tool_usage(turn: dict[str, object], usage: Mapping[str, list[int]] | None) -> None:
    """Count the tokens a tool spent (through workers) in ``ToolContext.turn``, for its agent to take."""
    if usage:
        spent = turn.setdefault(_TOOL_USAGE, {})
        merge(spent, usage)  # type: ignore[arg-type]


def take_tool_usage(turn: dict[str, object]) -> UsageByAgent:
    """What the tools of this turn spent since the last call, counted once."""
    spent = turn.pop(_TOOL_USAGE, None)
    return spent if isinstance(spent, dict) else {}


def describe(usage: Mapping[str, list[int]]) -> str:
    """``TriageAgent 50 in + 5 out · ... · total 55 tokens`` (``no tokens reported`` when empty)."""
    if not usage:
        return "no tokens reported"
    parts = [f"{agent} {counts[0]:,} in + {counts[1]:,} out" for agent, counts in sorted(usage.items())]
    return " · ".join([*parts, f"total {total(usage):,} tokens"])
