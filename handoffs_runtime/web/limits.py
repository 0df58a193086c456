"""What one client may take of ``handoffs serve``: connections, sessions and reconnects, per address.

A client is an address: an IPv4 address, or an IPv6 /64 network (one machine usually holds all of it);
an IPv6 /56 is one neighbourhood (one customer's ordinary allocation), held to ``NEIGHBOURS`` clients'
worth. Every per-client cap is paired with a fair share of the server-wide one (``Limits.share``), so a
handful of addresses can never take the whole server: 25 clients at their caps leave most of it free.
Behind a reverse proxy every customer arrives from the proxy's address; name the proxy with
``trusted_proxies`` (``--trusted-proxy``) and the address the proxy reports in ``X-Forwarded-For``
counts instead (uvicorn reads the header, from those proxies only). Each limit is an option of
``handoffs serve``; the defaults suit a shop whose customers come one per address, or a few behind an
office's router.
"""

from __future__ import annotations

import ipaddress
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Limits:
    """The limits of ``handoffs serve``; every number must be positive."""

    max_connections: int = 1000
    """Connections open at once, server-wide; more are answered 503 and closed."""
    fair_share: int = 64
    """The server-wide caps are shared by at least this many clients: one client never holds more than
    this fraction of the connections or of the live sessions, whatever its own caps say."""
    connections_per_client: int = 50
    """Connections one client holds open at once (pages, the API and sockets together)."""
    connections_per_minute: int = 600
    """Connections one client opens per minute; more are closed at once, before anything is read."""
    sockets_per_minute: int = 60
    """WebSockets one client opens per minute: a page reconnecting in a loop is told to slow down (429)."""
    sessions_per_client: int = 20
    """Sessions one client keeps live at once."""
    new_sessions_per_minute: int = 20
    """Sessions one client starts (or resumes) per minute."""
    wrong_tokens_per_minute: int = 10
    """Wrong operator tokens one client may send per minute (the API and the console together); beyond
    it every try is refused unread, the right token included, until the minute has passed."""
    messages_per_minute: int = 30
    """Messages a customer may write in one session per minute; beyond it each is refused in words."""
    away_seconds: float = 3600.0
    """A message a customer who went away left stays on the operators' waiting list this long at most."""
    unused_session_seconds: float = 30.0
    """A session whose customer never wrote ends this long after its page left (others: ``idle_seconds``)."""
    quiet_socket_seconds: float = 300.0
    """A customer's socket that has said nothing for this long is closed; the page reconnects by itself."""
    request_seconds: float = 20.0
    """An HTTP request arrives whole within this, and a WebSocket's first message too; else it is closed."""
    send_seconds: float = 5.0
    """A page takes each frame sent to it within this; one that stops reading is cut off, not waited for."""
    history_page: int = 50
    """Transcript items a page is sent at once; it asks for earlier ones when the customer wants them."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks of reverse proxies whose ``X-Forwarded-For`` names the client."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int | float) and not value > 0:
                raise ValueError(f"{f.name} must be positive, not {value}")
        networks(self.trusted_proxies)  # a bad address is refused now, not at the first request

    def share(self, per_client: int, server_wide: int) -> int:
        """What one client may hold of ``server_wide``: its own cap, or its fair share if that is less."""
        return max(1, min(per_client, server_wide // self.fair_share))


NEIGHBOURS = 4
"""Clients' worth a neighbourhood (an IPv6 /56) may hold together."""


def networks(addresses: Iterable[str]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``addresses`` (``10.0.0.7``, ``10.0.0.0/24``, ``::1``) as networks; ``ValueError`` for a bad one."""
    try:
        return tuple(ipaddress.ip_network(a.strip(), strict=False) for a in addresses)
    except ValueError:
        raise ValueError(f"not an address or network: {', '.join(addresses)}") from None


def within(host: str | None, among: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    """Whether ``host`` is an address in one of the networks ``among``."""
    if host is None or not among:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in network for network in among)


def client_key(host: str | None) -> str:
    """Who a connection from ``host`` counts as: the address itself, an IPv6 address by its /64."""
    if host is None:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def neighbourhood(client: str) -> str | None:
    """The /56 an IPv6 client (a /64, see :func:`client_key`) lives in; ``None`` for an IPv4 address,
    which is costly enough on its own."""
    if ":" not in client or "/" not in client:
        return None
    try:
        network = ipaddress.IPv6Network(client)
    except ValueError:
        return None
    return str(network.supernet(new_prefix=56))


def groups(client: str) -> list[tuple[str, int]]:
    """The keys a client counts under, each with how many clients' worth it may hold."""
    around = neighbourhood(client)
    return [(client, 1)] if around is None else [(client, 1), (around, NEIGHBOURS)]


class RateWindow:
    """At most ``count`` events per key in any ``seconds``: a log of recent times per key.

    Refused events are not logged, so a client that slows down gets in again; keys whose events all
    expired are dropped now and then, so memory follows the clients of the last window only.
    """

    def __init__(
        self, count: int, seconds: float = 60.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._count = count
        self._seconds = seconds
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._swept_at_size = 1024

    def allow(self, key: str) -> bool:
        """Log an event for ``key`` if it has room; ``False`` (nothing logged) when it has none."""
        now = self._clock()
        times = self._events.get(key)
        if times is None:
            times = self._events[key] = deque()
        while times and times[0] <= now - self._seconds:
            times.popleft()
        if len(times) >= self._count:
            return False
        times.append(now)
        if len(self._events) > self._swept_at_size:
            self._sweep(now)
        return True

    def full(self, key: str) -> bool:
        """Whether ``key`` has no room now (nothing is logged)."""
        now = self._clock()
        times = self._events.get(key, ())
        return sum(1 for t in times if t > now - self._seconds) >= self._count

    def _sweep(self, now: float) -> None:
        self._events = {k: t for k, t in self._events.items() if t and t[-1] > now - self._seconds}
        self._swept_at_size = max(1024, 2 * len(self._events))


class ClientLimits:
    """The per-client limits of one server, kept in memory (each server counts its own clients)."""

    TOO_MANY_LIVE = "you have too many conversations open; please finish one first"
    TOO_MANY_NEW = "too many new conversations from your address; please try again in a minute"

    def __init__(
        self, limits: Limits, *, max_sessions: int = 1000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self._sockets = RateWindow(limits.sockets_per_minute, clock=clock)
        self._near_sockets = RateWindow(NEIGHBOURS * limits.sockets_per_minute, clock=clock)
        self._starts = RateWindow(limits.new_sessions_per_minute, clock=clock)
        self._near_starts = RateWindow(NEIGHBOURS * limits.new_sessions_per_minute, clock=clock)
        self._guesses = RateWindow(limits.wrong_tokens_per_minute, clock=clock)
        self._near_guesses = RateWindow(NEIGHBOURS * limits.wrong_tokens_per_minute, clock=clock)
        self._live_cap = limits.share(limits.sessions_per_client, max_sessions)
        self._sessions: dict[str, set[str]] = {}
        self._swept_at_size = 1024

    TOO_MANY_GUESSES = "too many wrong operator tokens from your address; please wait a minute"

    def may_try_token(self, client: str) -> bool:
        """Whether ``client`` (and its neighbourhood) may have a token checked now."""
        around = neighbourhood(client)
        return not self._guesses.full(client) and not (around and self._near_guesses.full(around))

    def wrong_token(self, client: str) -> None:
        """``client`` sent a wrong operator token: counted against it and its neighbourhood."""
        _allow(client, self._guesses, self._near_guesses)

    def may_connect(self, client: str) -> bool:
        """Whether ``client`` may open one more WebSocket now (counted if so)."""
        return _allow(client, self._sockets, self._near_sockets)

    def start_session(self, client: str, session_id: str, is_live: Callable[[str], bool]) -> str | None:
        """``None`` when ``client`` may start ``session_id`` now (it is counted), else why not, for them.

        ``is_live`` tells which of the client's sessions still run: ended ones stop counting by themselves.
        """
        full = False
        for key, worth in groups(client):
            live = self._sessions[key] = {s for s in self._sessions.get(key, ()) if is_live(s)}
            full = full or len(live) >= worth * self._live_cap
        if full:
            return self.TOO_MANY_LIVE
        if not _allow(client, self._starts, self._near_starts):
            return self.TOO_MANY_NEW
        for key, _ in groups(client):
            self._sessions[key].add(session_id)
        if len(self._sessions) > self._swept_at_size:
            self._sessions = {c: {s for s in ids if is_live(s)} for c, ids in self._sessions.items()}
            self._sessions = {c: ids for c, ids in self._sessions.items() if ids}
            self._swept_at_size = max(1024, 2 * len(self._sessions))
        return None


def _allow(client: str, own: RateWindow, near: RateWindow) -> bool:
    """One event for ``client`` in its own window and its neighbourhood's, if both have room."""
    around = neighbourhood(client)
    if around is not None and not near.allow(around):
        return False
    return own.allow(client)
