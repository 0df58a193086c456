"""A durable engine's writes to the session store, fenced by the sequence number the engine expects.

The engine keeps the store's last sequence number with the session's small state; every write is a
compare-and-set on it (``expected_seq``). So the first writer of a step wins, and a retried or zombie
step finds its step written and reads back what is stored instead of running the turn again.

Each write first takes the session's lease over: the engine, not a lease, decides who runs a session's
step, and any worker may run it; the fence keeps two of them from both writing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autogen_core.models import LLMMessage, UserMessage

from handoffs_runtime.errors import HandoffsError, StoreConflictError
from handoffs_runtime.messages import AgentResponse, HandoffEvent, UserTask
from handoffs_runtime.sessions.store import (
    NewEntry,
    SessionStore,
    StoredEntry,
    entry_for_event,
    entry_for_message,
    notice_entry,
    question_entry,
)
from handoffs_runtime.sessions.transcript import describe_entry, new_messages, stored_usage
from handoffs_runtime.usage import Usage

SHOWN = frozenset({"reply", "handoff", "question", "notice"})
MESSAGE_KINDS = frozenset({"user", "reply", "tool_calls", "tool_results", "system"})
"""The entry kinds that hold a conversation message (and may carry a turn's usage)."""
"""The entry kinds a person is shown when a step is read back (tool traffic is not)."""


class FenceError(HandoffsError):
    """The store holds something the engine did not write at the expected place: not worth a retry."""


@dataclass(frozen=True, slots=True)
class Opened:
    """A session as an engine picks it up: who answers next, the store's last sequence number, and the
    tokens it used so far."""

    active_agent: str
    seq: int
    usage: Usage = Usage.EMPTY


@dataclass(frozen=True, slots=True)
class StoredStep:
    """What one agent step adds to the store: the conversation it read, how it ended, what it asked."""

    conversation: Sequence[LLMMessage]
    result: UserTask | AgentResponse
    events: Sequence[HandoffEvent]
    asked: Sequence[tuple[str, str | None]]
    agent: str
    usage: Usage = Usage.EMPTY
    """The step's own tokens: stored with its last reply (else its last message), as a turn's are."""
    notices: Sequence[str] = ()
    """What its tools told the person, stored so that the person is shown it."""


@dataclass(frozen=True, slots=True)
class StepRef:
    """A step by reference, what a fenced write needs of it: the session, the agent whose turn it is, and
    the store's sequence number the step follows (a ``StepRequest`` is one)."""

    session_id: str
    agent: str
    expected_seq: int


async def open_state(store: SessionStore, session_id: str, *, entry_agent: str, team: str) -> Opened:
    """The session's active agent and last sequence number, created with ``entry_agent`` when new."""
    await store.claim(session_id, take_over=True)
    state, new = await store.open_session(session_id, agent=entry_agent, team=team)
    usage = Usage.EMPTY if new else stored_usage(await store.entries(session_id))
    return Opened(state.active_agent, state.last_seq, usage)


async def record_said(
    store: SessionStore, session_id: str, text: str, *, agent: str, expected_seq: int
) -> int:
    """Store the person's message for ``agent`` right after ``expected_seq``; its sequence number.

    A retry finds its own message there and returns the same number; anything else there is a
    :class:`FenceError`.
    """
    entry = entry_for_message(UserMessage(content=text, source="User"), agent=agent)
    await store.claim(session_id, take_over=True)
    try:
        return await store.append(session_id, [entry], expected_seq=expected_seq)
    except StoreConflictError:
        there = await store.entries(session_id, after=expected_seq)
        if there and there[0].kind == "user" and there[0].text == text:
            return there[0].seq
        raise FenceError(
            f"session {session_id} has another entry after {expected_seq}: it was written outside this engine"
        ) from None


async def read_conversation(store: SessionStore, session_id: str) -> list[LLMMessage]:
    """The conversation the next agent reads: the stored context and the person's messages after it."""
    state = await store.get_session(session_id)
    pending = await store.entries(session_id, after=state.context_seq)
    said = [m for e in pending if e.kind == "user" and (m := e.message()) is not None]
    return [*state.context, *said]


async def write_step(store: SessionStore, request: StepRef, step: StoredStep) -> int:
    """Store ``step`` after ``request.expected_seq``; the new last sequence number.

    The context becomes the reply's, or the conversation handed on; the active agent whoever answers
    next. Entries go in the order the in-process engine stores them: questions, handoff events, then
    the turn's new messages; the notices its tools gave the person come before those messages.
    """
    result = step.result
    context = result.context
    fresh = new_messages(step.conversation, context)
    entries: list[NewEntry] = [question_entry(p, "customer", a, asker=step.agent) for p, a in step.asked]
    entries += [entry_for_event(e) for e in step.events]
    entries += [notice_entry(text, agent=step.agent) for text in step.notices]
    entries += [entry_for_message(m) for m in fresh]
    if step.usage:
        at = max((i for i, e in enumerate(entries) if e.kind == "reply"), default=len(entries) - 1)
        if at >= 0 and entries[at].kind in MESSAGE_KINDS:
            entry = entries[at]
            entries[at] = NewEntry(entry.agent, entry.kind, {**entry.body, "usage": step.usage.to_json()})
    if isinstance(result, AgentResponse):
        active = result.reply_to_topic_type
    else:
        active = result.turn_path[-1] if result.turn_path else request.agent
    await store.claim(request.session_id, take_over=True)
    return await store.append(
        request.session_id, entries, active_agent=active, context=context, expected_seq=request.expected_seq
    )


def describe_entries(entries: Sequence[StoredEntry], labels: Mapping[str, str]) -> list[str]:
    """The lines a person is shown of stored entries, as the console prints them."""
    return [describe_entry(e, labels) for e in entries if e.kind in SHOWN]
