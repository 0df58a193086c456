"""A team for anonymous customers: code and irreversible actions wait for the operator's approval.

``handoffs serve`` faces strangers, who must never approve running code or an action that cannot be
undone. :func:`operator_oversight` gives the team it runs with every approval asked of the operator
(in the operator console) instead of the customer; an irreversible tool approved by the operator
before each call; and a tool that runs code (:func:`~handoffs_runtime.tools.effects.runs_code`)
approved by the operator, provided the team already asks before it runs or ``approve_code`` says
to. A code tool nobody approves is refused with :class:`UnapprovedCodeError`: a customer could run
anything on the server. Each operator approval expires after the policy's ``approval_max_age``.

Example::

    team = operator_oversight(orchestrator_team(), approve_code=True)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from autogen_core.tools import Tool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.team.spec import AgentSpec, TeamSpec
from handoffs_runtime.tools.approval import ApprovalTool, requires_approval
from handoffs_runtime.tools.capabilities import layers
from handoffs_runtime.tools.effects import is_code_runner, is_irreversible


class UnapprovedCodeError(TeamConfigError):
    """A team whose code tools would run without anyone's approval, for strangers to call."""


def operator_oversight(team: TeamSpec, *, approve_code: bool = False) -> TeamSpec:
    """``team`` as it runs for anonymous customers: the operator approves what the module doc says."""
    unapproved = _named(team, lambda tool: is_code_runner(tool) and not _asks(tool))
    if unapproved and not approve_code:
        raise UnapprovedCodeError(
            f"the team runs code ({unapproved}) that any web customer could start: give --approve-code "
            "so that an operator approves each run in the operator console, or mark the tool "
            "requires_approval: operator in the team file"
        )
    age = team.policy.approval_max_age
    return replace(team, agents=[_overseen(agent, age) for agent in team.agents])


def remote_oversight(team: TeamSpec) -> str:
    """Check ``team`` as the workers of a gRPC host run it, which :func:`operator_oversight` cannot change.

    A code tool must already be approved by the operator (else :class:`UnapprovedCodeError`); the
    irreversible tools that are not are returned (``Agent: tool, ...``; empty if none), for a warning.
    """
    code = _named(team, lambda tool: is_code_runner(tool) and not _asks(tool, person="operator"))
    if code:
        raise UnapprovedCodeError(
            f"the gRPC host's workers run code ({code}) without an operator's approval, for any web "
            "customer to start: mark the tool requires_approval: operator in the team file they load"
        )
    return _named(team, lambda tool: is_irreversible(tool) and not _asks(tool, person="operator"))


def check_remote_oversight(team: TeamSpec, *, approve_code: bool = False) -> None:
    """A gRPC host's workers run the tools as their team file says: refuse what cannot be made safe by
    the web server in front of them (:func:`remote_oversight`), and warn of irreversible tools the
    operator does not approve."""
    if approve_code:
        raise TeamConfigError(
            "--approve-code cannot change the tools a gRPC host's workers run: mark the code tool "
            "requires_approval: operator in the team file they load"
        )
    unapproved = remote_oversight(team)
    if unapproved:
        logging.getLogger("handoffs_runtime.web").warning(
            "unless the gRPC host's workers were started with --operator-approves, they run irreversible "
            "tools (%s) with no operator's approval (the customer's own confirmation at most): start them "
            "so, or mark the tools requires_approval: operator in the team file they load",
            unapproved,
        )


def _named(team: TeamSpec, chosen: Callable[[Tool], bool]) -> str:
    """``Agent: tool, ...`` for the tools of ``team`` that are ``chosen``."""
    return ", ".join(
        f"{agent.name}: {tool.name}"
        for agent in team.agents
        for tool in agent.tools
        if isinstance(tool, Tool) and chosen(tool)
    )


def _overseen(agent: AgentSpec, max_age: float) -> AgentSpec:
    tools = [_overseen_tool(tool, max_age) for tool in agent.tools]
    return (
        agent if all(a is b for a, b in zip(tools, agent.tools, strict=True)) else replace(agent, tools=tools)
    )


def _overseen_tool(tool: Tool | Callable[..., Any], max_age: float) -> Tool | Callable[..., Any]:
    if isinstance(tool, ApprovalTool):
        return tool.asking("operator", max_age=max_age)
    if not isinstance(tool, Tool):
        return tool  # a plain function carries no mark: it becomes an ordinary tool
    if is_code_runner(tool) or is_irreversible(tool) or _asks(tool):
        return requires_approval(tool, person="operator", max_age=max_age)  # a customer's inside still asks
    return tool


def _asks(tool: object, *, person: str | None = None) -> bool:
    """Whether ``tool`` or a tool it wraps asks approval (of ``person``, when given) before each call."""
    return any(isinstance(t, ApprovalTool) and person in (None, t.person) for t in layers(tool))
