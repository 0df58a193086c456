"""What the hub's roles share: the live sessions, the operators signed in, the way to their pages.

The hub (``hub``) is three roles over this state: the customers' side (``customers``), the operators'
(``operators``) and the pump that carries each session's events to its pages (``pump``). Nothing here
knows HTTP: a peer is anything with an async ``send(frame)``, so the rules are tested without a browser.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from handoffs_runtime.channels.base import STALE_ANSWER
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.errors import StoreError, UnknownSessionError
from handoffs_runtime.messages import PROGRESS, Event, Person, Question
from handoffs_runtime.sessions.desk import OperatorDesk
from handoffs_runtime.sessions.open import SharedStore
from handoffs_runtime.sessions.secrets import SharedSecrets
from handoffs_runtime.sessions.store import SessionStore, StoredEntry
from handoffs_runtime.sessions.transcript import entry_events
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.web.audience import customer_view
from handoffs_runtime.web.frames import CustomerItem, Frame, OperatorItem, WaitingList
from handoffs_runtime.web.history import Transcripts
from handoffs_runtime.web.limits import Limits
from handoffs_runtime.web.queue import MemoryQueue
from handoffs_runtime.web.waiting import Frames, Reception

logger = logging.getLogger("handoffs_runtime.web")

ANNOUNCE_SECONDS = 0.5
"""A customer's words reach the operators' waiting list at most this often: those in between go together."""


class Peer(Protocol):
    """A page connected to the hub (a WebSocket in the server, a list in tests)."""

    async def send(self, frame: Frame) -> None: ...

    async def send_json(self, text: str) -> None:
        """Send a message encoded already (a transcript page, encoded once for every page that needs it)."""
        ...


class HubError(Exception):
    """A request the hub refuses; its text is meant for the person who made it."""


def stale_answer(session_id: str, who: Literal["customer", "operator"]) -> HubError:
    """The refusal of an answer naming another question than the one waiting: a "yes" sent for an
    earlier question never answers a later one (logged, since a page that keeps doing it is broken)."""
    logger.info("session %s: the %s's answer named another question than the one waiting", session_id, who)
    return HubError(STALE_ANSWER)


class TryLater(HubError):
    """A refusal that passes by itself: the page should come back a little later."""


@dataclass(eq=False)
class Live:
    session_id: str
    customers: set[Peer] = field(default_factory=set)
    operator: Peer | None = None
    waiting_since: float | None = None
    """When the session first asked for an operator (from the store: it survives a restart)."""
    pump: asyncio.Task[None] | None = None
    idle: asyncio.TimerHandle | None = None
    used: bool = False
    """Whether the customer has written in it (now, or before it was resumed)."""
    delivered: dict[Person, Question] = field(default_factory=dict)
    """The last question the pump passed on to each person: a page attached later gets it again."""
    approver: Peer | None = None
    """The operator who last answered an approval here: shown what follows, up to the agent's reply."""

    def already_sent(self, question: Question | None) -> Question | None:
        """``question`` if the pump has already passed it on (so a new page would miss it), else ``None``."""
        return question if question is not None and question is self.delivered.get(question.person) else None


class HubState:
    """The sessions live in this server and the operators signed in to it, for ``team`` on ``store``."""

    def __init__(self, team: TeamSpec, store: SharedStore, limits: Limits) -> None:
        self.team = team
        self.store: SessionStore = store
        self.desk: OperatorDesk = store
        self.secrets: SharedSecrets = store
        self.limits = limits
        self.channel = EventChannel()
        self.transcripts = Transcripts(store, self.customer_items, page=self.limits.history_page)
        """What customers' pages are shown of each session (``history``: what the operator is shown)."""
        self.agents = [a.name for a in team.agents if a.kind == "ai"]
        """The agents an operator may hand a conversation back to."""
        self.reception = Reception(
            MemoryQueue(),
            team,
            tell=self._tell,
            announce=self.announce_waiting,
            away_seconds=limits.away_seconds,
        )
        self.live: dict[str, Live] = {}
        self.signed_in: dict[Peer, str] = {}
        """Each signed-in operator and the name the store knows them by."""
        self._announced_at = float("-inf")
        self._announce_later: asyncio.TimerHandle | None = None
        self._announcing: set[asyncio.Task[None]] = set()

    def asked_operator(self, session_id: str) -> Question | None:
        return self.channel.waiting(session_id, "operator")

    def waiting_list(self) -> WaitingList:
        """Oldest first, each with its wait in seconds and the customer's last words."""
        return WaitingList(sessions=self.reception.listing())

    async def announce_waiting(self) -> None:
        """Every operator gets the waiting list again, now (with any change that was due to follow)."""
        self.stop_announcing()
        await self._announce_now()

    async def announce_words(self) -> None:
        """The list changed only in a customer's last words: it goes out at most every
        ``ANNOUNCE_SECONDS``, so a customer's flood is not a list per message to every operator."""
        if self._announce_later is not None:  # a list is due already, and will show these words too
            return
        loop = asyncio.get_running_loop()
        wait = self._announced_at + ANNOUNCE_SECONDS - loop.time()
        if wait <= 0:
            await self._announce_now()
        else:
            self._announce_later = loop.call_later(wait, self._announce_soon)

    def _announce_soon(self) -> None:
        self._announce_later = None
        task = asyncio.get_running_loop().create_task(self._announce_now())
        self._announcing.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._announcing.discard)

    async def _announce_now(self) -> None:
        self._announced_at = asyncio.get_running_loop().time()
        waiting = self.waiting_list()
        for peer in list(self.signed_in):
            await send_quietly(peer, waiting)

    def stop_announcing(self) -> None:
        if self._announce_later is not None:
            self._announce_later.cancel()
            self._announce_later = None

    async def _tell(self, session_id: str, frames: Frames) -> None:
        if (live := self.live.get(session_id)) is not None:
            for frame in frames:
                await self.to_customers(live, frame)

    @staticmethod
    async def to_customers(live: Live, frame: Frame) -> None:
        for peer in list(live.customers):
            await send_quietly(peer, frame)

    async def history(self, session_id: str) -> list[OperatorItem]:
        """The stored transcript as the operator's pages show it: what was said, and the handoffs, each
        with the time it was stored (``at``, seconds since the epoch) and agents named as people read them."""
        try:
            entries = await self.store.entries(session_id)
        except UnknownSessionError:  # a new session: nothing stored yet
            return []
        except StoreError as exc:  # the page still works; the session itself reports a broken store
            logger.warning("no history for session %s: %s", session_id, exc)
            return []
        return [item for entry in entries for item in self.page_items(entry)]

    def page_items(self, entry: StoredEntry) -> list[OperatorItem]:
        """A stored entry as the operator's pages show it: the events a live session showed, without the
        tool traffic, agents named as people read them, and the time it was stored."""
        return [OperatorItem(at=entry.created_at, event=event) for event in self._shown(entry)]

    def customer_items(self, entry: StoredEntry) -> list[CustomerItem]:
        """A stored entry as a customer's page shows it (see ``audience``)."""
        views = (customer_view(event) for event in self._shown(entry))
        return [CustomerItem(at=entry.created_at, event=view) for view in views if view is not None]

    def _shown(self, entry: StoredEntry) -> list[Event]:
        return [e for e in entry_events(entry, self.team.labels) if not isinstance(e, PROGRESS)]


class Role:
    """One role of the hub, over the state it shares with the others."""

    def __init__(self, state: HubState) -> None:
        self.state = state
        self.team = state.team
        self.store = state.store
        self.desk = state.desk
        self.channel = state.channel
        self.reception = state.reception
        self._live = state.live

    @staticmethod
    async def _keep(write: Awaitable[None]) -> None:
        """An operator-state write that fails is logged: the conversation itself goes on."""
        try:
            await write
        except StoreError as exc:
            logger.warning("could not store the operator state: %s", exc)


async def send_quietly(peer: Peer, frame: Frame) -> None:
    """A page that went away misses the message; its handler notices the closed socket and cleans up."""
    try:
        await peer.send(frame)
    except Exception:
        logger.debug("a page went away", exc_info=True)
