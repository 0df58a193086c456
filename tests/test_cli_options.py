"""The options the ``handoffs`` commands share are declared once, and ``--team`` is read in one place."""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

import pytest

import handoffs_runtime
from handoffs_runtime.cli.main import parser

from .cli_support import run_handoffs

PACKAGE = Path(handoffs_runtime.__file__).parent

SHARED = {
    "--team",
    "--model",
    "--base-url",
    "--verbose",
    "--store",
    "--credentials",
    "--host",
    "--no-stream",
    "--max-message-mb",
    "--connect-timeout",
    "--trace",
}
"""Options several commands take: the test below finds them; this list keeps it from passing empty."""


def commands(root: argparse.ArgumentParser, path: str = "handoffs") -> dict[str, argparse.ArgumentParser]:
    """Every parser under ``root`` (commands and their actions), by the words that reach it."""
    found = {path: root}
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(commands(sub, f"{path} {name}"))
    return found


def shared_options() -> set[str]:
    """The long option strings that more than one command declares."""
    taken = Counter(
        option
        for command in commands(parser()).values()
        for action in command._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    )
    return {option for option, count in taken.items() if count > 1}


def declarations() -> Counter[str]:
    """How many ``add_argument(...)`` calls in the package's source name each option string."""
    counts: Counter[str] = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                counts.update(
                    arg.value
                    for arg in node.args
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                )
    return counts


def test_every_option_several_commands_take_is_declared_in_one_place() -> None:
    shared = shared_options()
    assert shared >= SHARED, f"no longer shared: {sorted(SHARED - shared)}"
    counts = declarations()
    assert {option: counts[option] for option in shared} == dict.fromkeys(shared, 1)


@pytest.mark.parametrize(
    "command",
    [
        ["chat", "--store", ":memory:"],
        ["graph"],
        ["serve", "--store", ":memory:", "--port", "0"],
        ["host", "--address", "127.0.0.1:0"],
        ["worker", "--host", "127.0.0.1:1"],
    ],
    ids=lambda words: words[0],
)
def test_an_unknown_team_is_one_line_and_status_2(command: list[str]) -> None:
    result = run_handoffs(*command, "--team", "nope", timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "handoffs: --team: no team named 'nope'; the built-in teams are acme, orchestrator, "
        "or give a team file (FILE.yaml, FILE.json, FILE.py) or module:attribute"
    ]


def test_a_built_in_team_is_chosen_by_its_name() -> None:
    result = run_handoffs("graph", "--team", "orchestrator")
    assert result.returncode == 0, result.stderr
    assert "Orchestrator" in result.stdout and "TriageAgent" not in result.stdout
