"""Optional capabilities of a store shared by several front ends: outage notices and shared secrets.

A store may tell a person their turn waits for it, and keep secrets every front end must agree on.

These are Protocols, as the runtime's other optional capabilities: a store that has them says so by its
methods, and a caller checks with ``isinstance`` rather than by name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from handoffs_runtime.channels.base import Channel, Notice

DelayListener = Callable[[str, str], Awaitable[None]]
"""Called with a session id and a line for its person when the store delays that session's turn."""

DELAYED = "⚠ the session store is not answering; your turn goes on as soon as it is back"
RECOVERED = "the session store is back; your turn goes on"


@runtime_checkable
class ReportsDelays(Protocol):
    """A store that waits out a brief outage instead of failing, and says so to whoever listens."""

    def report_delays(self, listener: DelayListener) -> None:
        """Call ``listener`` when a session's store call starts waiting, and when it goes on."""
        ...


@runtime_checkable
class KeepsSecrets(Protocol):
    """A store that keeps secrets shared by every process using it (the web servers' key secret)."""

    async def secret(self, name: str, *, size: int = 32) -> bytes:
        """The secret called ``name``, made of ``size`` random bytes by whoever asked first (atomic:
        front ends that start together all get the same one)."""
        ...


def notices_to(channel: Channel) -> DelayListener:
    """A listener that shows the line to the session's person on ``channel``, as a notice."""

    async def show(session: str, text: str) -> None:
        await channel.show(session, Notice(text))

    return show
