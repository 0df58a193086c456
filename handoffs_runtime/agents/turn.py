"""The typed vocabulary of one turn: how it ends, and the handoff decision the tool loop asks for.

The loop (:class:`~handoffs_runtime.agents.toolloop.ToolLoop`) runs a response's regular tool calls
itself; for its handoff calls it asks the agent's :class:`HandoffDecider` once, with
:class:`HandoffCalls`, and gets a :class:`HandoffDecision`: a result for each call and, when the turn
ends there, a :class:`Transfer` or a :class:`GuardStop`. The loop then ends in exactly one member of the
closed union :data:`TurnEnd`, which each agent reads with one ``match``::

    match await loop.run(history, context, token, usage=usage, decider=self):
        case Replied(history, new, usage, text): ...
        case HandedOff(history, new, usage, transfer): ...
        ...
        case unreachable:
            assert_never(unreachable)      # mypy fails when a new kind of end is not handled

A worker has no handoffs and passes no decider.

The dataclasses here are values that nothing changes once built, but not frozen: several are built on
every turn of every session, and a frozen dataclass's ``__init__`` (an ``object.__setattr__`` call per
field) costs about four times a plain one with slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult, LLMMessage
from pydantic import BaseModel

from handoffs_runtime.handoffs.handoff import Handoff
from handoffs_runtime.usage import Usage

# --- the decision on a response's handoff calls ------------------------------------------------------


class HandoffCalls(NamedTuple):
    """A response's calls to handoff tools (enabled or not), in response order, for the agent to decide.

    This and :class:`HandoffDecision` are built on every response with handoff calls: named tuples,
    immutable and typed, are the cheapest values Python has."""

    calls: Sequence[FunctionCall]
    enabled: frozenset[str]
    """The handoffs offered to the model in this round; a call to another one is refused."""
    said: str | None
    """What the model wrote next to the calls: forwarded in the context and shown to the person."""


@dataclass(slots=True)
class Transfer:
    """A response's one handoff that is carried out: the turn ends and the conversation moves."""

    handoff: Handoff
    call: FunctionCall
    data: BaseModel | None
    """The handoff's validated input, if it takes one."""
    said: str | None


@dataclass(slots=True)
class GuardStop:
    """A handoff that the loop guard refused: the turn ends with the team's fallback."""

    handoff: Handoff
    call: FunctionCall
    reason: str


class HandoffDecision(NamedTuple):
    """A result for each handoff call (same order), and how the turn ends, if it ends here."""

    results: Sequence[FunctionExecutionResult]
    ends_turn: Transfer | GuardStop | None = None


class HandoffDecider(Protocol):
    """What an agent with handoffs gives the loop: a decision on a response's handoff calls.

    It may publish events (a refused handoff) but never calls back into the loop.
    """

    async def decide(self, request: HandoffCalls) -> HandoffDecision: ...


# --- how a turn ends -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Ended:
    history: Sequence[LLMMessage]
    """The conversation before the turn as the model read it: the one given, or, when it outgrew the
    model's context, its most recent messages behind a note (see :mod:`.trim`). What comes next builds
    on it."""
    new: Sequence[LLMMessage]
    """What the turn added to the conversation: each round's calls and their results (read only)."""
    usage: Usage
    """The session's tokens, this turn's (and its workers') included."""


@dataclass(slots=True)
class Replied(_Ended):
    """The model answered with text (stripped; empty when it said nothing)."""

    text: str


@dataclass(slots=True)
class HandedOff(_Ended):
    """The agent decided to hand the conversation on."""

    transfer: Transfer
    """The handoff carried out, with its call and its validated input."""


@dataclass(slots=True)
class LoopStopped(_Ended):
    """A handoff was refused by the loop guard (too many handoffs in a turn, or ping-pong); the team's
    ``on_loop`` policy says what happens instead (the human agent, or a message to the person)."""

    stop: GuardStop


@dataclass(slots=True)
class OutOfRounds(_Ended):
    """The model still wanted tools after ``policy.max_tool_rounds`` rounds."""


@dataclass(slots=True)
class OutOfTime(_Ended):
    """The turn spent its time (``policy.turn_deadline``) before its next model call or tool round; the
    calls of a response that came in after it did not run (they are not in ``new``)."""


@dataclass(slots=True)
class OverBudget(_Ended):
    """The session's token budget (``policy.token_budget``) was used up before the next model call;
    the model is not called again in this session."""


@dataclass(slots=True)
class ModelFailed(_Ended):
    """The model raised or missed its deadline."""

    error: str
    """Why, in one line, for a caller that reports it (a worker)."""
    exception: BaseException
    """For a caller that explains it to a person."""


TurnEnd = Replied | HandedOff | LoopStopped | OutOfRounds | OutOfTime | OverBudget | ModelFailed
"""Every way a turn of the loop ends; closed: agents ``match`` it with ``assert_never`` as the last case."""
