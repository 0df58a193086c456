"""The team's topology as a Mermaid flowchart: agents as nodes, handoffs as labelled edges.

Paste the output into any Mermaid renderer (GitHub renders ```` ```mermaid ```` blocks), or show it in a
notebook. Regular tools are listed inside each agent's node. Edge styles tell control apart:

- ``A -->|tool| B``   a handoff: control moves to B;
- ``A -.->|tool| B``  a handoff enabled by a function (sometimes offered);
- ``A ==>|tool| B``   a delegation (agent as tool, worker): A keeps control and gets B's answer.

A human agent's way back, the operator's ``/handoff B``, is drawn as a handoff labelled ``/handoff``.

Workers, reached only as tools, are drawn as subroutine nodes.
"""

from __future__ import annotations

import re

from handoffs_runtime.agents.human import HANDOFF_COMMAND
from handoffs_runtime.team.build import build_team, delegations, human_handoff_targets
from handoffs_runtime.team.spec import TeamSpec


def _node_id(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _label(text: str) -> str:
    return text.replace('"', "'")


def team_mermaid(team: TeamSpec) -> str:
    """``flowchart LR`` text for ``team``."""
    built = build_team(team)
    lines = ["flowchart LR", f'    {_node_id(team.user_topic)}(["{_label(team.user_topic)}"])']
    delegated = delegations(built)
    delegating_tools = {(caller, tool) for caller, _, tool in delegated}
    for name, agent in built.items():
        kind = agent.spec.kind
        title = f"{name} ({kind})" if kind != "ai" else name
        tools = [t for t in agent.tools if (name, t) not in delegating_tools]
        body = f"{title}<br/>tools: {', '.join(tools)}" if tools else title
        shape = '[["{}"]]' if kind == "worker" else '["{}"]'
        lines.append(f"    {_node_id(name)}{shape.format(_label(body))}")
    lines.append(f"    {_node_id(team.user_topic)} --> {_node_id(team.entry)}")
    for name, agent in built.items():
        for tool_name, h in agent.handoffs.items():
            arrow = "-->" if h.always_enabled else "-.->"
            lines.append(f"    {_node_id(name)} {arrow}|{_label(tool_name)}| {_node_id(h.target)}")
        if agent.spec.kind == "human":
            for target in sorted(human_handoff_targets(built)):
                lines.append(f'    {_node_id(name)} -->|"{HANDOFF_COMMAND}"| {_node_id(target)}')
    for caller, callee, tool_name in delegated:
        lines.append(f"    {_node_id(caller)} ==>|{_label(tool_name)}| {_node_id(callee)}")
    return "\n".join(lines) + "\n"
