"""Who waits for a person in ``handoffs serve``: the operator queue's model, behind a small interface.

The hub keeps it in memory (:class:`MemoryQueue`); a store shared by several servers can keep it behind
the same :class:`OperatorQueue`. Times are wall-clock seconds (``time.time()``), so they mean the same
to every process and after a restart. Nothing new needs storing to rebuild the list after a restart:
:func:`left_in_store` reads it from the sessions themselves (with a person, their last words unanswered).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from handoffs_runtime.errors import StoreError
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.web.frames import Listed, WaitKind

logger = logging.getLogger("handoffs_runtime.web")

_CONVERSATION = frozenset({"user", "reply", "tool_calls", "tool_results"})


@dataclass
class Waiting:
    """A session waiting for a person."""

    session: str
    kind: WaitKind
    since: float
    """When it began to wait."""
    prompt: str = ""
    """The approval asked (escalations ask nothing in particular)."""
    last_message: str = ""
    """What the customer said last: their request, or the message they left (with their address)."""
    wrote: int = 0
    """Messages the customer has written since it began to wait."""
    told: bool = False
    """Whether the customer has been told that nobody is available."""
    away: bool = False
    """The customer has gone (the page closed, the server restarted): their message is there to read,
    but there is nobody to talk to until they come back."""
    left: float = 0.0
    """When the customer went away (their message leaves the list a while later)."""

    def listed(self, now: float) -> Listed:
        """The entry as the operator console shows it: ``waited`` in whole seconds."""
        waited = max(0, int(now - self.since))
        return Listed(
            session=self.session,
            kind=self.kind,
            prompt=self.prompt,
            waited=waited,
            last=self.last_message,
            away=self.away,
        )


class OperatorQueue(Protocol):
    """The waiting list: one entry per session at most, oldest first."""

    def join(self, entry: Waiting) -> Waiting:
        """Put ``entry`` on the list; a session there already keeps its place (and ``since``), takes the
        new kind and prompt, and is no longer away. Returns the entry as listed."""
        ...

    def get(self, session: str) -> Waiting | None: ...

    def leave(self, session: str) -> Waiting | None:
        """Take the session off the list (taken, handed back, ended); the entry it had, if any."""
        ...

    def entries(self) -> list[Waiting]: ...


class MemoryQueue:
    """The waiting list in this process's memory."""

    def __init__(self) -> None:
        self._entries: dict[str, Waiting] = {}

    def join(self, entry: Waiting) -> Waiting:
        there = self._entries.get(entry.session)
        if there is None:
            self._entries[entry.session] = entry
            return entry
        there.kind, there.prompt, there.away = entry.kind, entry.prompt, False
        there.last_message = entry.last_message or there.last_message
        return there

    def get(self, session: str) -> Waiting | None:
        return self._entries.get(session)

    def leave(self, session: str) -> Waiting | None:
        return self._entries.pop(session, None)

    def entries(self) -> list[Waiting]:
        return sorted(self._entries.values(), key=lambda e: e.since)


async def left_in_store(store: SessionStore, people: frozenset[str], *, limit: int = 200) -> list[Waiting]:
    """Sessions the store shows waiting for a person: with one of ``people`` (the team's human agents),
    the customer's last message unanswered. Read when a server starts, so that the waiting list still
    shows them (as away) after a restart. Only the ``limit`` most recently active sessions are read."""
    found: list[Waiting] = []
    try:
        sessions = [s for s in await store.list_sessions() if s.active_agent in people][:limit]
        for info in sessions:
            entries = await store.entries(info.session_id)
            said = [e for e in entries if e.kind in _CONVERSATION]
            if not said or said[-1].kind != "user":
                continue
            handed = [e for e in entries if e.kind == "handoff" and e.body.get("target") in people]
            since = handed[-1].created_at if handed else said[-1].created_at
            wrote = sum(1 for e in said if e.kind == "user" and e.created_at >= since)
            found.append(
                Waiting(
                    info.session_id,
                    "escalation",
                    since,
                    last_message=said[-1].text,
                    wrote=wrote,
                    away=True,
                    left=said[-1].created_at,
                )
            )
    except StoreError as exc:  # the list is a convenience: the sessions themselves are all still there
        logger.warning("could not read the sessions waiting for a person: %s", exc)
    return found
