"""Loop protection and other per-team rules of the conversation.

None of the reference frameworks bounds handoff loops. Here a turn (everything between two messages of
the person) may make at most ``handoff_budget`` handoffs, and a ping-pong (A→B→A→B) is stopped as soon
as it appears. What happens then is the team's ``on_loop`` choice: a clear message to the person from
the agent that holds the conversation, or escalation to the team's human agent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.handoff import InputFilter, check_input_filter

LoopFallback = Literal["message", "escalate"]

LOOP_MESSAGE = (
    "Sorry, I could not find the right person for this request. Could you say a little more about what "
    "you need?"
)

TURN_DEADLINE_CALLS = 2
"""A turn's default time, in calls' deadlines: a turn usually needs two calls (the model asks a tool,
then answers), and is cut after the one in flight when they run slow."""


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    """Rules every agent of a team follows. All have safe defaults."""

    handoff_budget: int = 4
    """Handoffs allowed in one turn before the loop guard stops the conversation."""
    on_loop: LoopFallback = "escalate"
    """``"escalate"`` hands a stopped loop to the human agent when the team has one, else ``"message"``."""
    max_tool_rounds: int = 8
    """Model calls with tool results an agent may make in one turn before it gives up with a message."""
    input_filter: InputFilter | None = None
    """The team-wide input filter (sync or async); a handoff's own ``input_filter`` replaces it."""
    nest_handoff_history: bool = False
    """The team-wide default for nesting the history on handoff; an input filter replaces it, as in the
    OpenAI Agents SDK, unless the handoff itself asks for nesting."""
    concurrent_tool_calls: bool = True
    """Run the regular tool calls of one model response at once (results stay in call order), as the
    OpenAI Agents SDK does; ``False`` runs them one at a time, for tools that must not overlap."""
    stream: bool = False
    """Call models with ``create_stream`` instead of ``create``."""
    model_timeout: float | None = 45.0
    """Seconds one model call may take, from the request to the last byte of the answer (the client's
    own retries included), before the agent apologises. ``None``: no limit. In-process models skip it."""
    turn_deadline: float | None = None
    """Seconds one turn (from the person's message to the answer, across handoffs) may spend on model
    calls and tool rounds; once spent, no new call or round starts (one in flight finishes within its own
    ``model_timeout``, so a turn lasts at most this plus one call), and the turn ends with a plain
    sentence, or goes to the human agent with ``on_loop="escalate"``. Time spent waiting for a person
    (a confirmation) does not count. ``None``: ``TURN_DEADLINE_CALLS`` times ``model_timeout`` for models
    that have a call deadline, else no limit."""
    max_reply_chars: int = 256 * 1024
    """The longest model reply or tool result kept, in characters; a longer one is cut, with a note
    saying so, before anyone sees or stores it. (Tool call arguments go to the tool whole.)"""
    token_budget: int | None = None
    """Tokens (input and output, as the models report them) a session may use; past it, agents answer
    with a clear message instead of calling their model. ``None``: no limit."""
    trim_context: bool = True
    """When the model's server says the conversation is longer than the model can read, send it again
    without its oldest messages (the system message, the person's latest message and what follows it
    always stay; a tool call never goes without its result), continue the session from there, and tell
    the person once. ``False``: the person is told the conversation is too long, on every turn after."""
    max_tokens: int | None = 1024
    """The most tokens one model call may write (``max_tokens``, sent on every call): a small model that
    rambles, or a call the deadline abandoned, cannot keep its server busy for minutes. ``None``: the
    server's own limit."""
    stalled_rounds: int = 2
    """Tool rounds in a row that bring no result the turn has not seen before (the same tool asked the
    same thing again) after which the turn ends; the agent says it could not finish, or, with
    ``on_loop="escalate"``, hands the conversation to the human agent."""
    endpoint: Mapping[str, bool | str] | None = None
    """What the endpoints of the team's OpenAI-compatible models can do, said up front instead of learnt
    (``streams_tool_calls``, ``tool_call_content``, ``usage_in_streams``; see
    :mod:`~handoffs_runtime.models.capabilities`); applied when the team's agents are built."""
    operator_wait: float | None = 60.0
    """Seconds a web customer who asked for a person waits for an operator to take the conversation
    before being told that nobody can answer now (and offered to leave a message or go back to the
    assistant); with no operator signed in they are told at once. ``None``: only then."""
    approval_max_age: float = 300.0
    """Seconds an operator's approval of a tool call stays good from the moment it was asked: a yes that
    comes later is void (so is one given after the customer left or after the turn was over), the tool
    does not run, and the operator is told."""

    def __post_init__(self) -> None:
        if self.handoff_budget < 1:
            raise TeamConfigError("handoff_budget must be at least 1")
        if self.max_tool_rounds < 1:
            raise TeamConfigError("max_tool_rounds must be at least 1")
        if self.model_timeout is not None and not 0 < self.model_timeout < math.inf:
            raise TeamConfigError(
                f"model_timeout must be a positive number of seconds or None, got {self.model_timeout!r}"
            )
        if self.turn_deadline is not None and not 0 < self.turn_deadline < math.inf:
            raise TeamConfigError(
                f"turn_deadline must be a positive number of seconds or None, got {self.turn_deadline!r}"
            )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise TeamConfigError("max_tokens must be at least 1 (or None for the server's own limit)")
        if self.stalled_rounds < 1:
            raise TeamConfigError("stalled_rounds must be at least 1")
        if self.max_reply_chars < 1:
            raise TeamConfigError("max_reply_chars must be at least 1")
        if self.token_budget is not None and self.token_budget < 1:
            raise TeamConfigError("token_budget must be at least 1 (or None for no limit)")
        if self.operator_wait is not None and not 0 < self.operator_wait < math.inf:
            raise TeamConfigError(
                f"operator_wait must be a positive number of seconds or None, got {self.operator_wait!r}"
            )
        if not 0 < self.approval_max_age < math.inf:
            raise TeamConfigError(
                f"approval_max_age must be a positive number of seconds, got {self.approval_max_age!r}"
            )
        if self.on_loop not in ("message", "escalate"):
            raise TeamConfigError("on_loop must be 'message' or 'escalate'")
        if self.input_filter is not None:
            check_input_filter(self.input_filter, "TeamPolicy.input_filter")

    def turn_limit(self, *, call_deadline: bool = True) -> float | None:
        """The seconds a turn may spend: ``turn_deadline``, else derived from ``model_timeout`` for a model
        with a call deadline (``call_deadline``), else ``None`` (no limit)."""
        if self.turn_deadline is not None:
            return self.turn_deadline
        if not call_deadline or self.model_timeout is None:
            return None
        return TURN_DEADLINE_CALLS * self.model_timeout


def loop_reason(turn_path: Sequence[str], target: str, budget: int) -> str | None:
    """Why handing the turn to ``target`` would be a loop, or ``None`` when it is fine.

    ``turn_path`` is the agents that held the conversation this turn, the current one last.
    """
    hops = len(turn_path) - 1 if turn_path else 0
    if hops + 1 > budget:
        return f"handoff budget of {budget} per turn exhausted"
    path = [*turn_path, target]
    if len(path) >= 4 and path[-1] == path[-3] and path[-2] == path[-4] and path[-1] != path[-2]:
        return f"ping-pong between {path[-2]} and {path[-1]}"
    return None
