"""Registering a built team on any autogen-core runtime, and starting a session."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from autogen_core import AgentRuntime, TypeSubscription
from autogen_core.models import ChatCompletionClient, SystemMessage

from handoffs_runtime.agents import (
    AIAgent,
    AIAgentConfig,
    HumanAgent,
    HumanAgentConfig,
    UserAgent,
    UserAgentConfig,
)
from handoffs_runtime.agents.person import PersonChannel
from handoffs_runtime.agents.worker import WorkerAgent, WorkerAgentConfig
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.messages import UserLogin
from handoffs_runtime.models.redaction import install_redaction
from handoffs_runtime.runtime.release import SessionEndHook, release_on_end
from handoffs_runtime.sessions.outage import ReportsDelays, notices_to
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.build import BuiltAgent, build_team, human_handoff_targets, tool_served_agents
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.telemetry import Telemetry, installed
from handoffs_runtime.telemetry.instrument import register_traced_agent, traced_model, traced_tools
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic, tool_agent_type


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
    greet: bool = False,
) -> dict[str, BuiltAgent]:
    """Register the team's agents (and the ``UserAgent``) on ``runtime`` with their subscriptions.

    ``models`` overrides the model per agent name (after each ``AgentSpec.model``); ``only`` registers a
    subset, for a distributed worker; ``with_user=False`` leaves the ``UserAgent`` to a front end;
    ``store`` makes sessions durable: the ``UserAgent`` records every message there and resumes from it;
    ``release_ended`` frees a finished session's agent instances (see
    :mod:`handoffs_runtime.runtime.release`);
    ``agent_type`` maps a name to the agent type registered for it (a shard or a front end's session,
    see ``topics.shard_agent_type``); it still subscribes to the topic type of the name.
    ``telemetry`` (default: the one ``telemetry.install`` set, else none) traces and measures the team's
    turns, agents, models, tools and handoffs; without it nothing is wrapped.
    ``greet`` opens each new session with the team's greeting, as the entry agent's first words (what a
    console or a web page shows; off by default, so code that reads the replies gets only replies).
    """
    install_redaction()  # the API key and tokens never reach the log, whatever echoes them
    if with_user:  # the agents here and the UserAgent share one: questions wait for handoff lines
        channel = PersonChannel(channel, store)
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
            agent_model = traced_model(telemetry, agent_model)
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
                examples=_examples(agent, team),
                label=spec.display_name,
                targets=_targets(agent, team),
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
            labels=team.labels,
            greeting=team.greeting if greet else "",
        )
        if isinstance(store, ReportsDelays):  # a person whose turn waits for the store is told so
            store.report_delays(notices_to(channel))
        user_type = type_of(team.user_topic)
        await register(UserAgent, user_type, user_config)
        await runtime.add_subscription(TypeSubscription(topic_type=team.user_topic, agent_type=user_type))
        await runtime.add_subscription(TypeSubscription(topic_type=HANDOFF_EVENTS, agent_type=user_type))
    return built


def _examples(agent: BuiltAgent, team: TeamSpec) -> dict[str, tuple[str, ...]]:
    """The example requests a model that routes by words reads: the agent's own under its name, and each
    handoff target's under the handoff's tool name."""
    found = {tool: team.agent(h.target).examples for tool, h in agent.handoffs.items()}
    found[agent.spec.name] = agent.spec.examples
    return {key: tuple(examples) for key, examples in found.items() if examples}


def _targets(agent: BuiltAgent, team: TeamSpec) -> dict[str, tuple[str, str]]:
    """Each handoff's target as people know it, by tool name: its display name and description."""
    targets = {tool: team.agent(h.target) for tool, h in agent.handoffs.items()}
    return {tool: (target.label, target.description) for tool, target in targets.items()}


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
        await register_traced_agent(telemetry, runtime, cls, agent_type, config, team)
    else:
        await cls.register(runtime, agent_type, lambda: cls(config))


def _traced(agent: BuiltAgent, telemetry: Telemetry) -> BuiltAgent:
    """``agent`` with every tool traced (handoffs are not tools that run: their events are traced)."""
    return BuiltAgent(agent.spec, traced_tools(telemetry, agent.tools), agent.handoffs)


async def start_session(runtime: AgentRuntime, session_id: str, *, user_topic: str = USER) -> None:
    """Open a session: the ``UserAgent`` of ``session_id`` asks the person for their first message."""
    await runtime.publish_message(UserLogin(), topic_id=session_topic(user_topic, session_id))
