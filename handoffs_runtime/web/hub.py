"""The sessions of ``handoffs serve``: one team, its customers' pages and its operators.

The team runs in this process or behind a gRPC host (see ``backends``).

Each live session has a pump that reads its event stream
(:class:`~handoffs_runtime.channels.events.EventChannel`) and sends each event to the pages attached to it:
the customer's, and the console of the operator who took it. A question for the operator in a session nobody
has taken puts the session on the waiting list every operator sees (kept honest by ``web/waiting``);
:meth:`SessionHub.take` gives it to exactly one of them. Which session waits and who took it is also kept in
the store (``wait_for_operator``, ``take_for_operator``), so every server on it sees the same and a take is
decided there. Nothing here knows HTTP: a peer is anything with an async ``send(dict)``, so the rules are
tested without a browser.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from autogen_core.models import ChatCompletionClient

from handoffs_runtime.agents.human import HANDOFF_COMMAND
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.errors import HandoffsError, SessionBusyError, StoreError, UnknownSessionError
from handoffs_runtime.messages import PROGRESS, Event, Notice, Person, Question, Reply, event_json
from handoffs_runtime.sessions.desk import OperatorDesk
from handoffs_runtime.sessions.open import SharedStore
from handoffs_runtime.sessions.secrets import SharedSecrets
from handoffs_runtime.sessions.store import SessionStore, StoredEntry
from handoffs_runtime.sessions.transcript import entry_events
from handoffs_runtime.team.oversight import check_remote_oversight, operator_oversight
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.tools.approval import CUSTOMER_LEFT, is_approval
from handoffs_runtime.web.audience import customer_json, operator_json
from handoffs_runtime.web.backends import LocalTeam, TeamBackend
from handoffs_runtime.web.history import Transcripts
from handoffs_runtime.web.limits import Limits
from handoffs_runtime.web.queue import MemoryQueue
from handoffs_runtime.web.waiting import WAITING_FOR_OPERATOR as WAITING_FOR_OPERATOR
from handoffs_runtime.web.waiting import Frames, Reception

logger = logging.getLogger("handoffs_runtime.web")

View = Callable[[Event], dict[str, Any] | None]
"""An event as one kind of page receives it (see ``audience``); ``None``: that page does not see it."""

WAITING_FOR_APPROVAL = (
    "Your request is waiting for a member of our staff to approve it. Please wait a moment."
)
APPROVED = "A member of our staff approved your request."
NOT_APPROVED = "A member of our staff did not approve your request."


class Peer(Protocol):
    """A page connected to the hub (a WebSocket in the server, a list in tests)."""

    async def send(self, data: dict[str, Any]) -> None: ...

    async def send_json(self, text: str) -> None:
        """Send a message encoded already (a transcript page, encoded once for every page that needs it)."""
        ...


class HubError(Exception):
    """A request the hub refuses; its text is meant for the person who made it."""


class TryLater(HubError):
    """A refusal that passes by itself: the page should come back a little later."""


HELD_ELSEWHERE = "this conversation is still open on another server; it continues here in a moment"


@dataclass(eq=False)
class _Live:
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

    def already_sent(self, question: Question | None) -> Question | None:
        """``question`` if the pump has already passed it on (so a new page would miss it), else ``None``."""
        return question if question is not None and question is self.delivered.get(question.person) else None


class SessionHub:
    """Runs ``team`` for many web sessions at once. ``await start()`` before use, ``await stop()`` after.

    ``idle_seconds``: a session whose customer page has been gone this long ends (it stays in the store,
    and the same browser resumes it later); one the customer never wrote in ends sooner
    (``limits.unused_session_seconds``). ``max_sessions`` bounds the sessions live at once.
    ``backend``: where the team runs (default: in this process, calling ``model``; ``RemoteTeam`` for a
    front end of a gRPC host, which needs no model).

    Customers are strangers: every approval the team asks is the operator's, in the operator console,
    and code and irreversible tools are approved before each call
    (:func:`~handoffs_runtime.team.oversight.operator_oversight`); a team whose code would run with
    nobody's approval is refused unless ``approve_code``. A team run by a gRPC host's workers cannot be
    changed here: it must ask the operator already.
    """

    def __init__(
        self,
        team: TeamSpec,
        model: ChatCompletionClient | None,
        store: SharedStore,
        *,
        idle_seconds: float = 600.0,
        max_sessions: int = 1000,
        backend: TeamBackend | None = None,
        limits: Limits | None = None,
        approve_code: bool = False,
    ) -> None:
        if backend is None:
            if model is None:
                raise HandoffsError("SessionHub needs a model to run the team in this process, or a backend")
            team = operator_oversight(team, approve_code=approve_code)
            backend = LocalTeam(team, model, store)
        else:
            check_remote_oversight(team, approve_code=approve_code)
        self.team = team
        self.store: SessionStore = store
        self.desk: OperatorDesk = store
        self.secrets: SharedSecrets = store
        self.channel = EventChannel()
        self.backend = backend
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self.limits = limits or Limits()
        self.transcripts = Transcripts(store, self.customer_items, page=self.limits.history_page)
        """What customers' pages are shown of each session (``history``: what the operator is shown)."""
        self.agents = [a.name for a in team.agents if a.kind == "ai"]
        """The agents an operator may hand a conversation back to."""
        self.reception = Reception(MemoryQueue(), team, tell=self._tell, announce=self._announce_waiting)
        self._live: dict[str, _Live] = {}
        self._operators: dict[Peer, str] = {}
        """Each signed-in operator and the name the store knows them by."""
        self._leaving: set[asyncio.Task[None]] = set()
        self.failure: HandoffsError | None = None
        """Why ``start`` failed (a host that cannot be reached, say), for the command to report."""

    async def start(self) -> None:
        try:
            await self.backend.start(self.channel)
        except HandoffsError as exc:
            self.failure = exc
            raise
        await self.reception.restore(self.store)  # who waited for a person when the server stopped

    async def stop(self) -> None:
        for live in list(self._live.values()):  # questions still open get no answer; the sessions end
            self.channel.ended(live.session_id)
        pumps = [live.pump for live in self._live.values() if live.pump is not None]
        if pumps:
            await asyncio.wait(pumps, timeout=5)
        await self.backend.stop()

    # --- customers -----------------------------------------------------------------------------------

    def is_live(self, session_id: str) -> bool:
        """Whether the session is running (a page may attach to it) rather than ended or not started."""
        return session_id in self._live

    def new_session_id(self) -> str:
        return uuid.uuid4().hex

    async def attach_customer(self, session_id: str, peer: Peer) -> None:
        """Connect a customer's page to ``session_id``: live already, or started (resumed from the store).

        The page first gets the last page of the stored transcript, then, in a session where nothing is
        stored yet, the team's greeting and suggested first questions, then the question waiting for the
        customer, if any. A session that starts now is started after that, so the page gets all its events.
        """
        live = self._live.get(session_id)
        starting = live is None
        if live is None:
            if len(self._live) >= self.max_sessions:
                raise HubError("the server is busy; please try again in a few minutes")
            live = self._live[session_id] = _Live(session_id)
            try:
                # One server at a time: one that stopped on another machine holds it until its lease lapses.
                await self.store.claim(session_id)
            except HandoffsError as exc:
                raise self._not_started(live, exc) from exc
        if live.idle is not None:
            live.idle.cancel()
            live.idle = None
        history, shown = await self.transcripts.latest(session_id)
        live.used = live.used or shown > 0
        await peer.send_json(history)
        if shown == 0 and self.team.suggestions:
            await peer.send({"type": "suggestions", "suggestions": list(self.team.suggestions)})
        live.customers.add(peer)
        if starting:  # only now: the page gets every event of the session after its history (the greeting)
            try:
                await self.backend.open(session_id)
            except HandoffsError as exc:
                live.customers.discard(peer)
                raise self._not_started(live, exc) from exc
            self._start_pump(live)
            return
        if shown == 0 and self.team.greeting:  # shown when the session started; this page missed it
            await peer.send(event_json(self._greeting()))
        waiting = live.already_sent(self.channel.waiting(session_id, "customer"))
        if waiting is not None:
            await peer.send(operator_json(waiting))  # the customer's own question: nothing to hide
        if (approval := live.already_sent(self._asked_operator(session_id))) and approval.choices:
            await peer.send(self._notice(live, WAITING_FOR_APPROVAL))  # a page that came back hears why
        for frame in self.reception.customer_frames(session_id):
            await peer.send(frame)
        # The session's events wait in its stream until the first page has its history: one that ends
        # as it opens (another process holds it) is still told so.
        self._start_pump(live)

    def _start_pump(self, live: _Live) -> None:
        if live.pump is None:
            live.pump = asyncio.get_running_loop().create_task(self._pump(live))

    def _not_started(self, live: _Live, exc: HandoffsError) -> Exception:
        """End a session that could not start (its pump ends at once and forgets it); what to tell the
        page."""
        session_id = live.session_id
        self.channel.ended(session_id)
        self._start_pump(live)
        if isinstance(exc, SessionBusyError):
            logger.info("session %s is held elsewhere: %s", session_id, exc)
            return TryLater(HELD_ELSEWHERE)
        logger.warning("session %s could not start: %s", session_id, exc)  # the details stay here
        return HubError("the session could not start right now; please try again in a moment")

    def _greeting(self) -> Reply:
        """The team's greeting as the session's first words showed it (see ``register_team(greet=...)``)."""
        team = self.team
        return Reply(agent=team.entry, text=team.greeting, label=team.labels.get(team.entry, ""))

    async def earlier(self, session_id: str, peer: Peer, before: int) -> None:
        """Send the page the transcript items before number ``before``, when it asks for them."""
        if session_id not in self._live:
            raise HubError("the conversation has ended")
        await peer.send_json(await self.transcripts.earlier(session_id, before))

    def detach_customer(self, session_id: str, peer: Peer) -> None:
        live = self._live.get(session_id)
        if live is None:
            return
        live.customers.discard(peer)
        if not live.customers and live.idle is None:
            unused = self.limits.unused_session_seconds  # nobody wrote: perhaps nobody ever will
            wait = self.idle_seconds if live.used else min(self.idle_seconds, unused)
            live.idle = asyncio.get_running_loop().call_later(wait, self._leave_soon, session_id)

    def _leave_soon(self, session_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self.channel.leave(session_id))
        self._leaving.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._leaving.discard)

    async def customer_says(self, session_id: str, text: str) -> None:
        if self.channel.waiting(session_id, "customer") is None:
            raise HubError("please wait for the answer before writing again")
        if (live := self._live.get(session_id)) is not None:
            live.used = True
        await self.channel.answer(session_id, text)

    async def back_to_assistant(self, session_id: str) -> None:
        """The customer waiting for a person goes back to the agent that passed them on."""
        live = self._live.get(session_id)
        question = self.channel.waiting(session_id, "operator")
        if live is None or question is None or question.choices or live.operator is not None:
            raise HubError("the conversation is not waiting for a person")
        if (agent := self.reception.way_back(session_id, self.agents, self.team.entry)) is None:
            raise HubError("there is no assistant to go back to")
        await self._keep(self.desk.release_operator(session_id))
        await self.reception.done(session_id)
        await self.channel.answer(session_id, f"{HANDOFF_COMMAND} {agent}", person="operator")

    # --- operators -----------------------------------------------------------------------------------

    async def add_operator(self, peer: Peer) -> None:
        self._operators[peer] = f"operator-{uuid.uuid4().hex[:8]}"
        await self.reception.operator_in()
        await peer.send({"type": "ready", "agents": self.agents, "labels": dict(self.team.labels)})
        await peer.send(self._waiting_list())

    async def remove_operator(self, peer: Peer) -> None:
        """An operator left: the sessions they held wait for someone else."""
        name = self._operators.pop(peer, "")
        self.reception.operator_out()
        for live in list(self._live.values()):
            if live.operator is peer:
                live.operator = None
                await self._keep(self.desk.release_operator(live.session_id, name))
                if (question := self._asked_operator(live.session_id)) is not None:
                    await self.reception.waits(live.session_id, question, since=live.waiting_since)
        await self._announce_waiting()

    async def dismiss(self, session_id: str) -> None:
        """Take a message an away customer left off the waiting list: an operator has dealt with it."""
        if not await self.reception.dismiss(session_id):
            raise HubError("that session has left no message to dismiss")

    async def take(self, peer: Peer, session_id: str) -> None:
        """Give the session to this operator; refused if another operator has it or nobody waits."""
        live = self._live.get(session_id)
        if live is None or self.channel.waiting(session_id, "operator") is None:
            raise HubError("that session is not waiting for an operator")
        if live.operator is not None:
            raise HubError("another operator has already taken that session")
        live.operator = peer  # no await between the check and this: two operators never both get it
        try:  # and the store decides between servers
            taken = await self.desk.take_for_operator(session_id, self._operators.get(peer, ""))
        except StoreError as exc:
            live.operator = None
            raise HubError("the session could not be taken right now; please try again") from exc
        if not taken:
            live.operator = None
            raise HubError("another operator has already taken that session")
        await peer.send(
            {
                "type": "taken",
                "session": session_id,
                "history": await self.history(session_id),
                "question": operator_json(q)
                if (q := live.already_sent(self._asked_operator(session_id)))
                else None,
            }
        )
        await self.reception.taken(session_id)  # the customer hears that a person is there

    async def operator_says(self, peer: Peer, session_id: str, text: str) -> None:
        """Answer the session's question; an approval answered lets go of the session (agents carry on)."""
        live = self._held(peer, session_id)
        question = self.channel.waiting(session_id, "operator")
        if question is None:
            raise HubError("the session is not waiting for your answer")
        void = question.choices and self.channel.has_left(session_id)  # the tool refuses it too
        await self.channel.answer(session_id, text, person="operator")
        if question.choices:  # the customer, told to wait for it, hears how it was decided
            decided = APPROVED if is_approval(text) and not void else NOT_APPROVED
            await self._to_customers(live, self._notice(live, decided))
            live.operator = None
            await self._keep(self.desk.release_operator(session_id))
            said = f"Void: {CUSTOMER_LEFT}, so nothing was run." if void else "Answered: the agents carry on."
            await peer.send(_released(session_id, said))

    async def hand_back(self, peer: Peer, session_id: str, agent: str) -> None:
        """Hand the conversation to one of the team's agents, and let go of the session."""
        live = self._held(peer, session_id)
        if agent not in self.agents:
            raise HubError(f"unknown agent; choose one of: {', '.join(self.agents)}")
        question = self.channel.waiting(session_id, "operator")
        if question is None or question.choices:
            raise HubError("the conversation can be handed back only when it waits for your answer")
        live.operator = None
        await self._keep(self.desk.release_operator(session_id))
        await self.reception.done(session_id)
        await self.channel.answer(session_id, f"{HANDOFF_COMMAND} {agent}", person="operator")
        name = self.team.labels.get(agent) or agent  # as people read it
        await peer.send(_released(session_id, f"You handed the conversation back to {name}."))

    def _asked_operator(self, session_id: str) -> Question | None:
        return self.channel.waiting(session_id, "operator")

    def _held(self, peer: Peer, session_id: str) -> _Live:
        live = self._live.get(session_id)
        if live is None or live.operator is not peer:
            raise HubError("take the session first")
        return live

    def _waiting_list(self) -> dict[str, Any]:
        """Oldest first, each with its wait in seconds and the customer's last words."""
        return {"type": "waiting", "sessions": self.reception.listing()}

    async def _announce_waiting(self) -> None:
        waiting = self._waiting_list()
        for peer in list(self._operators):
            await _send_quietly(peer, waiting)

    # --- the pump ------------------------------------------------------------------------------------

    async def _pump(self, live: _Live) -> None:
        """Send each event of the session to its pages, until the session ends."""
        try:
            async for event in self.channel.events(live.session_id):
                if isinstance(event, Notice) and event.recap:  # the pages show the stored transcript
                    continue
                if isinstance(event, Question):
                    live.delivered[event.person] = event
                    if event.person == "operator":
                        await self._ask_operator(live, event)
                        continue
                if isinstance(event, Notice) and event.detail:  # for whoever runs the server, not customers
                    logger.warning("session %s: %s: %s", live.session_id, event.text, event.detail)
                if self.reception.observe(live.session_id, event):  # the customer's last words
                    await self._announce_waiting()
                if (shown := customer_json(event)) is not None:
                    await self._to_customers(live, {"session": live.session_id, **shown})
                if live.operator is not None:
                    await _send_quietly(live.operator, {"session": live.session_id, **operator_json(event)})
                # The stream ends by itself after SessionEnded, and only then forgets the session: leaving
                # the loop early would keep the ended session, and a page coming back would find it ended.
        finally:
            self._live.pop(live.session_id, None)
            self.transcripts.forget(live.session_id)
            if live.waiting_since is not None:  # not live here any more: nobody can take it here
                await self._keep(self.desk.release_operator(live.session_id))
            if live.idle is not None:
                live.idle.cancel()
            if live.operator is not None:
                await _send_quietly(live.operator, _released(live.session_id, "The conversation has ended."))
            await self.reception.ended(live.session_id)
            await self._announce_waiting()

    async def _ask_operator(self, live: _Live, question: Question) -> None:
        """The operator's question goes to the operator who holds the session, else on the waiting list;
        the customer reads why nothing happens yet."""
        await self._waits(live, question.prompt)
        if question.choices:  # an approval
            await self._to_customers(live, self._notice(live, WAITING_FOR_APPROVAL))
        if live.operator is not None:
            await _send_quietly(live.operator, {"session": live.session_id, **operator_json(question)})
            return
        await self.reception.waits(live.session_id, question, since=live.waiting_since)  # and announces

    async def _tell(self, session_id: str, frames: Frames) -> None:
        if (live := self._live.get(session_id)) is not None:
            for frame in frames:
                await self._to_customers(live, frame)

    @staticmethod
    def _notice(live: _Live, text: str) -> dict[str, Any]:
        return {"session": live.session_id, **(customer_json(Notice(text=text)) or {})}

    async def _to_customers(self, live: _Live, data: dict[str, Any]) -> None:
        for peer in list(live.customers):
            await _send_quietly(peer, data)

    # --- the store -----------------------------------------------------------------------------------

    async def _waits(self, live: _Live, prompt: str) -> None:
        try:
            live.waiting_since = (await self.desk.wait_for_operator(live.session_id, prompt)).since
        except StoreError as exc:  # the operators here still see it; other servers do not
            logger.warning("could not store that session %s waits for an operator: %s", live.session_id, exc)

    @staticmethod
    async def _keep(write: Awaitable[None]) -> None:
        """An operator-state write that fails is logged: the conversation itself goes on."""
        try:
            await write
        except StoreError as exc:
            logger.warning("could not store the operator state: %s", exc)

    async def history(self, session_id: str) -> list[dict[str, Any]]:
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

    def page_items(self, entry: StoredEntry, view: View = operator_json) -> list[dict[str, Any]]:
        """A stored entry as a page shows it, seen through ``view``: the events a live session showed,
        without the tool traffic, agents named as people read them, and the time it was stored (``at``,
        seconds since the epoch)."""
        events = (e for e in entry_events(entry, self.team.labels) if not isinstance(e, PROGRESS))
        shown = (view(event) for event in events)
        return [{**item, "at": entry.created_at} for item in shown if item is not None]

    def customer_items(self, entry: StoredEntry) -> list[dict[str, Any]]:
        """A stored entry as a customer's page shows it (see ``audience``)."""
        return self.page_items(entry, customer_json)


def _released(session_id: str, text: str) -> dict[str, Any]:
    """The operator no longer holds the session, and their console says why."""
    return {"type": "released", "session": session_id, "text": text}


async def _send_quietly(peer: Peer, data: dict[str, Any]) -> None:
    """A page that went away misses the message; its handler notices the closed socket and cleans up."""
    try:
        await peer.send(data)
    except Exception:
        logger.debug("a page went away", exc_info=True)
