"""A store that waits out a brief outage tells the person whose turn it delays: an optional capability.

It is a Protocol, as the runtime's other optional capabilities: a store that has it says so by its
method, and a caller checks with ``isinstance`` rather than by name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from handoffs_runtime.channels.base import Channel
from handoffs_runtime.messages import Notice

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


def notices_to(channel: Channel) -> DelayListener:
    """A listener that shows the line to the session's person on ``channel``, as a notice."""

    async def show(session: str, text: str) -> None:
        await channel.show(session, Notice(text=text))

    return show
