"""An MCP server's tools as an agent's, marked by their annotations: destructive ones are irreversible.

:func:`mcp_tools` starts the server once per process (see :mod:`.connection`), reads its tools, keeps
those the ``allow`` list names (or all but the ``deny`` list), and gives each an optional name
``prefix``. Safety follows the tool's annotations, as the MCP specification defines their defaults:

- ``readOnlyHint: true``, or ``destructiveHint: false``: an ordinary tool, run without asking;
- ``readOnlyHint`` false or absent with ``destructiveHint`` true or absent: a destructive tool, made
  :func:`~handoffs_runtime.tools.effects.irreversible` and approved by the person before each call, so
  the effect ledger records it once and ``handoffs serve`` has the operator approve it;
- no annotations at all: the team's choice, ``unannotated="confirm"`` (the default: treated as
  destructive) or ``"run"``.

A call whose server stopped is a :class:`~.connection.McpServerDown` result for the model, and the
person is told in one sentence; the server is started again for the next call.

Example::

    notes = McpServer("notes", command="python", args=("notes_server.py",))
    AgentSpec("Clerk", tools=mcp_tools(notes, allow=["read_note", "delete_note"], prefix="notes_"))
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import mcp_types
from autogen_core import CancellationToken
from autogen_core.tools import Tool

from handoffs_runtime.errors import HandoffsError, TeamConfigError
from handoffs_runtime.messages import Notice
from handoffs_runtime.tools.approval import requires_approval
from handoffs_runtime.tools.context import current_tool_context
from handoffs_runtime.tools.effects import irreversible
from handoffs_runtime.tools.mcp.connection import McpConnection, McpServerDown, connection
from handoffs_runtime.tools.mcp.server import McpServer
from handoffs_runtime.tools.schema import SchemaTool

logger = logging.getLogger("handoffs_runtime.mcp")

Unannotated = Literal["confirm", "run"]
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a model's tool name may be."""
DOWN_NOTICE = (
    "⚠ A service I rely on stopped while handling your request: it may or may not have been done, and "
    "it is being restarted. Please ask again in a moment."
)


class McpToolError(HandoffsError):
    """An MCP tool answered with an error; the model reads it as the call's error result."""


class McpTool(SchemaTool):
    """One tool of an MCP server, called through this process's connection to it."""

    def __init__(self, conn: McpConnection, remote: mcp_types.Tool, *, name: str) -> None:
        super().__init__(name, remote.description or remote.title or remote.name, remote.input_schema)
        self._conn = conn
        self._remote_name = remote.name

    @property
    def server(self) -> McpServer:
        return self._conn.server

    @property
    def remote_name(self) -> str:
        """The tool's name on its server (``name`` may carry a prefix)."""
        return self._remote_name

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        """The tool's text; :class:`McpToolError` when it answered with an error."""
        if not any(t.name == self._remote_name for t in self._conn.tools):
            raise McpToolError(f"the tool server {self.server.name!r} no longer offers {self._remote_name}")
        call = asyncio.ensure_future(self._conn.call(self._remote_name, dict(args)))
        cancellation_token.link_future(call)
        try:
            result = await call
        except McpServerDown:
            await _tell_person()
            raise
        text = result_text(result)
        if result.is_error:
            raise McpToolError(text or f"{self._remote_name} failed")
        return text


def result_text(result: mcp_types.CallToolResult) -> str:
    """What a model reads of a tool's result: its text, else its structured content as JSON."""
    parts = [
        block.text if isinstance(block, mcp_types.TextContent) else f"[{block.type} content]"
        for block in result.content
    ]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def is_destructive(tool: mcp_types.Tool, unannotated: Unannotated = "confirm") -> bool:
    """Whether ``tool``'s annotations (with the specification's defaults) say it may destroy something."""
    notes = tool.annotations
    if notes is None:
        return unannotated == "confirm"
    if notes.read_only_hint is True:
        return False
    return notes.destructive_hint is not False


def mcp_tools(
    server: McpServer,
    *,
    allow: Sequence[str] | None = None,
    deny: Sequence[str] = (),
    prefix: str = "",
    unannotated: Unannotated = "confirm",
) -> list[Tool]:
    """The tools of ``server`` (started once per process) for an agent, marked as the module says."""
    if allow is not None and deny:
        raise TeamConfigError(f"MCP server {server.name!r}: give allow or deny, not both")
    if unannotated not in ("confirm", "run"):
        raise TeamConfigError(f"MCP server {server.name!r}: unannotated is 'confirm' or 'run'")
    conn = connection(server)
    offered = {t.name: t for t in conn.tools}
    for wanted in (*(allow or ()), *deny):
        if wanted not in offered:
            near = difflib.get_close_matches(wanted, list(offered), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; it offers {', '.join(offered) or 'none'}"
            raise TeamConfigError(f"MCP server {server.name!r} has no tool {wanted!r}{hint}")
    chosen = [t for name, t in offered.items() if (allow is None or name in allow) and name not in deny]
    tools: list[Tool] = []
    for remote in chosen:
        name = f"{prefix}{remote.name}"
        if not TOOL_NAME.match(name):
            raise TeamConfigError(
                f"MCP server {server.name!r}: tool name {name!r} is not one a model can call "
                "(letters, digits, '_' and '-', at most 64): choose another prefix, or deny it"
            )
        tool: Tool = McpTool(conn, remote, name=name)
        if is_destructive(remote, unannotated):
            tool = requires_approval(irreversible(tool))
        tools.append(tool)
    return tools


async def _tell_person() -> None:
    """One sentence to the session's people; the model gets the named failure as the call's result."""
    ctx = current_tool_context()
    if ctx is None or ctx.channel is None:
        return
    try:
        await ctx.channel.show(ctx.session_id, Notice(text=DOWN_NOTICE))
    except Exception:  # telling is best effort: the call has failed whatever happens
        logger.exception("could not tell session %s that a tool server stopped", ctx.session_id)
