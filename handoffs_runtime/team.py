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
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

from autogen_core import AgentRuntime, TypeSubscription
from autogen_core.models import ChatCompletionClient, SystemMessage
from autogen_core.tools import FunctionTool, Tool

from .agents import AIAgent, AIAgentConfig, HumanAgent, HumanAgentConfig, UserAgent, UserAgentConfig
from .agents.user import SessionEndHook
from .agents.worker import WorkerAgent, WorkerAgentConfig
from .channels import Channel
from .errors import TeamConfigError
from .messages import UserLogin
from .policy import TeamPolicy
from .release import release_on_end
from .store import SessionStore
from .telemetry import Telemetry, installed
from .tools.handoff import Handoff, handoff
from .tools.workers import TOOL_AGENT_SUFFIX, agent_tool, tool_agent_type
from .topics import HANDOFF_EVENTS, USER, session_topic

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
    """

    name: str
    system_message: str = ""
    description: str = ""
    tools: Sequence[Tool | Callable[..., Any]] = ()
    handoffs: Sequence[str | Handoff] = ()
    model: ChatCompletionClient | None = None
    kind: AgentKind = "ai"
    agent_tools: Sequence[str] = ()


def human_agent(
    name: str, description: str = "A human operator, for what the AI agents cannot handle."
) -> AgentSpec:
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


def streaming_team(team: TeamSpec, stream: bool) -> TeamSpec:
    """``team`` with its models called with ``create_stream`` (``stream``) or ``create``."""
    return replace(team, policy=replace(team.policy, stream=stream))


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
        delegate = getattr(tool, "delegates_to", None)
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
    wanted = {getattr(t, "delegates_to", None) for agent in built.values() for t in agent.tools.values()}
    return {n for n, agent in built.items() if agent.spec.kind == "ai" and tool_agent_type(n) in wanted}


def delegations(built: Mapping[str, BuiltAgent]) -> list[tuple[str, str, str]]:
    """``(caller, callee, tool name)`` for every tool that sends tasks to another agent of the team.

    These are the caller-keeps-control edges of the topology, next to the handoff edges.
    """
    edges = []
    for name, agent in built.items():
        for tool in agent.tools.values():
            delegate = getattr(tool, "delegates_to", None)
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
    store: SessionStore | None = None,
    release_ended: bool = True,
    agent_type: Callable[[str], str] | None = None,
    telemetry: Telemetry | None = None,
) -> dict[str, BuiltAgent]:
    """Register the team's agents (and the ``UserAgent``) on ``runtime`` with their subscriptions.

    ``models`` overrides the model per agent name (after each ``AgentSpec.model``); ``only`` registers a
    subset, for a distributed worker; ``with_user=False`` leaves the ``UserAgent`` to a front end;
    ``store`` makes sessions durable: the ``UserAgent`` records every message there and resumes from it;
    ``release_ended`` frees a finished session's agent instances (see :mod:`handoffs_runtime.release`);
    ``agent_type`` maps a name to the agent type registered for it (a shard or a front end's session,
    see ``topics.shard_agent_type``); it still subscribes to the topic type of the name.
    ``telemetry`` (default: the one ``telemetry.install`` set, else none) traces and measures the team's
    turns, agents, models, tools and handoffs; without it nothing is wrapped.
    """
    type_of = agent_type or (lambda name: name)
    built = build_team(team)
    telemetry = telemetry or installed()
    if telemetry is not None:
        built = {name: _traced(agent, telemetry) for name, agent in built.items()}
    register = partial(_register, runtime, telemetry=telemetry, team=team.name)
    wanted = set(only) if only is not None else set(built)
    unknown = wanted - set(built) - {team.user_topic}
    if unknown:
        raise TeamConfigError(f"unknown agents {sorted(unknown)}; team {team.name!r} has {', '.join(built)}")
    overrides = models or {}
    as_tools = tool_served_agents(built)
    worker_types = {n for n, a in built.items() if a.spec.kind == "worker"} | {
        tool_agent_type(n) for n in as_tools
    }
    for name in built:
        if name not in wanted:
            continue
        agent = built[name]
        spec = agent.spec
        agent_model = overrides.get(name) or spec.model or model
        if telemetry is not None:
            agent_model = telemetry.wrap_model(agent_model)
        if spec.kind == "worker" or name in as_tools:
            worker_type = name if spec.kind == "worker" else tool_agent_type(name)
            worker_config = _worker_config(agent, agent_model, channel, team)
            await register(WorkerAgent, type_of(worker_type), worker_config)
            if spec.kind == "worker":
                continue
        if spec.kind == "human":
            targets = human_handoff_targets(built)
            description = spec.description or "A human operator."
            human_config = HumanAgentConfig(name, channel, team.user_topic, description, targets)
            await register(HumanAgent, type_of(name), human_config)
        else:
            ai_config = AIAgentConfig(
                name=name,
                system_message=SystemMessage(content=spec.system_message or f"You are {name}."),
                model=agent_model,
                tools=agent.tools,
                handoffs=agent.handoffs,
                policy=team.policy,
                channel=channel,
                human_agent=team.human,
                user_topic=team.user_topic,
                description=spec.description or name,
            )
            await register(AIAgent, type_of(name), ai_config)
        await runtime.add_subscription(TypeSubscription(topic_type=name, agent_type=type_of(name)))
    if with_user:
        end_hook = (
            release_on_end(runtime, on_session_end, worker_types=worker_types)
            if release_ended
            else on_session_end
        )
        if telemetry is not None:
            end_hook = telemetry.counting_sessions(end_hook, team.name)
        user_config = UserAgentConfig(
            team.entry,
            channel,
            team.user_topic,
            on_session_end=end_hook,
            store=store,
            team=team.name,
            agents=frozenset(a.name for a in team.agents if a.kind != "worker"),
            senders=frozenset(team.names),
        )
        user_type = type_of(team.user_topic)
        await register(UserAgent, user_type, user_config)
        await runtime.add_subscription(TypeSubscription(topic_type=team.user_topic, agent_type=user_type))
        await runtime.add_subscription(TypeSubscription(topic_type=HANDOFF_EVENTS, agent_type=user_type))
    return built


def _worker_config(
    agent: BuiltAgent, model: ChatCompletionClient, channel: Channel, team: TeamSpec
) -> WorkerAgentConfig:
    """How an agent answers when it serves as a tool: its prompt, model and tools, without handoffs."""
    spec = agent.spec
    return WorkerAgentConfig(
        name=spec.name,
        system_message=SystemMessage(content=spec.system_message or f"You are {spec.name}."),
        model=model,
        tools=agent.tools,
        channel=channel,
        policy=team.policy,
        description=spec.description or spec.name,
    )


async def _register(
    runtime: AgentRuntime, cls: Any, agent_type: str, config: Any, *, telemetry: Telemetry | None, team: str
) -> None:
    """Register ``cls`` built from ``config`` as ``agent_type``; its traced variant when telemetry is on."""
    if telemetry is not None:
        await telemetry.register_agent(runtime, cls, agent_type, config, team)
    else:
        await cls.register(runtime, agent_type, lambda: cls(config))


def _traced(agent: BuiltAgent, telemetry: Telemetry) -> BuiltAgent:
    """``agent`` with every tool traced (handoffs are not tools that run: their events are traced)."""
    return BuiltAgent(agent.spec, telemetry.wrap_tools(agent.tools), agent.handoffs)


async def start_session(runtime: AgentRuntime, session_id: str, *, user_topic: str = USER) -> None:
    """Open a session: the ``UserAgent`` of ``session_id`` asks the person for their first message."""
    await runtime.publish_message(UserLogin(), topic_id=session_topic(user_topic, session_id))
