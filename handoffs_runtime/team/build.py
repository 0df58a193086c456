"""Building a team: validate its spec and make every agent's configuration.

:func:`build_team` validates and resolves (tools wrapped, handoffs checked); :func:`plan_team` turns the
agents wanted into plans, one per agent type, each with its finished configuration (its model chosen and
given the agent's profile, traced when telemetry is on), so that registering is a loop over plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TypedDict

from autogen_core.models import ChatCompletionClient, SystemMessage
from autogen_core.tools import Tool

from handoffs_runtime.agents.ai import AIAgentConfig
from handoffs_runtime.agents.human import HumanAgentConfig
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.handoff import Handoff, handoff
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.models.profile import AgentProfile, TakesAgentProfile
from handoffs_runtime.team.spec import AgentSpec, TeamSpec
from handoffs_runtime.telemetry import Telemetry
from handoffs_runtime.telemetry.instrument import traced_model, traced_tools
from handoffs_runtime.tools.capabilities import delegate_of
from handoffs_runtime.tools.effects import irreversible_names
from handoffs_runtime.tools.functions import function_tool
from handoffs_runtime.tools.workers import agent_tool
from handoffs_runtime.topics import HANDOFF_EVENTS, TOOL_AGENT_SUFFIX, tool_agent_type


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
        raise TeamConfigError(
            f"team {team.name!r}: agent names must be unique; repeated: {sorted(duplicates)}"
        )
    reserved = {team.user_topic, HANDOFF_EVENTS} & set(names)
    if reserved:
        raise TeamConfigError(
            f"team {team.name!r}: {sorted(reserved)} is reserved for the runtime; rename the agent"
        )
    if team.entry not in names:
        raise TeamConfigError(f"team {team.name!r}: entry agent {team.entry!r} is not one of {names}")
    if team.agent(team.entry).kind == "worker":
        raise TeamConfigError(f"team {team.name!r}: entry agent {team.entry!r} is a worker; pick an ai agent")
    built = {}
    for spec in team.agents:
        if spec.kind == "human" and (spec.tools or spec.handoffs or spec.agent_tools):
            raise TeamConfigError(f"agent {spec.name!r} is human: it takes no tools or handoffs")
        if spec.kind == "worker" and spec.handoffs:
            raise TeamConfigError(
                f"agent {spec.name!r} is a worker: it answers its caller and takes no handoffs"
            )
        tools = _wrap_tools(spec)
        _add_agent_tools(team, spec, tools)
        handoffs: dict[str, Handoff] = {}
        for item in spec.handoffs:
            h = handoff(item) if isinstance(item, str) else item
            if not isinstance(h, Handoff):
                raise TeamConfigError(
                    f"agent {spec.name!r}: a handoff must be an agent name or handoff(...), got {item!r}"
                )
            if h.target not in names:
                raise TeamConfigError(
                    f"agent {spec.name!r} hands off to unknown agent {h.target!r}; "
                    f"the team has {', '.join(names)}"
                )
            if h.target == spec.name:
                raise TeamConfigError(f"agent {spec.name!r} cannot hand off to itself")
            if team.agent(h.target).kind == "worker":
                raise TeamConfigError(
                    f"agent {spec.name!r} hands off to worker {h.target!r}; offer it with agent_tools instead"
                )
            if h.tool_name in handoffs or h.tool_name in tools:
                raise TeamConfigError(
                    f"agent {spec.name!r}: two tools are named {h.tool_name!r}; use tool_name_override"
                )
            handoffs[h.tool_name] = h.resolved(team.agent(h.target).description)
        built[spec.name] = BuiltAgent(spec, tools, handoffs)
    return built


def _add_agent_tools(team: TeamSpec, spec: AgentSpec, tools: dict[str, Tool]) -> None:
    """Resolve ``spec.agent_tools`` into ``ask_<agent>`` tools and check every tool that delegates."""
    for name in spec.agent_tools:
        if name not in team.names or name == spec.name:
            others = [n for n in team.names if n != spec.name]
            raise TeamConfigError(f"agent {spec.name!r}: agent_tools names {name!r}; choose from {others}")
        target = team.agent(name)
        if target.kind == "human":
            raise TeamConfigError(f"agent {spec.name!r}: {name!r} is human, not a tool; hand off to it")
        worker_type = name if target.kind == "worker" else tool_agent_type(name)
        ask = agent_tool(name, target.description, worker_type=worker_type)
        if ask.name in tools:
            raise TeamConfigError(f"agent {spec.name!r}: two tools are named {ask.name!r}")
        tools[ask.name] = ask
    served = {a.name for a in team.agents if a.kind == "worker"} | {
        tool_agent_type(a.name) for a in team.agents if a.kind == "ai"
    }
    for tool in tools.values():
        delegate = delegate_of(tool)
        if delegate is not None and delegate not in served:
            workers = sorted(a.name for a in team.agents if a.kind == "worker") or "none"
            raise TeamConfigError(
                f"agent {spec.name!r}: tool {tool.name!r} sends tasks to {delegate!r}, which is not a "
                f"worker of team {team.name!r} (workers: {workers}); "
                f"add AgentSpec({delegate!r}, kind='worker')"
            )


def human_handoff_targets(built: Mapping[str, BuiltAgent]) -> frozenset[str]:
    """The agents a human agent may hand the conversation back to (``/handoff AGENT``): the AI agents."""
    return frozenset(n for n, a in built.items() if a.spec.kind == "ai")


def tool_served_agents(built: Mapping[str, BuiltAgent]) -> set[str]:
    """The AI agents some other agent calls as a tool: each gets a ``<name>.tool`` worker type."""
    wanted = {delegate_of(t) for agent in built.values() for t in agent.tools.values()}
    return {n for n, agent in built.items() if agent.spec.kind == "ai" and tool_agent_type(n) in wanted}


def delegations(built: Mapping[str, BuiltAgent]) -> list[tuple[str, str, str]]:
    """``(caller, callee, tool name)`` for every tool that sends tasks to another agent of the team.

    These are the caller-keeps-control edges of the topology, next to the handoff edges.
    """
    edges = []
    for name, agent in built.items():
        for tool in agent.tools.values():
            delegate = delegate_of(tool)
            if delegate is not None:
                callee = delegate.removesuffix(TOOL_AGENT_SUFFIX) if delegate not in built else delegate
                edges.append((name, callee, tool.name))
    return edges


def _wrap_tools(spec: AgentSpec) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for item in spec.tools:
        if isinstance(item, Tool):
            tool = item
        elif callable(item):
            tool = function_tool(item, owner=f"agent {spec.name!r}")
        else:
            raise TeamConfigError(f"agent {spec.name!r}: {item!r} is neither a Tool nor a function")
        if tool.name in tools:
            raise TeamConfigError(f"agent {spec.name!r}: two tools are named {tool.name!r}")
        tools[tool.name] = tool
    return tools


AgentConfig = AIAgentConfig | HumanAgentConfig | WorkerAgentConfig
"""The finished configuration of one agent type; its type is the agent's role."""


@dataclass(frozen=True)
class AgentPlan:
    """One agent type to register: its name, its finished configuration, and the topic it listens on."""

    agent_type: str
    """The type's name before a shard's or a front end's mapping: the agent's name, or ``<name>.tool``."""
    config: AgentConfig
    topic: str | None
    """The topic type it subscribes to (its name); ``None`` for a worker type, which answers RPCs."""


@dataclass(frozen=True)
class TeamPlan:
    """A built team (tools traced when telemetry is on) and the plans of the agents wanted from it."""

    built: dict[str, BuiltAgent]
    plans: tuple[AgentPlan, ...]


def plan_team(
    team: TeamSpec,
    *,
    channel: Channel,
    model: ChatCompletionClient | None = None,
    models: Mapping[str, ChatCompletionClient] | None = None,
    only: Iterable[str] | None = None,
    telemetry: Telemetry | None = None,
) -> TeamPlan:
    """Build ``team`` and plan ``only`` its named agents (all when ``None``).

    An agent's model is ``models[name]``, else its ``AgentSpec.model``, else ``model``; only the agents
    planned that run a model need one (a :class:`TeamConfigError` names the first without). A model
    that :class:`~handoffs_runtime.models.profile.TakesAgentProfile` is given the agent's profile.
    """
    built = build_team(team)
    if telemetry is not None:
        built = {name: _traced(agent, telemetry) for name, agent in built.items()}
    wanted = set(built) if only is None else set(only)
    unknown = wanted - set(built) - {team.user_topic}
    if unknown:
        raise TeamConfigError(f"unknown agents {sorted(unknown)}; team {team.name!r} has {', '.join(built)}")
    as_tools = tool_served_agents(built)
    pick = _ModelPicker(model, models or {}, telemetry)
    plans: list[AgentPlan] = []
    for name, agent in built.items():
        if name not in wanted:
            continue
        spec = agent.spec
        if spec.kind == "worker" or name in as_tools:
            worker_type = name if spec.kind == "worker" else tool_agent_type(name)
            profile = AgentProfile(name, tools=tuple(agent.tools), irreversible=_irreversible(agent))
            worker = _worker_config(agent, pick(agent, profile), channel, team)
            plans.append(AgentPlan(worker_type, worker, None))
        if spec.kind == "human":
            description = spec.description or "A human operator."
            human = HumanAgentConfig(
                name, channel, team.user_topic, description, human_handoff_targets(built)
            )
            plans.append(AgentPlan(name, human, name))
        elif spec.kind == "ai":
            plans.append(
                AgentPlan(name, _ai_config(agent, pick(agent, _profile(agent, team)), channel, team), name)
            )
    return TeamPlan(built, tuple(plans))


def worker_types(built: Mapping[str, BuiltAgent]) -> set[str]:
    """Every worker type of the team: its worker agents, and ``<name>.tool`` for each AI agent offered as
    a tool (what a finished session's workers are released by)."""
    return {n for n, a in built.items() if a.spec.kind == "worker"} | {
        tool_agent_type(n) for n in tool_served_agents(built)
    }


class _ModelPicker:
    """The model of each agent planned: chosen, given the agent's profile, traced."""

    def __init__(
        self,
        model: ChatCompletionClient | None,
        models: Mapping[str, ChatCompletionClient],
        telemetry: Telemetry | None,
    ) -> None:
        self._model = model
        self._models = models
        self._telemetry = telemetry

    def __call__(self, agent: BuiltAgent, profile: AgentProfile) -> ChatCompletionClient:
        name = agent.spec.name
        chosen = self._models.get(name) or agent.spec.model or self._model
        if chosen is None:
            raise TeamConfigError(
                f"agent {name!r} needs a model: pass model=..., models={{{name!r}: ...}}, or give its "
                "AgentSpec a model"
            )
        if isinstance(chosen, TakesAgentProfile):
            chosen = chosen.for_agent(profile)
        return chosen if self._telemetry is None else traced_model(self._telemetry, chosen)


def _profile(agent: BuiltAgent, team: TeamSpec) -> AgentProfile:
    """An AI agent as its model may know it: who it is, what it does, whom its handoffs reach."""
    spec = agent.spec
    targets = {tool: team.agent(h.target) for tool, h in agent.handoffs.items()}
    examples = {tool: target.examples for tool, target in targets.items()}
    examples[spec.name] = spec.examples
    return AgentProfile(
        spec.name,
        label=spec.display_name,
        description=spec.description or spec.name,
        tools=tuple(agent.tools),
        handoffs=tuple(agent.handoffs),
        targets={tool: (target.label, target.description) for tool, target in targets.items()},
        examples={key: tuple(listed) for key, listed in examples.items() if listed},
        irreversible=_irreversible(agent),
    )


def _irreversible(agent: BuiltAgent) -> frozenset[str]:
    return irreversible_names(agent.tools.values())


class _Answering(TypedDict):
    """What an agent answers with, the same whether it holds the conversation or serves as a tool."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    tools: Mapping[str, Tool]
    channel: Channel
    policy: TeamPolicy
    description: str


def _answering(
    agent: BuiltAgent, model: ChatCompletionClient, channel: Channel, team: TeamSpec
) -> _Answering:
    spec = agent.spec
    return _Answering(
        name=spec.name,
        system_message=_system_message(spec),
        model=model,
        tools=agent.tools,
        channel=channel,
        policy=_policy_of(spec, team),
        description=spec.description or spec.name,
    )


def _ai_config(
    agent: BuiltAgent, model: ChatCompletionClient, channel: Channel, team: TeamSpec
) -> AIAgentConfig:
    """How an agent holds the conversation: what it answers with, its handoffs, and whom it reaches."""
    return AIAgentConfig(
        **_answering(agent, model, channel, team),
        handoffs=agent.handoffs,
        human_agent=team.human,
        user_topic=team.user_topic,
        label=agent.spec.display_name,
    )


def _worker_config(
    agent: BuiltAgent, model: ChatCompletionClient, channel: Channel, team: TeamSpec
) -> WorkerAgentConfig:
    """How an agent answers when it serves as a tool: its prompt, model and tools, without handoffs."""
    return WorkerAgentConfig(**_answering(agent, model, channel, team))


def _policy_of(spec: AgentSpec, team: TeamSpec) -> TeamPolicy:
    """The team's policy, with the agent's own ``max_tokens`` where it has one."""
    if spec.max_tokens is None:
        return team.policy
    return replace(team.policy, max_tokens=spec.max_tokens)


def _system_message(spec: AgentSpec) -> SystemMessage:
    return SystemMessage(content=spec.system_message or f"You are {spec.name}.")


def _traced(agent: BuiltAgent, telemetry: Telemetry) -> BuiltAgent:
    """``agent`` with every tool traced (handoffs are not tools that run: their events are traced)."""
    return BuiltAgent(agent.spec, traced_tools(telemetry, agent.tools), agent.handoffs)
