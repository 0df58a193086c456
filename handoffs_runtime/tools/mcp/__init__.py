"""Tools from MCP servers: a server started as a command (stdio) or reached at a URL (streamable HTTP).

Needs the ``mcp`` extra (``pip install 'handoffs-runtime[mcp]'``). In a team file, an agent's ``mcp:``
list does the same as :func:`mcp_tools` here.

Example::

    from handoffs_runtime.tools.mcp import McpServer, mcp_tools

    notes = McpServer("notes", command="python", args=("notes_server.py",))
    AgentSpec("Clerk", tools=mcp_tools(notes, allow=["read_note", "delete_note"]))
"""

from handoffs_runtime.tools.mcp.connection import McpConnection, McpServerDown, close_all, connection
from handoffs_runtime.tools.mcp.server import McpServer
from handoffs_runtime.tools.mcp.tools import McpTool, McpToolError, is_destructive, mcp_tools

__all__ = [
    "McpConnection",
    "McpServer",
    "McpServerDown",
    "McpTool",
    "McpToolError",
    "close_all",
    "connection",
    "is_destructive",
    "mcp_tools",
]
