"""What each command's help says: what it is for, the forms ``--team`` takes, and two examples.

Kept in one table, so every command (``sessions`` included, which declares its own options) reads alike,
and ``handoffs CMD --help`` answers a newcomer without the README.
"""

from __future__ import annotations

import argparse
import textwrap

TEAM_FORMS = (
    "--team takes a built-in team (acme, orchestrator), a team file (team.yaml, team.json), a Python "
    "file that defines `team` (team.py), or module:attribute naming a TeamSpec or a function returning one."
)

COMMANDS: dict[str, tuple[str, tuple[str, str]]] = {
    "chat": (
        "Talk to a team in this terminal: the ACME demo by default, your own with --team. Without a "
        "model it runs on the built-in offline model, clearly labelled.",
        (
            "handoffs chat",
            "handoffs chat --team examples/bookshop/team.yaml --model llama3.2 "
            "--base-url http://localhost:11434/v1",
        ),
    ),
    "graph": (
        "Print a team's handoffs as a Mermaid chart: who can hand the conversation to whom.",
        ("handoffs graph", "handoffs graph --team examples/bookshop/team.yaml"),
    ),
    "sessions": (
        "List, show, export or delete the sessions kept in the session store.",
        ("handoffs sessions list", "handoffs sessions export SESSION --format md -o session.md"),
    ),
    "serve": (
        "Serve the web chat for customers (/) and the operator console (/operator), in this process "
        "or as a front end of a gRPC host (--host).",
        ("handoffs serve --port 8000", "handoffs serve --team examples/bookshop/team.yaml --port 0"),
    ),
    "host": (
        "Run the gRPC host of a distributed team: workers serve its agents, chat and web front ends "
        "talk to it.",
        ("handoffs host --port 50051", "handoffs host --team examples/bookshop/team.yaml --port 50051"),
    ),
    "worker": (
        "Serve some or all of a team's agents for a gRPC host; start as many as you like.",
        (
            "handoffs worker --host 127.0.0.1:50051",
            "handoffs worker --host 127.0.0.1:50051 --team examples/bookshop/team.yaml",
        ),
    ),
    "temporal": (
        "Run sessions on Temporal: the pinned dev server on loopback, and workers that serve a team's "
        "session workflows and agent steps.",
        (
            "handoffs temporal dev --db temporal.db --port 7233",
            "handoffs temporal worker --address 127.0.0.1:7233 --store sessions.db --workflows",
        ),
    ),
    "a2a": (
        "Serve a team as an A2A agent, for other vendors' agents and clients: its Agent Card, JSON-RPC "
        "and streaming, behind a bearer token.",
        (
            "handoffs a2a serve --port 8100 --token-file acme.token",
            "handoffs a2a serve --team examples/bookshop/team.yaml --port 8100 --token-file shop.token",
        ),
    ),
    "credentials": (
        "Create or rotate the TLS certificates and tokens of a deployment, in one directory.",
        (
            "handoffs credentials create creds --host-name host.example",
            "handoffs credentials rotate creds --role worker",
        ),
    ),
}
"""Each command's description and two examples."""


def describe(commands: dict[str, argparse.ArgumentParser]) -> None:
    """Give each parser in ``commands`` (by command name) its description, ``--team`` forms and examples."""
    for name, parser in commands.items():
        description, examples = COMMANDS[name]
        paragraphs = [description, TEAM_FORMS] if _takes_team(parser) else [description]
        parser.description = "\n\n".join(textwrap.fill(p, width=78) for p in paragraphs)
        parser.epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


def _takes_team(parser: argparse.ArgumentParser) -> bool:
    """Whether ``parser``, or one of its actions (``sessions export``), takes ``--team``."""
    for action in parser._actions:
        if "--team" in action.option_strings:
            return True
        if isinstance(action, argparse._SubParsersAction):
            return any(_takes_team(p) for p in action.choices.values())
    return False
