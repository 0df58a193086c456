"""An agent's profile, given to a local model once when the team is registered, not on every call.

A model that routes by the team's words (the offline one) needs to know the agent it serves: its
description, its example requests, whom its handoffs reach. As pydantic-ai's ``FunctionModel`` receives
``AgentInfo``, such a model implements :class:`TakesAgentProfile`, and registering the team gives each
agent its own model with :meth:`~TakesAgentProfile.for_agent`. So the tool loop carries nothing that
only a local model reads; a remote model is never asked.

Example::

    class Greeter(LocalModel):
        profile: AgentProfile | None = None

        def for_agent(self, profile: AgentProfile) -> Greeter:
            model = Greeter()
            model.profile = profile
            return model
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from autogen_core.models import ChatCompletionClient


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """One agent as its model may know it; every field but ``name`` may be empty."""

    name: str
    label: str = ""
    """What people read for the agent (its display name); empty: its name."""
    description: str = ""
    """What the agent is for (its ``AgentSpec.description``)."""
    tools: tuple[str, ...] = ()
    """The names of its regular tools (``ask_<agent>`` ones included)."""
    handoffs: tuple[str, ...] = ()
    """The tool names of its handoffs (offered to the model while enabled)."""
    targets: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Each handoff's target as people know it, by the handoff's tool name: its display name (or name)
    and its description."""
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Example requests (``AgentSpec.examples``): the agent's own under its name, and those of each
    handoff's target under the handoff's tool name."""
    irreversible: frozenset[str] = frozenset()
    """Its tools marked :func:`~handoffs_runtime.tools.effects.irreversible`: never called on a guess."""


@runtime_checkable
class TakesAgentProfile(Protocol):
    """A model that answers better knowing whom it serves; registering a team asks it for each agent's own."""

    def for_agent(self, profile: AgentProfile) -> ChatCompletionClient:
        """The model one agent calls: this one, knowing ``profile`` (shared state stays shared)."""
        ...
