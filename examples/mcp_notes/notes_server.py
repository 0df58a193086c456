"""An MCP server of notes, written with the official SDK: `python notes_server.py` speaks over stdio.

Reading is marked read-only, deleting destructive: the team that takes these tools runs the first at
once and asks the person before the second (the operator, on the web), recording it once.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("notes")
NOTES = {"groceries": "milk, eggs, bread", "todo": "call the plumber"}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def list_notes() -> str:
    """The names of the notes."""
    return ", ".join(NOTES) or "no notes"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(name: str) -> str:
    """Read the note called ``name``."""
    return NOTES.get(name, f"there is no note called {name}")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_note(name: str) -> str:
    """Delete the note called ``name`` for good."""
    return f"Deleted the note {name}." if NOTES.pop(name, None) is not None else f"No note called {name}."


if __name__ == "__main__":
    server.run("stdio")
