"""One connection to an MCP server per process: started once, restarted within a bound, closed at exit.

The SDK's client lives in a task that must enter and leave its context in one event loop, while a team is
loaded before any loop runs and its agents may run in another (``asyncio.run`` per test, per command).
So each server has a thread of its own with its own loop: :func:`connection` starts it once per process
(the tool list is read then), tool calls from any loop are handed to it, and it is closed at exit, its
server process stopped.

A server that dies (its process killed, its URL gone) fails the call in flight with
:class:`McpServerDown`, a named failure that says so; the connection is started again in the background
for the next call, at most ``max_restarts`` times a ``restart_window``, after which every call is refused
at once with the same error. A change notification from the server reads its tool list again.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.tools.mcp.server import McpServer

logger = logging.getLogger("handoffs_runtime.mcp")
_T = TypeVar("_T")


class McpServerDown(HandoffsError, ConnectionError):
    """An MCP server cannot be reached, or stopped during a call; the message names it and what follows."""


class McpConnection:
    """The connection to one :class:`McpServer`; build it with :func:`connection`."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.tools: list[mcp_types.Tool] = []
        """The server's tools, as it listed them last (at start, and on its change notification)."""
        self.starts = 0
        """How often the server was started (1 + restarts)."""
        self._client: Client | None = None
        self._failure: str | None = None
        self._restarts: collections.deque[float] = collections.deque()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._broken: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name=f"mcp-{server.name}", daemon=True)

    # --- the caller's side ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the server and read its tools; :class:`McpServerDown` when it does not come up in time."""
        self._thread.start()
        if not self._ready.wait(self.server.start_timeout + 5) or self._client is None:
            raise McpServerDown(
                f"the tool server {self.server.name!r} ({self.server.transport}) did not start: "
                f"{self._failure or 'no answer within ' + str(self.server.start_timeout) + ' s'}"
            )

    async def call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call tool ``name`` on the server, within the server's ``call_timeout``."""
        return await self._submit(lambda: self._call(name, arguments), self.server.call_timeout + 5)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the server (its process ends) and the thread; safe to call twice."""
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)

    async def _submit(self, make: Callable[[], Awaitable[_T]], timeout: float) -> _T:
        if not self._thread.is_alive():
            raise McpServerDown(f"the tool server {self.server.name!r} was closed")
        future: concurrent.futures.Future[_T] = asyncio.run_coroutine_threadsafe(_awaited(make), self._loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            future.cancel()
            raise McpServerDown(
                f"the tool server {self.server.name!r} did not answer within {timeout:g} s"
            ) from None

    # --- the connection's own thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._keep_connected())
        finally:
            self._ready.set()
            self._loop.close()

    async def _keep_connected(self) -> None:
        self._stop = asyncio.Event()
        self._broken = asyncio.Event()
        while not self._stop.is_set():
            self._broken.clear()
            try:
                await self._connected_until_broken()
            except Exception as exc:  # a start that failed: the caller is told, a restart may follow
                self._failure = f"{type(exc).__name__}: {exc}"
                logger.warning("MCP server %r failed: %s", self.server.name, self._failure)
            finally:
                self._client = None
            self._ready.set()
            if self._stop.is_set():
                return
            if not self._may_restart():  # given up: calls are refused at once until the process closes
                await self._stop.wait()
                return
            logger.warning("restarting MCP server %r", self.server.name)

    async def _connected_until_broken(self) -> None:
        """Connect, read the tools, and hold the connection until it breaks or the process closes."""
        assert self._stop is not None and self._broken is not None
        self.starts += 1
        client = Client(self._transport(), cache=None, message_handler=self._on_message)
        async with asyncio.timeout(self.server.start_timeout):
            await client.__aenter__()
        try:
            self.tools = list((await client.list_tools()).tools)
            self._client, self._failure = client, None
            self._ready.set()
            stop, broken = (
                asyncio.ensure_future(self._stop.wait()),
                asyncio.ensure_future(self._broken.wait()),
            )
            await asyncio.wait((stop, broken), return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            broken.cancel()
        finally:
            self._client = None
            try:
                await client.__aexit__(None, None, None)
            except Exception:  # the process is gone already: nothing more to close
                logger.debug("closing MCP server %r", self.server.name, exc_info=True)

    def _transport(self) -> Any:
        server = self.server
        if server.command is not None:
            return StdioServerParameters(
                command=server.command, args=list(server.args), env=server.resolved_env(), cwd=server.cwd
            )
        import httpx2

        assert server.url is not None
        http = httpx2.AsyncClient(headers=server.resolved_headers(), timeout=server.call_timeout)
        return streamable_http_client(server.url, http_client=http)

    def _may_restart(self) -> bool:
        """Whether one more restart stays within ``max_restarts`` a ``restart_window``."""
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > self.server.restart_window:
            self._restarts.popleft()
        if len(self._restarts) >= self.server.max_restarts:
            self._failure = (
                f"it failed {len(self._restarts) + 1} times within {self.server.restart_window:g} s "
                f"and is not started again ({self._failure})"
            )
            return False
        self._restarts.append(now)
        return True

    async def _call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        client = self._client
        if client is None or self._is_broken():
            client = await self._reconnected()
        try:
            return await asyncio.wait_for(client.call_tool(name, arguments), self.server.call_timeout)
        except (MCPError, OSError, TimeoutError) as exc:
            if isinstance(exc, MCPError) and exc.error.code != mcp_types.CONNECTION_CLOSED:
                raise
            assert self._broken is not None
            self._broken.set()
            what = "did not answer in time" if isinstance(exc, TimeoutError) else "stopped"
            raise McpServerDown(
                f"the tool server {self.server.name!r} {what} while {name} ran, so it may or may not have "
                "done it; the server is being started again"
            ) from None

    async def _reconnected(self) -> Client:
        """The client once a restart in progress is done; :class:`McpServerDown` when there is none."""
        deadline = time.monotonic() + self.server.start_timeout
        while (self._client is None or self._is_broken()) and time.monotonic() < deadline:
            if self._failure is not None and not self._restarts_left():
                break
            await asyncio.sleep(0.05)
        if self._client is None or self._is_broken():
            raise McpServerDown(
                f"the tool server {self.server.name!r} is down: {self._failure or 'it is starting again'}"
            )
        return self._client

    def _is_broken(self) -> bool:
        return self._broken is not None and self._broken.is_set()

    def _restarts_left(self) -> bool:
        return len(self._restarts) < self.server.max_restarts

    async def _on_message(self, message: IncomingMessage) -> None:
        """The server's change notification: read its tool list again."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            client = self._client
            if client is not None:
                asyncio.get_running_loop().create_task(self._relist(client))

    async def _relist(self, client: Client) -> None:
        try:
            self.tools = list((await client.list_tools()).tools)
        except Exception:
            logger.warning("MCP server %r: could not read its changed tool list", self.server.name)


async def _awaited(make: Callable[[], Awaitable[_T]]) -> _T:
    return await make()


_connections: dict[McpServer, McpConnection] = {}
_lock = threading.Lock()


def connection(server: McpServer) -> McpConnection:
    """This process's connection to ``server``, started (and its tools read) on first use."""
    with _lock:
        found = _connections.get(server)
        if found is not None:
            return found
        made = _connections[server] = McpConnection(server)
        try:
            made.start()
        except BaseException:
            del _connections[server]
            made.close()
            raise
        return made


def close_all() -> None:
    """Stop every MCP server this process started (done at exit on its own)."""
    with _lock:
        connections = list(_connections.values())
        _connections.clear()
    for each in connections:
        each.close()


atexit.register(close_all)
