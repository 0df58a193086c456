"""``handoffs serve --engine temporal``: the web chat and the operator console as a Temporal client.

The sessions run as workflows on Temporal's workers (``handoffs temporal worker``), which keep the
conversation in the same session store as this server. This process holds no agent: each live session
has one task here that asks the person for their next words through the hub's channel, sends them to
the session's workflow (:class:`~handoffs_runtime.durable.temporal.client.TemporalSessions`), and shows
what the workflow's steps stored, read back from the store as the events a live session shows.

The session's writer is the engine (its workers take the session's lease over at each fenced write), so
this server's pages attach to a session through :func:`engine_written`, which takes the lease over too
instead of finding the session held by a worker.

A question the workflow keeps pending is put to whom it is for: a confirmation to the customer, the
human agent's question to the operator (the waiting list, the console); the answer is the session's
next message to the workflow. So the operator's round trip goes through the workflow, and any server on
the store serves any session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, cast

from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.errors import DistributedError, HandoffsError, StoreError, UnknownSessionError
from handoffs_runtime.messages import USER_PROMPT, Notice, Person, Reply
from handoffs_runtime.sessions.leases import Holder
from handoffs_runtime.sessions.open import SharedStore
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.sessions.transcript import entry_events
from handoffs_runtime.team.spec import TeamSpec

if TYPE_CHECKING:
    from handoffs_runtime.durable.temporal.client import TemporalSessions
    from handoffs_runtime.durable.temporal.connect import Cluster

logger = logging.getLogger("handoffs_runtime.web")

SHOWN_AGAIN = frozenset({"user", "question"})
"""Stored entries the page has shown already: the person's words and answers went through the channel."""
NOT_DELIVERED = "⚠ Your message could not be delivered just now; please send it again."


class TemporalTeam:
    """The team behind a Temporal cluster: workers run the workflows and agents; this process is their
    client. ``store`` is the session store the workers write (the pages' transcripts come from it)."""

    def __init__(self, team: TeamSpec, cluster: Cluster, store: SessionStore) -> None:
        self._team = team
        self._cluster = cluster
        self._store = store
        self._sessions: TemporalSessions | None = None
        self._channel: EventChannel | None = None
        self._live: dict[str, asyncio.Task[None]] = {}

    async def connect(self) -> None:
        """Reach the cluster (once): ``TemporalUnreachableError``, one clear line, when it does not answer.
        A server calls it before it listens, so an unreachable cluster is said before any page is served."""
        from handoffs_runtime.durable.temporal.client import TemporalSessions
        from handoffs_runtime.durable.temporal.connect import connect

        if self._sessions is None:
            self._sessions = TemporalSessions(await connect(self._cluster))

    async def start(self, channel: EventChannel) -> None:
        await self.connect()
        self._channel = channel

    async def open(self, session_id: str) -> None:
        if self._sessions is None or self._channel is None:
            raise HandoffsError("the web server's Temporal client is not started")
        running = self._live.get(session_id)
        if running is not None and not running.done():
            return
        seen = await self._shown_so_far(session_id)
        task = asyncio.get_running_loop().create_task(self._converse(session_id, seen))
        self._live[session_id] = task
        task.add_done_callback(lambda _: self._forget(session_id, task))

    async def _shown_so_far(self, session_id: str) -> int:
        """The store's last sequence number (the page shows the transcript up to it); greets a new session."""
        assert self._channel is not None
        try:
            state = await self._store.get_session(session_id)
        except UnknownSessionError:
            state = None
        except StoreError as exc:
            raise HandoffsError(f"the session store cannot be read: {exc}") from exc
        if state is None:
            team = self._team
            if team.greeting:
                label = team.labels.get(team.entry, "")
                await self._channel.show(session_id, Reply(agent=team.entry, text=team.greeting, label=label))
            return 0
        return state.last_seq

    def _forget(self, session_id: str, task: asyncio.Task[None]) -> None:
        if self._live.get(session_id) is task:
            del self._live[session_id]

    async def _converse(self, session_id: str, seen: int) -> None:
        """The session's turns, until the person leaves (the channel's question gets ``None``)."""
        assert self._sessions is not None and self._channel is not None
        channel, sessions = self._channel, self._sessions
        prompt = USER_PROMPT
        person: Person = "customer"
        try:
            pending = await sessions.waiting(session_id)  # a question kept while no server had the session
            if pending is not None:
                prompt, person = pending.prompt, _person(pending.person)
            while (text := await channel.ask(session_id, prompt, person=person)) is not None:
                if not text.strip():
                    continue
                try:
                    answered = await sessions.say(session_id, text)
                except DistributedError as exc:
                    logger.warning("session %s: a message was not delivered: %s", session_id, exc)
                    await channel.show(session_id, Notice(text=NOT_DELIVERED, detail=str(exc)))
                    continue
                seen = await self._show_stored(session_id, seen)
                prompt = answered.question or USER_PROMPT
                person = _person(answered.person) if answered.question else "customer"
        except Exception:
            logger.exception("session %s: its Temporal client stopped", session_id)
        finally:
            channel.ended(session_id)

    async def _show_stored(self, session_id: str, seen: int) -> int:
        """Show what the workflow's steps stored after ``seen``; the new last sequence number."""
        assert self._channel is not None
        entries = await self._store.entries(session_id, after=seen)
        for entry in entries:
            if entry.kind not in SHOWN_AGAIN:
                for event in entry_events(entry, self._team.labels):
                    await self._channel.show(session_id, event)
        return entries[-1].seq if entries else seen

    async def stop(self) -> None:
        tasks = list(self._live.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _person(person: str) -> Person:
    return "operator" if person == "operator" else "customer"


class _EngineWritten:
    """``store`` whose ``claim`` always takes the session over (see :func:`engine_written`); the rest is
    ``store``'s own, so what the store can do (the ledger, the desk) is what this view can do."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def claim(self, session_id: str, *, take_over: bool = False) -> Holder | None:
        return await self._store.claim(session_id, take_over=True)


def engine_written(store: SharedStore) -> SharedStore:
    """The store as a web server of a durable engine uses it: it writes no conversation (the engine's
    workers do, fenced by the engine's sequence number), so its claim of a session takes the lease over
    from the worker that wrote last, which takes it back at its next write."""
    return cast(SharedStore, _EngineWritten(store))
