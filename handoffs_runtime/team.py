"""A team declared as data, and registered on any autogen-core runtime with one call.

Example::

    team = TeamSpec(
        name="support",
        entry="Triage",
        agents=[
            AgentSpec("Triage", system_message="Route the customer.", handoffs=["Billing"]),
            AgentSpec("Billing", description="Invoices and payments.", tools=[refund]),
        ],
    )
    await register_team(runtime, team, model=my_model, channel=my_channel)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from autogen_core import AgentRuntime, TypeSubscription
from autogen_core.models import ChatCompletionClient, SystemMessage
from autogen_core.tools import FunctionTool, Tool

from .agents import AIAgent, AIAgentConfig, HumanAgent, HumanAgentConfig, UserAgent, UserAgentConfig
from .agents.user import SessionEndHook
from .channels import Channel
from .errors import TeamConfigError
from .messages import UserLogin
from .policy import TeamPolicy
from .tools.handoff import Handoff, handoff
from .topics import HANDOFF_EVENTS, USER, session_topic

AgentKind = Literal["ai", "human"]


@dataclass(frozen=True)
class AgentSpec:
    """One agent of a team. ``name`` is both its agent type and the topic type it subscribes to.

    ``description`` is what other agents' handoff tools say about it (its handoff description).
    ``tools`` are autogen ``Tool``s or plain functions (their docstring becomes the description).
    """

    name: str
    system_message: str = ""
    description: str = ""
    tools: Sequence[Tool | Callable[..., Any]] = ()
    handoffs: Sequence[str | Handoff] = ()
    model: ChatCompletionClient | None = None
    kind: AgentKind = "ai"


def human_agent(name: str, description: str = "A human operator, for what the AI agents cannot handle.") -> AgentSpec:
    """A person reached through the channel as the operator."""
    return AgentSpec(name=name, description=description, kind="human")


@dataclass(frozen=True)
class TeamSpec:
    """A whole team: its agents, the one the person meets first, and its policy."""

    name: str
    agents: Sequence[AgentSpec]
    entry: str
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    user_topic: str = USER
    title: str = ""

    def agent(self, name: str) -> AgentSpec:
        for spec in self.agents:
            if spec.name == name:
                return spec
        raise TeamConfigError(f"team {self.name!r} has no agent {name!r}; it has {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    @property
    def human(self) -> str | None:
        return next((a.name for a in self.agents if a.kind == "human"), None)


@dataclass(frozen=True)
class BuiltAgent:
    """An agent with its tools wrapped and its handoffs resolved and validated."""

    spec: AgentSpec
    tools: Mapping[str, Tool]
    handoffs: Mapping[str, Handoff]


def build_team(team: TeamSpec) -> dict[str, BuiltAgent]:
    """Validate a team and resolve its handoffs; every misconfiguration is raised here, not mid-chat."""
    names = team.names
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise TeamConfigError(f"team {team.name!r}: agent names must be unique; repeated: {sorted(duplicates)}")
    reserved = {team.user_topic, HANDOFF_EVENTS} & set(names)
    if reserved:
        raise TeamConfigError(f"team {team.name!r}: {sorted(reserved)} is reserved for the runtime; rename the agent")
    if team.entry not in names:
        raise TeamConfigError(f"team {team.name!r}: entry agent {team.entry!r} is not one of {names}")
    built = {}
    for spec in team.agents:
        if spec.kind == "human" and (spec.tools or spec.handoffs):
            raise TeamConfigError(f"agent {spec.name!r} is human: it takes no tools or handoffs")
        tools = _wrap_tools(spec)
        handoffs: dict[str, Handoff] = {}
        for item in spec.handoffs:
            h = handoff(item) if isinstance(item, str) else item
            if not isinstance(h, Handoff):
                raise TeamConfigError(f"agent {spec.name!r}: a handoff must be an agent name or handoff(...), got {item!r}")
            if h.target not in names:
                raise TeamConfigError(
                    f"agent {spec.name!r} hands off to unknown agent {h.target!r}; the team has {', '.join(names)}"
                )
            if h.target == spec.name:
                raise TeamConfigError(f"agent {spec.name!r} cannot hand off to itself")
            if h.tool_name in handoffs or h.tool_name in tools:
                raise TeamConfigError(f"agent {spec.name!r}: two tools are named {h.tool_name!r}; use tool_name_override")
            handoffs[h.tool_name] = h.resolved(team.agent(h.target).description)
        built[spec.name] = BuiltAgent(spec, tools, handoffs)
    return built


def _wrap_tools(spec: AgentSpec) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for item in spec.tools:
        if isinstance(item, Tool):
            tool = item
        elif callable(item):
            tool = FunctionTool(item, description=(item.__doc__ or "").strip())
        else:
            raise TeamConfigError(f"agent {spec.name!r}: {item!r} is neither a Tool nor a function")
        if tool.name in tools:
            raise TeamConfigError(f"agent {spec.name!r}: two tools are named {tool.name!r}")
        tools[tool.name] = tool
    return tools


async def register_team(
    runtime: AgentRuntime,
    team: TeamSpec,
    *,
    model: ChatCompletionClient,
    channel: Channel,
    models: Mapping[str, ChatCompletionClient] | None = None,
    only: Iterable[str] | None = None,
    with_user: bool = True,
    on_session_end: SessionEndHook | None = None,
    agent_type: Callable[[str], str] | None = None,
) -> dict[str, BuiltAgent]:
    """Register the team's agents (and the ``UserAgent``) on ``runtime`` with their subscriptions.

    ``models`` overrides the model per agent name (after each ``AgentSpec.model``); ``only`` registers a
    subset, for a distributed worker; ``with_user=False`` leaves the ``UserAgent`` to a front end.
    ``agent_type`` maps a name to the agent type registered for it (a shard or a front end's session,
    see ``topics.shard_agent_type``); it still subscribes to the topic type of the name.
    """
    type_of = agent_type or (lambda name: name)
    built = build_team(team)
    wanted = set(only) if only is not None else set(built)
    unknown = wanted - set(built) - {team.user_topic}
    if unknown:
        raise TeamConfigError(f"unknown agents {sorted(unknown)}; team {team.name!r} has {', '.join(built)}")
    overrides = models or {}
    for name in built:
        if name not in wanted:
            continue
        agent = built[name]
        spec = agent.spec
        if spec.kind == "human":
            human_config = HumanAgentConfig(name, channel, team.user_topic, spec.description or "A human operator.")
            await HumanAgent.register(runtime, type_of(name), _factory(HumanAgent, human_config))
        else:
            ai_config = AIAgentConfig(
                name=name,
                system_message=SystemMessage(content=spec.system_message or f"You are {name}."),
                model=overrides.get(name) or spec.model or model,
                tools=agent.tools,
                handoffs=agent.handoffs,
                policy=team.policy,
                channel=channel,
                human_agent=team.human,
                user_topic=team.user_topic,
                description=spec.description or name,
            )
            await AIAgent.register(runtime, type_of(name), _factory(AIAgent, ai_config))
        await runtime.add_subscription(TypeSubscription(topic_type=name, agent_type=type_of(name)))
    if with_user:
        user_config = UserAgentConfig(team.entry, channel, team.user_topic, on_session_end=on_session_end)
        user_type = type_of(team.user_topic)
        await UserAgent.register(runtime, user_type, _factory(UserAgent, user_config))
        await runtime.add_subscription(TypeSubscription(topic_type=team.user_topic, agent_type=user_type))
        await runtime.add_subscription(TypeSubscription(topic_type=HANDOFF_EVENTS, agent_type=user_type))
    return built


def _factory(cls: Callable[[Any], Any], config: Any) -> Callable[[], Any]:
    return lambda: cls(config)


async def start_session(runtime: AgentRuntime, session_id: str, *, user_topic: str = USER) -> None:
    """Open a session: the ``UserAgent`` of ``session_id`` asks the person for their first message."""
    await runtime.publish_message(UserLogin(), topic_id=session_topic(user_topic, session_id))
