"""What the ``UserAgent`` writes to the session store, and what it reads back to resume a session.

Why the ``UserAgent``: it sees the person's words before they are sent, every reply (whose context holds
the whole turn: tool calls, tool results, the agents' words) before it is shown, and every handoff event.
So "stored before acknowledged" is one rule in one place, and the agents stay stateless.

What is new in a reply: the store keeps the context the last reply came with (``SessionState.context``)
and the sequence number it accounts for. The context a turn went out with is that context plus the
person's messages stored after it;
:func:`~handoffs_runtime.sessions.transcript.new_messages` compares the two,
which stays right when an input filter rewrote the history at a handoff.

Order: entries are stored in the order this side learns of them. A handoff event therefore comes before
the handoff call of the same turn, which only arrives with the reply, and so does a tool's question with
its answer before the call that asked it; a filter that drops tool calls at a handoff drops them from
the transcript too (the handoff event still records the handoff).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field

from autogen_core.models import LLMMessage

from handoffs_runtime.errors import StoreConflictError
from handoffs_runtime.handoffs.returns import ReturnStack, replay
from handoffs_runtime.messages import NO_LABELS, AgentResponse, HandoffEvent, Labels, Notice, Person
from handoffs_runtime.sessions.effects import ledger_of
from handoffs_runtime.sessions.held import held_by
from handoffs_runtime.sessions.store import (
    NewEntry,
    SessionStore,
    entry_for_event,
    entry_for_message,
    notice_entry,
    question_entry,
)
from handoffs_runtime.sessions.transcript import describe_entry, last_exchanges, new_messages, stored_usage
from handoffs_runtime.usage import Usage

UNANSWERED = "not answered: the session stopped before a reply"

_REPLY_ATTEMPTS = 5
"""Reads and compare-and-set writes of one reply before giving up (only this session's own events race)."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """A session as the ``UserAgent`` picks it up: who answers next, with what, what to tell the person."""

    context: list[LLMMessage]
    agent: str
    notices: list[Notice] = field(default_factory=list)
    """What the person is told first: that the session resumes, its last exchanges (``recap``), what went
    missing."""
    usage: Usage = Usage.EMPTY
    """The tokens the session used before."""
    new: bool = False
    """Nothing was said in the session yet: the person is greeted."""
    returns: ReturnStack = ()
    """Who waits for the conversation to come back (see :mod:`handoffs_runtime.handoffs.returns`)."""


async def resume(
    store: SessionStore,
    session: str,
    *,
    entry_agent: str,
    team: str = "",
    show: int = 3,
    agents: frozenset[str] = frozenset(),
    labels: Labels = NO_LABELS,
) -> Resumed:
    """Open ``session``, new or stored; a stored one continues with its active agent and context.

    Opening claims the session for this store: :class:`~handoffs_runtime.errors.SessionBusyError` when
    another live process holds it.

    A person's message that was stored but never answered (the process stopped mid-turn) is not replayed,
    since its tools may have run already; the person is told and the transcript notes it. A session whose
    active agent is not in ``agents`` (it was stored by another team) continues with ``entry_agent``.
    ``labels`` name the agents as people read them.
    """
    state, created = await store.open_session(session, agent=entry_agent, team=team)
    agent = state.active_agent
    if created or state.last_seq == 0:  # nothing was said yet: nothing to tell
        known = agent if not agents or agent in agents else entry_agent
        return Resumed(list(state.context), known, new=True)
    entries = await store.entries(session)
    lines = []
    if agents and agent not in agents:
        lines.append(
            f"session {session} was with {agent}, which team {team or '?'} does not have "
            f"(it was stored by team {state.team or '?'}); {entry_agent} continues it"
        )
        agent = entry_agent
    notices = [Notice(text=line) for line in lines]
    with_whom = labels.get(agent) or agent
    recap = [f"resuming session {session} with {with_whom} ({state.last_seq} messages stored)"]
    recap += [f"  {describe_entry(e, labels)}" for e in last_exchanges(entries, show)]
    notices += [Notice(text=line, recap=True) for line in recap]
    unanswered = [e for e in entries if e.seq > state.context_seq and e.kind == "user"]
    if unanswered:
        notices.append(
            Notice(
                text=f"your last message was not answered before the session stopped: "
                f"{unanswered[-1].text!r}; send it again if you still need an answer"
            )
        )
        await store.append(session, [notice_entry(UNANSWERED)], context=state.context)
    notices += await _unknown_effects(store, session)
    returns = replay(e for entry in entries if (e := entry.event()) is not None)
    return Resumed(list(state.context), agent, notices, stored_usage(entries), returns=returns)


UNKNOWN_EFFECT = (
    "⚠ {action} was running when the session stopped: it may or may not have happened. It will not be "
    "done again on its own; ask for it again to check, or to confirm a second one."
)


async def _unknown_effects(store: SessionStore, session: str) -> list[Notice]:
    """A notice for each irreversible action whose outcome the ledger does not know (the process stopped
    inside its tool)."""
    ledger = ledger_of(store)
    if ledger is None:
        return []
    return [
        Notice(text=UNKNOWN_EFFECT.format(action=e.key.described.capitalize()))
        for e in await ledger.effects(session)
        if e.status == "pending"
    ]


def record_user(store: SessionStore, session: str, message: LLMMessage, *, agent: str) -> Awaitable[int]:
    """Store the person's message before it is sent to ``agent`` (await it: the store's own coroutine,
    handed back without one more around it, as :func:`record_event` does)."""
    return store.append(session, [entry_for_message(message, agent=agent)])


async def record_reply(
    store: SessionStore,
    session: str,
    response: AgentResponse,
    *,
    usage: Usage = Usage.EMPTY,
    hand_back: HandoffEvent | None = None,
) -> None:
    """Store what is new in ``response``, its context and the new active agent, in one transaction.

    ``usage``, the turn's tokens, is stored with the turn's last reply entry. ``hand_back``: the reply
    ends a returning handoff's part, so the event goes in the same transaction and its target answers next.

    What is new depends on what is stored, so the write is a compare-and-set on the sequence number
    that was read: if anything was appended meanwhile (a handoff event of the same turn), it reads again
    rather than overwrite the context computed from a stale read.
    """
    for attempt in range(1, _REPLY_ATTEMPTS + 1):
        held = held_by(store, session) if attempt == 1 else None  # after a conflict, read what is stored
        if held is not None:
            sent, last_seq = held.sent, held.last_seq
        else:
            state = await store.get_session(session)
            pending = await store.entries(session, after=state.context_seq)
            sent = list(state.context)
            sent += [m for e in pending if e.kind == "user" and (m := e.message()) is not None]
            last_seq = state.last_seq
        fresh = new_messages(sent, response.context)
        entries = [entry_for_message(m) for m in fresh]
        if usage:
            last = max((i for i, e in enumerate(entries) if e.kind == "reply"), default=len(entries) - 1)
            if last >= 0:
                entry = entries[last]
                body = {**entry.body, "usage": usage.to_json()}
                entries[last] = NewEntry(entry.agent, entry.kind, body, entry.message)
        if hand_back is not None:
            entries.append(entry_for_event(hand_back))
        try:
            await store.append(
                session,
                entries,
                active_agent=response.reply_to_topic_type if hand_back is None else hand_back.target,
                context=response.context,
                expected_seq=last_seq,
            )
            return
        except StoreConflictError:
            if attempt == _REPLY_ATTEMPTS:
                raise


async def record_question(
    store: SessionStore, session: str, prompt: str, answer: str | None, *, person: Person, asker: str
) -> None:
    """Store a tool's question and the answer it got (see ``agents.person``)."""
    await store.append(session, [question_entry(prompt, person, answer, asker=asker)])


async def record_joined(
    store: SessionStore, session: str, line: LLMMessage, context: list[LLMMessage], *, agent: str
) -> None:
    """Store a live reply's ``line`` (see ``AgentResponse.live``) and the conversation it joined.

    ``context`` (the line included) is the conversation as the ``UserAgent`` has it, in the order the
    customer and the person wrote: the one writer of a session's context, so no compare-and-set here.
    """
    await store.append(session, [entry_for_message(line)], active_agent=agent, context=context)


def record_event(store: SessionStore, event: HandoffEvent) -> Awaitable[int]:
    return store.append(event.session_id, [entry_for_event(event)])
