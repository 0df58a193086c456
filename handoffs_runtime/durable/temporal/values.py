"""The small values a session's workflow holds and sends: plain dataclasses, safe in the sandbox.

The conversation is never among them: activities read it from the session store by reference (the
session id and the sequence number the workflow expects), so history grows by a few hundred bytes a
turn, not by the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SESSIONS_QUEUE = "handoffs-sessions"
"""The task queue of the session workflows and their store activities (``--workflows``)."""
WORKFLOW = "HandoffsSession"
SAY = "say"
STATE = "state"
"""The query of a session's small state (:class:`Carried`)."""
RECENT = 32
"""How many answered message ids (with their results) a workflow keeps for a client's retry."""


@dataclass
class Said:
    """A person's message: ``message_id`` is also the Update's id, so a retry is answered, not run."""

    message_id: str
    text: str


@dataclass
class Answered:
    """What the person is shown for one message: lines, then a question if one waits for them."""

    message_id: str
    lines: list[str] = field(default_factory=list)
    question: str = ""
    person: str = "customer"
    agent: str = ""
    """Who answers the next message."""


@dataclass
class Pending:
    """A question a step asked mid-turn: the step runs again with the answers once the person answers."""

    agent: str
    path: list[str]
    answers: list[list[str]]
    """``[prompt, answer]`` pairs (lists: what a JSON round trip gives back)."""
    prompt: str
    person: str = "customer"
    turn_spent: float = 0.0
    """Seconds of the turn's deadline the agents before the asking one spent (the step's next try)."""


Tokens = dict[str, list[int]]
"""A session's token usage so far, by agent: ``{agent: [input, output]}`` (``Usage.to_json``)."""


@dataclass
class Carried:
    """The session's small state, carried over a continue-as-new."""

    active_agent: str
    seq: int
    recent: list[Answered] = field(default_factory=list)
    pending: Pending | None = None
    usage: Tokens = field(default_factory=dict)
    """Carried to each step, so the team's token budget counts the whole session."""


@dataclass
class SessionInput:
    session_id: str
    idle_seconds: float = 600.0
    max_hops: int = 10
    """A bound on steps per message beyond the team's loop guard: a team misconfigured cannot spin."""
    carried: Carried | None = None
    question_seconds: float = 86_400.0
    """How long a question waits for its person (a confirmation, the human agent's) before the workflow
    ends idle anyway; only the workflow holds it, so it is not ended after ``idle_seconds``."""


@dataclass
class OpenRequest:
    session_id: str


@dataclass
class SaidRequest:
    session_id: str
    text: str
    agent: str
    expected_seq: int


@dataclass(kw_only=True)
class Spent:
    """What the turn has spent so far, carried from step to step: the session's tokens, and the seconds
    of the turn's deadline (``TeamPolicy.turn_deadline``) before a step, or after it for a handoff's
    target."""

    usage: Tokens = field(default_factory=dict)
    turn_spent: float = 0.0


@dataclass
class StepInput(Spent):
    session_id: str
    agent: str
    expected_seq: int
    path: list[str]
    answers: list[list[str]]


@dataclass
class StepResult(Spent):
    kind: str
    agent: str
    seq: int
    lines: list[str]
    target: str = ""
    question: str = ""
    person: str = "customer"


@dataclass
class Opened:
    active_agent: str
    seq: int
    usage: Tokens = field(default_factory=dict)
