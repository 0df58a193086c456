"""The host names ``handoffs serve`` answers to: a request for any other is refused (DNS rebinding).

A page on another site can point a name it owns at 127.0.0.1 (DNS rebinding) and then reach a server on
loopback as its own origin: the ``Origin`` and ``Host`` headers agree, and only the name in ``Host``
gives it away. So, as Django's ``ALLOWED_HOSTS`` and Vite's ``allowedHosts`` do, a request or WebSocket
is served only when its ``Host`` is ``localhost``, a loopback address, the address the server is bound
to (any IP address when it listens on all of them: an address cannot be rebound), or a name given with
``--allowed-host``. Anything else, a missing ``Host`` included, gets 400.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_HOST = re.compile(r"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<name>[^\[\]:/@\s]+))(?::\d{1,5})?")


def host_name(header: str | None) -> str | None:
    """The name or address in a ``Host`` header, without port or brackets, lower case; ``None`` if bad."""
    if header is None:
        return None
    match = _HOST.fullmatch(header)
    if match is None:
        return None
    return (match["ip6"] or match["name"]).lower().removesuffix(".")


class AllowedHosts:
    """The names a server bound to ``bind`` answers to, with ``names`` besides the default ones."""

    def __init__(self, bind: str, names: Iterable[str] = ()) -> None:
        bound = bind.strip("[]").lower()
        self._names = {"localhost", bound, *(n.strip().lower().removesuffix(".") for n in names)}
        address = _address(bound)
        self._any_address = address is not None and address.is_unspecified

    def admits(self, header: str | None) -> bool:
        """Whether a request whose ``Host`` header is ``header`` is for this server."""
        name = host_name(header)
        if name is None:
            return False
        if name in self._names:
            return True
        address = _address(name)
        return address is not None and (address.is_loopback or self._any_address)


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class HostGuard:
    """ASGI middleware: requests and WebSockets for a name ``hosts`` does not admit get 400."""

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.hosts.admits(Headers(scope=scope).get("host")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})  # a server without denial responses: 403
            return
        refusal = "this server does not answer to that host name (see handoffs serve --allowed-host)\n"
        await PlainTextResponse(refusal, status_code=400)(scope, receive, send)
