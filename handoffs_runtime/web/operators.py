"""The operators' side of the hub: they sign in, take a waiting session, answer, and hand it back.

:meth:`Operators.take` gives a session to exactly one of them: in this server (no await between the check
and the claim) and between servers (the store's ``take_for_operator`` decides). An operator who leaves
lets go of the sessions they held, and those wait for someone else.
"""

from __future__ import annotations

import uuid

from handoffs_runtime.errors import StoreError
from handoffs_runtime.tools.approval import CUSTOMER_LEFT, is_approval
from handoffs_runtime.web.frames import OperatorEvent, Ready, Released, Taken
from handoffs_runtime.web.state import HubError, Live, Peer, Role, stale_answer
from handoffs_runtime.web.waiting import told

APPROVED = "A member of our staff approved your request."
NOT_APPROVED = "A member of our staff did not approve your request."


class Operators(Role):
    """What the operator console asks of the hub."""

    async def add(self, peer: Peer) -> None:
        self.state.signed_in[peer] = f"operator-{uuid.uuid4().hex[:8]}"
        await self.reception.operator_in()
        await peer.send(Ready(agents=self.state.agents, labels=dict(self.team.labels)))
        await peer.send(self.state.waiting_list())

    async def remove(self, peer: Peer) -> None:
        """An operator left: the sessions they held wait for someone else."""
        name = self.state.signed_in.pop(peer, "")
        self.reception.operator_out()
        for live in list(self._live.values()):
            if live.approver is peer:
                live.approver = None
            if live.operator is peer:
                live.operator = None
                await self._keep(self.desk.release_operator(live.session_id, name))
                if (question := self.state.asked_operator(live.session_id)) is not None:
                    await self.reception.waits(live.session_id, question, since=live.waiting_since)
        await self.state.announce_waiting()

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
            taken = await self.desk.take_for_operator(session_id, self.state.signed_in.get(peer, ""))
        except StoreError as exc:
            live.operator = None
            raise HubError("the session could not be taken right now; please try again") from exc
        if not taken:
            live.operator = None
            raise HubError("another operator has already taken that session")
        await peer.send(
            Taken(
                session=session_id,
                history=await self.state.history(session_id),
                question=live.already_sent(self.state.asked_operator(session_id)),
            )
        )
        await self.reception.taken(session_id)  # the customer hears that a person is there

    async def says(self, peer: Peer, session_id: str, text: str, asked: str | None = None) -> None:
        """Answer the session's question; an approval answered lets go of the session (agents carry on).
        ``asked``: the id of the question the console answered; an approval takes only an answer naming
        it (a "yes" to an approval that expired never approves the next one)."""
        live = self._held(peer, session_id)
        question = self.channel.waiting(session_id, "operator")
        if question is None:
            raise HubError("the session is not waiting for your answer")
        if not question.answered_by(asked):
            await peer.send(OperatorEvent(session=session_id, event=question))  # shown again
            raise stale_answer(session_id, "operator")
        void = question.choices and self.channel.has_left(session_id)  # the tool refuses it too
        await self.channel.answer(session_id, text, person="operator")
        if question.choices:  # the customer, told to wait for it, hears how it was decided
            decided = APPROVED if is_approval(text) and not void else NOT_APPROVED
            await self.state.to_customers(live, told(session_id, decided))
            live.operator = None
            live.approver = peer  # to see what the call did (the pump sends it up to the agent's reply)
            await self._keep(self.desk.release_operator(session_id))
            said = f"Void: {CUSTOMER_LEFT}, so nothing was run." if void else "Answered: the agents carry on."
            await peer.send(Released(session=session_id, text=said))

    async def hand_back(self, peer: Peer, session_id: str, agent: str) -> None:
        """Hand the conversation to one of the team's agents, and let go of the session."""
        live = self._held(peer, session_id)
        if agent not in self.state.agents:
            raise HubError(f"unknown agent; choose one of: {', '.join(self.state.agents)}")
        question = self.channel.waiting(session_id, "operator")
        if question is None or question.choices:
            raise HubError("the conversation can be handed back only when it waits for your answer")
        live.operator = None
        await self._keep(self.desk.release_operator(session_id))
        await self.reception.done(session_id)
        await self.channel.hand_back(session_id, agent)
        name = self.team.labels.get(agent) or agent  # as people read it
        await peer.send(Released(session=session_id, text=f"You handed the conversation back to {name}."))

    def _held(self, peer: Peer, session_id: str) -> Live:
        live = self._live.get(session_id)
        if live is None or live.operator is not peer:
            raise HubError("take the session first")
        return live
