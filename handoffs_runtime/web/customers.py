"""The customers' side of the hub: their pages attach to a session (live or started), write, leave.

A session is started (or resumed from the store) when its first page attaches; one server at a time
holds it (``claim``). A session whose pages have all gone ends after a while, and stays in the store for
the same browser to resume later.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from handoffs_runtime.errors import HandoffsError, SessionBusyError
from handoffs_runtime.messages import Reply
from handoffs_runtime.web.backends import TeamBackend
from handoffs_runtime.web.frames import CustomerEvent, Suggestions
from handoffs_runtime.web.limits import RateWindow
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL, Pump
from handoffs_runtime.web.state import HubError, HubState, Live, Peer, Role, TryLater, stale_answer
from handoffs_runtime.web.waiting import told

logger = logging.getLogger("handoffs_runtime.web")

HELD_ELSEWHERE = "this conversation is still open on another server; it continues here in a moment"
TOO_FAST = "you are writing faster than anyone can read; please wait a moment, then write again"


class Customers(Role):
    """``idle_seconds``: a session whose customer page has been gone this long ends; one the customer
    never wrote in ends sooner (``limits.unused_session_seconds``). ``max_sessions`` bounds the sessions
    live at once."""

    def __init__(
        self, state: HubState, pump: Pump, backend: TeamBackend, *, idle_seconds: float, max_sessions: int
    ) -> None:
        super().__init__(state)
        self.pump = pump
        self.backend = backend
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self._leaving: set[asyncio.Task[None]] = set()
        self._written = RateWindow(state.limits.messages_per_minute)
        """Each session's messages of the last minute: a flood is refused before it is stored or shown."""

    def new_session_id(self) -> str:
        return uuid.uuid4().hex

    async def attach(self, session_id: str, peer: Peer) -> None:
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
            live = self._live[session_id] = Live(session_id)
            try:
                # One server at a time: one that stopped on another machine holds it until its lease lapses.
                await self.store.claim(session_id)
            except HandoffsError as exc:
                raise self._not_started(live, exc) from exc
        if live.idle is not None:
            live.idle.cancel()
            live.idle = None
        history, shown = await self.state.transcripts.latest(session_id)
        live.used = live.used or shown > 0
        await peer.send_json(history)
        if shown == 0 and self.team.suggestions:
            await peer.send(Suggestions(suggestions=self.team.suggestions))
        live.customers.add(peer)
        if starting:  # only now: the page gets every event of the session after its history (the greeting)
            try:
                await self.backend.open(session_id)
            except HandoffsError as exc:
                live.customers.discard(peer)
                raise self._not_started(live, exc) from exc
            self.pump.start(live)
            return
        if shown == 0 and self.team.greeting:  # shown when the session started; this page missed it
            await peer.send(CustomerEvent(event=self._greeting()))
        waiting = live.already_sent(self.channel.waiting(session_id, "customer"))
        if waiting is not None:
            await peer.send(CustomerEvent(event=waiting))  # the customer's own question: nothing to hide
        if (approval := live.already_sent(self.state.asked_operator(session_id))) and approval.choices:
            await peer.send(told(session_id, WAITING_FOR_APPROVAL))  # a page that came back hears why
        for frame in self.reception.customer_frames(session_id):
            await peer.send(frame)
        # The session's events wait in its stream until the first page has its history: one that ends
        # as it opens (another process holds it) is still told so.
        self.pump.start(live)

    def _not_started(self, live: Live, exc: HandoffsError) -> Exception:
        """End a session that could not start (its pump ends at once and forgets it); what to tell the
        page."""
        session_id = live.session_id
        self.channel.ended(session_id)
        self.pump.start(live)
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
        await peer.send_json(await self.state.transcripts.earlier(session_id, before))

    def detach(self, session_id: str, peer: Peer) -> None:
        live = self._live.get(session_id)
        if live is None:
            return
        live.customers.discard(peer)
        if not live.customers and live.idle is None:
            unused = self.state.limits.unused_session_seconds  # nobody wrote: perhaps nobody ever will
            wait = self.idle_seconds if live.used else min(self.idle_seconds, unused)
            live.idle = asyncio.get_running_loop().call_later(wait, self._leave_soon, session_id)

    def _leave_soon(self, session_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self.channel.leave(session_id))
        self._leaving.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._leaving.discard)

    async def says(self, session_id: str, text: str, question: str | None = None) -> None:
        """The customer's line, as the answer to the question waiting for them; ``question``: the id of
        the question the page answered. A yes/no question takes only an answer naming it: a "yes" sent
        for an earlier question (or before this one reached the page) is refused with a note, and the
        question is shown again, rather than read as an ordinary line, since while it waits the line *is*
        its answer."""
        waiting = self.channel.waiting(session_id, "customer")
        if waiting is None:
            raise HubError("please wait for the answer before writing again")
        if not waiting.answered_by(question):
            if (live := self._live.get(session_id)) is not None:
                await self.state.to_customers(live, CustomerEvent(event=waiting))  # shown again
            raise stale_answer(session_id, "customer")
        if not self._written.allow(session_id):
            raise HubError(TOO_FAST)
        if (live := self._live.get(session_id)) is not None:
            live.used = True
        await self.channel.answer(session_id, text)

    async def back_to_assistant(self, session_id: str) -> None:
        """The customer waiting for a person goes back to the agent that passed them on."""
        live = self._live.get(session_id)
        question = self.channel.waiting(session_id, "operator")
        if live is None or question is None or question.choices or live.operator is not None:
            raise HubError("the conversation is not waiting for a person")
        if (agent := self.reception.way_back(session_id, self.state.agents, self.team.entry)) is None:
            raise HubError("there is no assistant to go back to")
        await self._keep(self.desk.release_operator(session_id))
        await self.reception.done(session_id)
        await self.channel.hand_back(session_id, agent)
