"""The team's topology as a Mermaid flowchart: agents as nodes, handoffs as labelled edges.

Paste the output into any Mermaid renderer (GitHub renders ```` ```mermaid ```` blocks), or show it in a
notebook. Regular tools are listed inside each agent's node; handoffs disabled by a callable are dashed.
"""

from __future__ import annotations

import re

from .team import TeamSpec, build_team


def _node_id(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _label(text: str) -> str:
    return text.replace('"', "'")


def team_mermaid(team: TeamSpec) -> str:
    """``flowchart LR`` text for ``team``."""
    built = build_team(team)
    lines = ["flowchart LR", f'    {_node_id(team.user_topic)}(["{_label(team.user_topic)}"])']
    for name, agent in built.items():
        title = f"{name} (human)" if agent.spec.kind == "human" else name
        body = f"{title}<br/>tools: {', '.join(agent.tools)}" if agent.tools else title
        lines.append(f'    {_node_id(name)}["{_label(body)}"]')
    lines.append(f"    {_node_id(team.user_topic)} --> {_node_id(team.entry)}")
    for name, agent in built.items():
        for tool_name, h in agent.handoffs.items():
            arrow = "-->" if h.always_enabled else "-.->"
            lines.append(f"    {_node_id(name)} {arrow}|{_label(tool_name)}| {_node_id(h.target)}")
    return "\n".join(lines) + "\n"
