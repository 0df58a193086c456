"""A small MCP server written with the official SDK, for the MCP tests: notes read and deleted.

``python mcp_server.py stdio`` speaks over stdin/stdout; ``python mcp_server.py http`` serves streamable
HTTP on a free port of 127.0.0.1 and prints ``PORT <n>`` once it listens (with ``NOTES_TOKEN`` set, it
answers only requests that carry it as a bearer token). Every deletion is appended to
the file ``NOTES_LOG`` names, so a test counts the effects that really happened.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("notes")
NOTES = {"groceries": "milk, eggs", "todo": "call the plumber"}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(name: str) -> str:
    """Read the note called ``name``."""
    return NOTES.get(name, f"there is no note called {name}")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_note(name: str) -> str:
    """Delete the note called ``name`` for good."""
    with Path(os.environ["NOTES_LOG"]).open("a") as log:
        log.write(f"deleted {name}\n")
    NOTES.pop(name, None)
    return f"Deleted the note {name}."


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def server_pid() -> str:
    """The process id of this server."""
    return str(os.getpid())


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """Kill this server with SIGKILL while the call is in flight."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def token_seen() -> str:
    """The credential this server was given in its environment (a test token)."""
    return os.environ.get("NOTES_TOKEN", "none")


@server.tool()
def tag_note(name: str, tag: str) -> str:
    """Tag a note (no annotations: the team's default decides)."""
    return f"Tagged {name} with {tag}."


def _guarded(app: Any, token: str) -> Any:
    """``app``, answering 401 to a request without ``Authorization: Bearer <token>``."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != f"Bearer {token}".encode()
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await app(scope, receive, send)

    return guarded


async def _serve_http() -> None:
    import uvicorn

    app = server.streamable_http_app()
    token = os.environ.get("NOTES_TOKEN")
    config = uvicorn.Config(
        _guarded(app, token) if token else app, host="127.0.0.1", port=0, log_level="warning"
    )
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve())
    while not web.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.02)
    port = web.servers[0].sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    await task


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        asyncio.run(_serve_http())
    else:
        server.run("stdio")
