"""Building a team: validate its spec and make every agent's configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autogen_core.tools import Tool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.handoff import Handoff, handoff
from handoffs_runtime.team.spec import AgentSpec, TeamSpec
from handoffs_runtime.tools.capabilities import delegate_of
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
