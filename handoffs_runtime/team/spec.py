"""A team declared as data: ``AgentSpec`` and ``TeamSpec``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from autogen_core.models import ChatCompletionClient
from autogen_core.tools import Tool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.handoff import Handoff
from handoffs_runtime.handoffs.policy import TURN_DEADLINE_CALLS, TeamPolicy
from handoffs_runtime.topics import USER

AgentKind = Literal["ai", "human", "worker"]


@dataclass(frozen=True)
class AgentSpec:
    """One agent of a team. ``name`` is both its agent type and the topic type it subscribes to.

    ``description`` is what other agents' handoff tools say about it (its handoff description).
    ``tools`` are autogen ``Tool``s or plain functions (their docstring becomes the description).
    ``agent_tools`` names other agents of the team offered to this one as tools (``ask_<name>``): the
    caller sends a request and gets the answer back, keeping control (a handoff gives control away).
    ``kind="worker"`` makes an agent that is reached only as a tool (``create_worker``, ``agent_tools``):
    it answers each task on its own, takes no handoffs, and nobody hands off to it.
    ``examples`` are requests this agent is for, in the customers' words (``"where is my order?"``): the
    built-in offline model routes by them as well as by descriptions; language models never see them.
    """

    name: str
    system_message: str = ""
    description: str = ""
    tools: Sequence[Tool | Callable[..., Any]] = ()
    handoffs: Sequence[str | Handoff] = ()
    model: ChatCompletionClient | None = None
    kind: AgentKind = "ai"
    agent_tools: Sequence[str] = ()
    examples: tuple[str, ...] = ()
    display_name: str = ""
    """What people read for this agent ("Maya from Billing"); its name when empty."""
    max_tokens: int | None = None
    """The most tokens one of its model calls may write; the team's ``policy.max_tokens`` when ``None``."""

    @property
    def label(self) -> str:
        """The name people read."""
        return self.display_name or self.name


def human_agent(
    name: str,
    description: str = "A human operator, for what the AI agents cannot handle.",
    *,
    examples: tuple[str, ...] = (),
) -> AgentSpec:
    """A person reached through the channel as the operator."""
    return AgentSpec(name=name, description=description, kind="human", examples=examples)


@dataclass(frozen=True)
class TeamSpec:
    """A whole team: its agents, the one the person meets first, and its policy."""

    name: str
    agents: Sequence[AgentSpec]
    entry: str
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    user_topic: str = USER
    title: str = ""
    """The team's name as people read it: the console banner, the web page's title and header."""
    greeting: str = ""
    """The first line a person reads, before they type anything."""
    suggestions: tuple[str, ...] = ()
    """First questions a web page offers."""
    model: ChatCompletionClient | None = None
    """The team's own model (a team file's ``model``), for agents without one, unless another is given."""

    def agent(self, name: str) -> AgentSpec:
        for spec in self.agents:
            if spec.name == name:
                return spec
        raise TeamConfigError(f"team {self.name!r} has no agent {name!r}; it has {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    def label(self, name: str) -> str:
        """The name people read for agent ``name`` (its display name), or ``name`` itself."""
        return next((a.label for a in self.agents if a.name == name), name)

    @property
    def labels(self) -> dict[str, str]:
        """Every agent's display name, by agent name, for those that have one."""
        return {a.name: a.display_name for a in self.agents if a.display_name}

    @property
    def human(self) -> str | None:
        return next((a.name for a in self.agents if a.kind == "human"), None)


def streaming_team(team: TeamSpec, stream: bool) -> TeamSpec:
    """``team`` with its models called with ``create_stream`` (``stream``) or ``create``."""
    return replace(team, policy=replace(team.policy, stream=stream))


MODEL_TIMEOUT_MARGIN = 5.0
"""Seconds the team's own per-call limit waits past a client's deadline (``--model-timeout``)."""


def model_timeout_team(team: TeamSpec, seconds: float | None) -> TeamSpec:
    """``team`` for a model client whose calls end after :func:`call_deadline` seconds.

    The client's deadline must fire first: it keeps a streamed reply it cuts (marked as cut) and covers
    the client's retries, while the team's limit is a backstop a few seconds later. A turn's deadline
    the team does not set is derived from the client's deadline, not from the backstop.
    """
    deadline = call_deadline(team, seconds)
    if deadline is None:
        return team
    policy = team.policy
    turn = policy.turn_deadline
    if turn is None:
        turn = TURN_DEADLINE_CALLS * deadline
    return replace(
        team, policy=replace(policy, model_timeout=deadline + MODEL_TIMEOUT_MARGIN, turn_deadline=turn)
    )


def turn_deadline_team(team: TeamSpec, seconds: float | None) -> TeamSpec:
    """``team`` whose turns may spend ``seconds`` (``--turn-deadline``); as it was when ``None``."""
    if seconds is None:
        return team
    if not 0 < seconds < math.inf:
        raise TeamConfigError(f"--turn-deadline must be a positive number of seconds, got {seconds:g}")
    return replace(team, policy=replace(team.policy, turn_deadline=seconds))


def call_deadline(team: TeamSpec | None, seconds: float | None) -> float | None:
    """Seconds one call of a model the command line names may take: ``--model-timeout`` when given
    (``seconds``), else the team's ``model_timeout`` (a team file's ``policy.model_timeout``)."""
    if seconds is not None or team is None:
        return seconds
    return team.policy.model_timeout
