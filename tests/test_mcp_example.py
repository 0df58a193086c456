"""The runnable MCP example: `handoffs graph` starts its server and shows its tools; a conversation with it
reads a note at once and deletes one only after the person says yes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoffs_runtime import tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.team.files import load_team_file
from handoffs_runtime.tools.mcp import close_all

from .support import run_sessions, texts

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mcp_notes" / "team.yaml"
BIN = str(Path(sys.executable).parent)
"""Where ``python`` (the example's command) and ``handoffs`` are for this interpreter."""


@pytest.fixture(autouse=True)
def python_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    close_all()
    yield
    close_all()


def test_handoffs_graph_shows_the_servers_tools() -> None:
    done = subprocess.run(
        [os.path.join(BIN, "handoffs"), "graph", "--team", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "tools: notes_list_notes, notes_read_note, notes_delete_note" in done.stdout


async def test_the_example_reads_at_once_and_deletes_after_a_yes() -> None:
    team = load_team_file(EXAMPLE)
    steps = [
        [tool_call("notes_read_note", {"name": "todo"})],
        "It says: call the plumber.",
        [tool_call("notes_delete_note", {"name": "todo"})],
        "Deleted.",
    ]
    model = ScriptedModel(steps)  # type: ignore[arg-type]
    channel = ScriptedChannel.for_sessions({"s1": ["read my todo", "now delete it", "yes"]})
    await run_sessions(team, channel, model=model)
    asked = [prompt for _, prompt in channel.asked["s1"] if prompt != "you"]
    assert asked == ['Allow notes_delete_note(name="todo")? y/n']
    assert texts(channel) == [("Clerk", "It says: call the plumber."), ("Clerk", "Deleted.")]
