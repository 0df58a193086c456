"""Registering a built team on any autogen-core runtime, and starting a session."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict

from autogen_core import AgentRuntime, TypeSubscription
from autogen_core.models import ChatCompletionClient

from handoffs_runtime.agents import AIAgent, HumanAgent, HumanAgentConfig, UserAgent, UserAgentConfig
from handoffs_runtime.agents.person import PersonChannel
from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.agents.worker import WorkerAgent, WorkerAgentConfig
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.messages import UserLogin
from handoffs_runtime.models.redaction import install_redaction
from handoffs_runtime.runtime.release import SessionEndHook, release_on_end
from handoffs_runtime.sessions.outage import ReportsDelays, notices_to
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.build import AgentConfig, BuiltAgent, build_team, plan_team, worker_types
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.telemetry import Telemetry, installed
from handoffs_runtime.telemetry.instrument import register_traced_agent
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic


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
    """Register the team's agents (and the ``UserAgent``) on ``runtime`` with their subscriptions: the
    one-process composition of :func:`register_agents` and :func:`register_customer_side`.

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
    if with_user:  # the agents here and the UserAgent share one: questions wait for handoff lines
        channel = PersonChannel(channel, store)
    shared = _Shared(channel=channel, agent_type=agent_type, telemetry=telemetry)
    built = await register_agents(runtime, team, only=only, model=model, models=models, **shared)
    if with_user:
        await register_customer_side(
            runtime,
            team,
            store=store,
            on_session_end=on_session_end,
            release_ended=release_ended,
            greet=greet,
            **shared,
        )
    return built


class _Shared(TypedDict):
    """What the agents and the person's side of one process are given alike."""

    channel: Channel
    agent_type: Callable[[str], str] | None
    telemetry: Telemetry | None


async def register_agents(
    runtime: AgentRuntime,
    team: TeamSpec,
    *,
    channel: Channel,
    only: Iterable[str] | None = None,
    model: ChatCompletionClient | None = None,
    models: Mapping[str, ChatCompletionClient] | None = None,
    agent_type: Callable[[str], str] | None = None,
    telemetry: Telemetry | None = None,
) -> dict[str, BuiltAgent]:
    """Register ``only`` the named agent types of ``team`` (all when ``None``), with no customer side:
    what a worker process runs, or an engine that carries the person's messages itself.

    A model is needed only by the AI and worker agents registered: ``models[name]``, else the agent's
    ``AgentSpec.model``, else ``model`` (a ``TeamConfigError`` names an agent left without one).
    ``channel`` reaches the people (a tool's question, streamed progress). The other options are
    :func:`register_team`'s. Returns the built team.

    Example::

        await register_agents(runtime, team, only=["SalesAgent"], model=model, channel=channel)
    """
    install_redaction()  # the API key and tokens never reach the log, whatever echoes them
    telemetry = telemetry or installed()
    planned = plan_team(team, channel=channel, model=model, models=models, only=only, telemetry=telemetry)
    type_of = agent_type or _same
    for plan in planned.plans:
        registered = type_of(plan.agent_type)
        await _register(runtime, _agent_class(plan.config), registered, plan.config, telemetry, team.name)
        if plan.topic is not None:
            await runtime.add_subscription(TypeSubscription(topic_type=plan.topic, agent_type=registered))
    return planned.built


async def register_customer_side(
    runtime: AgentRuntime,
    team: TeamSpec,
    *,
    channel: Channel,
    store: SessionStore | None = None,
    on_session_end: SessionEndHook | None = None,
    release_ended: bool = True,
    greet: bool = False,
    agent_type: Callable[[str], str] | None = None,
    telemetry: Telemetry | None = None,
) -> None:
    """Register the person's side of ``team``: the ``UserAgent`` and its subscriptions (the team's user
    topic and the handoff events). It needs no model; what a chat front end runs.

    The options are :func:`register_team`'s. ``channel`` is wrapped once for the process (questions
    wait for the handoff lines before them); pass the same wrapped channel to :func:`register_agents`
    when the agents run here too, as ``register_team`` does.
    """
    install_redaction()
    telemetry = telemetry or installed()
    if not isinstance(channel, PersonChannel):
        channel = PersonChannel(channel, store)
    workers = worker_types(build_team(team))  # building also checks the team, as a front end must
    end_hook = (
        release_on_end(runtime, on_session_end, worker_types=workers) if release_ended else on_session_end
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
    user_type = (agent_type or _same)(team.user_topic)
    await _register(runtime, UserAgent, user_type, user_config, telemetry, team.name)
    await runtime.add_subscription(TypeSubscription(topic_type=team.user_topic, agent_type=user_type))
    await runtime.add_subscription(TypeSubscription(topic_type=HANDOFF_EVENTS, agent_type=user_type))


def _same(name: str) -> str:
    return name


def _agent_class(config: AgentConfig) -> type[SessionAgent]:
    """The agent class a plan's configuration is for: the one place a role picks a class."""
    if isinstance(config, WorkerAgentConfig):
        return WorkerAgent
    if isinstance(config, HumanAgentConfig):
        return HumanAgent
    return AIAgent


async def _register(
    runtime: AgentRuntime, cls: Any, agent_type: str, config: Any, telemetry: Telemetry | None, team: str
) -> None:
    """Register ``cls`` built from ``config`` as ``agent_type``; its traced variant when telemetry is on."""
    if telemetry is not None:
        await register_traced_agent(telemetry, runtime, cls, agent_type, config, team)
    else:
        await cls.register(runtime, agent_type, lambda: cls(config))


async def start_session(runtime: AgentRuntime, session_id: str, *, user_topic: str = USER) -> None:
    """Open a session: the ``UserAgent`` of ``session_id`` asks the person for their first message."""
    await runtime.publish_message(UserLogin(), topic_id=session_topic(user_topic, session_id))
