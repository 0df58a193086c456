"""Where an MCP server is: a command (stdio) or a URL (streamable HTTP), credentials by reference.

A credential is never written into a team file or a spec: ``env`` and ``headers`` values name variables
of this process's environment as ``${NAME}`` (``"Bearer ${NOTES_TOKEN}"``), read when the server is
started. A value with no reference is refused, so a secret pasted into a file fails loudly, and a
variable that is not set is a clear error naming it.

Example::

    McpServer("notes", command="python", args=("notes_server.py",), env={"NOTES_TOKEN": "${MY_TOKEN}"})
    McpServer("search", url="https://tools.example/mcp", headers={"Authorization": "Bearer ${SEARCH_KEY}"})
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from handoffs_runtime.errors import TeamConfigError

REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}``: the value of the environment variable ``NAME``."""
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")


@dataclass(frozen=True)
class McpServer:
    """One MCP server: ``command`` (with ``args``, ``env``, ``cwd``) or ``url`` (with ``headers``).

    ``name`` says which server a failure is about (``the tool server 'notes'``). ``call_timeout`` bounds
    each tool call and ``start_timeout`` each start; a server that fails is started again at most
    ``max_restarts`` times a ``restart_window`` (seconds), then it is reported down.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    call_timeout: float = 60.0
    start_timeout: float = 30.0
    max_restarts: int = 3
    restart_window: float = 60.0

    def __post_init__(self) -> None:
        where = f"MCP server {self.name!r}"
        if not _NAME.match(self.name):
            raise TeamConfigError(f"MCP server name {self.name!r}: use letters, digits, '_' and '-'")
        if (self.command is None) == (self.url is None):
            raise TeamConfigError(f"{where}: give either command (stdio) or url (streamable HTTP), not both")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise TeamConfigError(f"{where}: url must start with http:// or https://, got {self.url!r}")
        if self.command is not None and self.headers:
            raise TeamConfigError(f"{where}: headers are for a url; give a command's credentials in env")
        if self.url is not None and (self.env or self.args or self.cwd):
            raise TeamConfigError(f"{where}: args, env and cwd are for a command; a url takes headers")
        for kind, values in (("env", self.env), ("headers", self.headers)):
            for key, value in values.items():
                if not REFERENCE.search(value):
                    raise TeamConfigError(
                        f"{where}: {kind}[{key}] is written out; never put a credential in a team "
                        f"file: write {kind}: {{{key}: ${{SOME_VARIABLE}}}} and set SOME_VARIABLE in the "
                        "environment"
                    )
        for bound in ("call_timeout", "start_timeout", "restart_window"):
            if not getattr(self, bound) > 0:
                raise TeamConfigError(f"{where}: {bound} must be a positive number of seconds")
        if self.max_restarts < 0:
            raise TeamConfigError(f"{where}: max_restarts must be 0 or more")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "headers", dict(self.headers))

    def __hash__(self) -> int:
        return hash((self.name, self.command, self.args, self.url, self.cwd, *sorted(self.env.items())))

    @property
    def transport(self) -> str:
        """``stdio`` or ``streamable HTTP``, as people read it."""
        return "stdio" if self.command is not None else "streamable HTTP"

    def resolved_env(self) -> dict[str, str]:
        """``env`` with every ``${NAME}`` read from this process's environment."""
        return {key: _resolve(self, "env", key, value) for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        """``headers`` with every ``${NAME}`` read from this process's environment."""
        return {key: _resolve(self, "headers", key, value) for key, value in self.headers.items()}


def _resolve(server: McpServer, kind: str, key: str, value: str) -> str:
    missing = [name for name in REFERENCE.findall(value) if name not in os.environ]
    if missing:
        raise TeamConfigError(
            f"MCP server {server.name!r}: {kind}[{key}] refers to ${{{missing[0]}}}, which is not set in "
            "the environment: set it before starting"
        )
    return REFERENCE.sub(lambda m: os.environ[m.group(1)], value)
