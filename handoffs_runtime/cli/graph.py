"""``handoffs graph``: the team's handoffs as a Mermaid flowchart."""

from __future__ import annotations

import argparse

from handoffs_runtime.cli.options import Subcommands, add_team_option, team_from_option
from handoffs_runtime.team.graph import team_mermaid


def add_parser(sub: Subcommands) -> None:
    graph = sub.add_parser("graph", help="print the team's handoff graph as Mermaid")
    add_team_option(graph)
    graph.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(team_mermaid(team_from_option(args.team)), end="")
    return 0
