"""The pump of each live session: its events, from the team's event stream to the pages attached to it.

Each live session has one, reading its stream (:class:`~handoffs_runtime.channels.events.EventChannel`)
until the session ends: the customer's pages get their view of each event (``audience``), the console of
the operator who took it gets it whole. A question for the operator goes to the operator who holds the
session, else on the waiting list every operator sees (kept honest by ``web/waiting``); which session
waits is also kept in the store (``wait_for_operator``), so every server on it sees the same.
"""

from __future__ import annotations

import asyncio
import logging

from handoffs_runtime.errors import StoreError
from handoffs_runtime.messages import Notice, Question, Reply
from handoffs_runtime.web.audience import customer_view
from handoffs_runtime.web.frames import CustomerEvent, OperatorEvent, Released
from handoffs_runtime.web.state import Live, Role, send_quietly
from handoffs_runtime.web.waiting import told

logger = logging.getLogger("handoffs_runtime.web")

WAITING_FOR_APPROVAL = (
    "Your request is waiting for a member of our staff to approve it. Please wait a moment."
)


class Pump(Role):
    """Starts a live session's pump, which forgets the session when its stream ends."""

    def start(self, live: Live) -> None:
        if live.pump is None:
            live.pump = asyncio.get_running_loop().create_task(self._pump(live))

    async def _pump(self, live: Live) -> None:
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
                    await self.state.announce_words()
                if (shown := customer_view(event)) is not None:
                    await self.state.to_customers(live, CustomerEvent(session=live.session_id, event=shown))
                if live.operator is not None:
                    await send_quietly(live.operator, OperatorEvent(session=live.session_id, event=event))
                elif live.approver is not None:  # what an approved (or refused) call did, to who decided
                    await send_quietly(live.approver, OperatorEvent(session=live.session_id, event=event))
                    live.approver = None if isinstance(event, Reply) else live.approver
                # The stream ends by itself after SessionEnded, and only then forgets the session: leaving
                # the loop early would keep the ended session, and a page coming back would find it ended.
        finally:
            self._live.pop(live.session_id, None)
            self.state.transcripts.forget(live.session_id)
            if live.waiting_since is not None:  # not live here any more: nobody can take it here
                await self._keep(self.desk.release_operator(live.session_id))
            if live.idle is not None:
                live.idle.cancel()
            if live.operator is not None:
                ended = Released(session=live.session_id, text="The conversation has ended.")
                await send_quietly(live.operator, ended)
            await self.reception.ended(live.session_id)
            await self.state.announce_waiting()

    async def _ask_operator(self, live: Live, question: Question) -> None:
        """The operator's question goes to the operator who holds the session, else on the waiting list;
        the customer reads why nothing happens yet."""
        await self._waits(live, question.prompt)
        if question.choices:  # an approval
            await self.state.to_customers(live, told(live.session_id, WAITING_FOR_APPROVAL))
        if live.operator is not None:
            await send_quietly(live.operator, OperatorEvent(session=live.session_id, event=question))
            return
        await self.reception.waits(live.session_id, question, since=live.waiting_since)  # and announces

    async def _waits(self, live: Live, prompt: str) -> None:
        try:
            live.waiting_since = (await self.desk.wait_for_operator(live.session_id, prompt)).since
        except StoreError as exc:  # the operators here still see it; other servers do not
            logger.warning("could not store that session %s waits for an operator: %s", live.session_id, exc)
