"""The limits of ``handoffs serve`` with the per-client ones lifted, for benchmarks of the web server.

Every customer of a benchmark comes from loopback, so the limits meant for one address would refuse
all but the first few.
"""

from __future__ import annotations

from handoffs_runtime.web.limits import Limits

PER_CLIENT = (
    "connections_per_client",
    "connections_per_minute",
    "sockets_per_minute",
    "sessions_per_client",
    "new_sessions_per_minute",
)
"""The fields of :class:`Limits` that count one client."""


def lifted(to: int, *, server_wide: bool = False) -> Limits:
    """Default limits but for the per-client ones, set to ``to``; ``server_wide`` sets the connections
    open at once to ``to`` too."""
    names = (*PER_CLIENT, "max_connections") if server_wide else PER_CLIENT
    return Limits(**dict.fromkeys(names, to))
