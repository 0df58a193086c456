"""One writer per session, in process: two store objects on one real database (a SQLite file, a PostgreSQL
schema), as two processes would be.

A second store may not open a session that a live store holds; taking it over makes the first one's
writes fail instead of interleaving; a holder that stopped renewing loses its claim by itself; and a
turn computed from a stale read never overwrites what was stored meanwhile (compare-and-set).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from handoffs_runtime.errors import (
    SessionBusyError,
    SessionTakenOverError,
    StoreConflictError,
    UnknownSessionError,
)
from handoffs_runtime.messages import AgentResponse, HandoffEvent
from handoffs_runtime.sessions.recording import record_event, record_reply, record_user
from handoffs_runtime.sessions.store import NewEntry, SessionStore, StoredEntry, entry_for_message

from .store_backends import Backend, Store

HOLDER = f"pid {os.getpid()} on host {socket.gethostname()}"


def _said(text: str) -> UserMessage:
    return UserMessage(content=text, source="User")


async def _turn(store: SessionStore, session: str, context: list[LLMMessage], text: str) -> list[LLMMessage]:
    """One turn as the ``UserAgent`` records it: the person's message, then the reply with its context."""
    said = _said(text)
    await record_user(store, session, said, agent="Agent")
    context = [*context, said, AssistantMessage(content=f"answer to {text}", source="Agent")]
    await record_reply(store, session, AgentResponse(reply_to_topic_type="Agent", context=context))
    return context


def _spoken(entries: list[StoredEntry]) -> list[str]:
    return [e.text for e in entries if e.kind in ("user", "reply")]


@pytest.fixture
async def stores(backend: Backend) -> AsyncIterator[list[Store]]:
    """Two stores on one database: two processes, as far as the database can tell."""
    pair = [backend.make(), backend.make()]
    yield pair
    for store in pair:
        await store.close()


async def test_a_second_writer_is_refused_and_the_first_keeps_every_turn(
    stores: list[Store],
) -> None:
    """The issue's case: both opened the session and the stored context kept only one writer's turns."""
    first, second = stores
    await first.open_session("same", agent="Agent")
    with pytest.raises(SessionBusyError) as refused:
        await second.open_session("same", agent="Agent")
    assert str(refused.value).startswith(f"session 'same' is open in another process ({HOLDER}); ")
    assert "--take-over" in str(refused.value)
    with pytest.raises(SessionTakenOverError, match="never opened here"):
        await second.append("same", [entry_for_message(_said("sneaked in"))])

    context = await _turn(first, "same", [], "one")
    context = await _turn(first, "same", context, "two")
    state = await second.get_session("same")  # reading is always allowed
    assert state.context == context and state.context_seq == state.last_seq == 4
    assert _spoken(await second.entries("same")) == ["one", "answer to one", "two", "answer to two"]


async def test_a_take_over_makes_the_old_holder_stop_writing(stores: list[Store]) -> None:
    first, second = stores
    await first.open_session("same", agent="Agent")
    context = await _turn(first, "same", [], "one")
    stale = await first.get_session("same")

    taken = await second.claim("same", take_over=True)
    assert taken is not None and str(taken) == HOLDER
    resumed = await second.get_session("same")
    await _turn(second, "same", list(resumed.context), "two from second")

    with pytest.raises(SessionTakenOverError) as lost:
        await record_user(first, "same", _said("two from first"), agent="Agent")
    assert str(lost.value) == f"session 'same' was taken over by {HOLDER}; nothing was written"
    late = AgentResponse(reply_to_topic_type="Agent", context=[*context, _said("x")])
    with pytest.raises(SessionTakenOverError):
        await record_reply(first, "same", late)
    with pytest.raises(SessionTakenOverError):
        await first.append("same", [], context=stale.context, expected_seq=stale.last_seq)
    with pytest.raises(SessionTakenOverError):
        await first.end_session("same")

    entries = await second.entries("same")
    assert _spoken(entries) == ["one", "answer to one", "two from second", "answer to two from second"]
    state = await second.get_session("same")
    assert state.status == "open" and state.context_seq == state.last_seq == 4
    assert [m.content for m in state.context][-1] == "answer to two from second"

    await second.end_session("same")  # the one who took it over has let go since
    with pytest.raises(SessionTakenOverError) as gone:
        await record_user(first, "same", _said("three from first"), agent="Agent")
    assert str(gone.value) == (
        "session 'same' was taken over by another process, which has let go of it since; nothing was written"
    )


async def test_append_is_a_compare_and_set_on_the_sequence_number(backend: Backend) -> None:
    store = backend.make()
    await store.open_session("s", agent="Agent")
    await store.append("s", [entry_for_message(_said("hi"))])
    with pytest.raises(
        StoreConflictError, match=r"gained entries 1\.\.1 since it was read; nothing was written"
    ):
        await store.append("s", [entry_for_message(_said("stale"))], context=[_said("stale")], expected_seq=0)
    state = await store.get_session("s")
    assert (state.last_seq, state.context, state.context_seq) == (1, [], 0)
    assert await store.append("s", [entry_for_message(_said("fresh"))], expected_seq=1) == 2
    assert store.failure is None  # a conflict is an answer, not a failure of the store
    await store.close()


def _event_during_reply(store: Store) -> list[bool]:
    """Make a real store land a handoff event of the same turn between ``record_reply``'s read (of the
    store, or of what the store holds) and its write, once: the interleaving that concurrent handlers of
    one session can produce."""
    raced: list[bool] = []
    append = store.append

    async def racing(session_id: str, entries: Sequence[NewEntry], **update: Any) -> int:
        if update.get("context") is not None and not raced:
            raced.append(True)
            event = HandoffEvent(session_id=session_id, source="Agent", target="Other", tool="transfer")
            await record_event(store, event)
        return await append(session_id, entries, **update)

    store.append = racing  # type: ignore[method-assign]
    return raced


async def test_a_reply_whose_read_went_stale_is_read_again_not_written_over(backend: Backend) -> None:
    store = backend.make()
    raced = _event_during_reply(store)
    await store.open_session("s", agent="Agent")
    said = _said("hello")
    await record_user(store, "s", said, agent="Agent")
    context: list[LLMMessage] = [said, AssistantMessage(content="hi there", source="Other")]
    await record_reply(store, "s", AgentResponse(reply_to_topic_type="Other", context=context))
    assert raced
    entries = await store.entries("s")
    assert [e.kind for e in entries] == ["user", "handoff", "reply"]
    state = await store.get_session("s")
    assert (state.active_agent, state.context, state.context_seq, state.last_seq) == ("Other", context, 3, 3)
    await store.close()


async def test_a_holder_that_stopped_renewing_loses_its_claim_by_itself(backend: Backend) -> None:
    """A crashed holder on another host cannot be checked for life: its lease runs out instead."""
    store = backend.make()
    await store.open_session("s", agent="Agent")
    await store.close()
    backend.held_by("s", pid=4242, host="elsewhere", for_seconds=1.0)
    store = backend.make()
    with pytest.raises(SessionBusyError, match=r"\(pid 4242 on host elsewhere\)"):
        await store.open_session("s", agent="Agent")
    with pytest.raises(SessionBusyError, match="pid 4242 on host elsewhere"):
        await store.delete_session("s")
    for _ in range(300):  # no renewal comes: the claim expires by itself (in about a second)
        await asyncio.sleep(0.2)
        try:
            state, created = await store.open_session("s", agent="Agent")
            break
        except SessionBusyError:
            continue
    else:
        pytest.fail("the claim that nobody renewed never expired")
    assert not created and state.session_id == "s"
    await store.close()


async def test_a_dead_holder_on_this_host_frees_the_session_at_once(backend: Backend) -> None:
    child = await asyncio.create_subprocess_exec("true")
    await child.wait()  # a pid that certainly ran on this host and is gone
    store = backend.make()
    await store.open_session("s", agent="Agent")
    await store.close()
    backend.held_by("s", pid=child.pid, host=socket.gethostname(), for_seconds=3600)
    store = backend.make()
    assert await store.claim("s") is None  # nobody live was taken over
    await store.close()


async def test_a_live_holder_keeps_its_claim_by_renewing_it(backend: Backend) -> None:
    holder = backend.make(lease_seconds=0.3)
    other = backend.make()
    await holder.open_session("s", agent="Agent")
    for _ in range(5):  # several lease lengths: only renewal keeps it
        await asyncio.sleep(0.2)
        with pytest.raises(SessionBusyError):
            await other.claim("s")
    await holder.close()  # closing lets go at once
    assert await other.claim("s") is None
    await other.close()


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf")])
def test_a_lease_length_must_be_a_positive_finite_number(backend: Backend, seconds: float) -> None:
    with pytest.raises(ValueError, match="lease_seconds must be a positive, finite number of seconds"):
        backend.make(lease_seconds=seconds)


async def test_ending_a_session_lets_go_of_it(stores: list[Store]) -> None:
    first, second = stores
    await first.open_session("s", agent="Agent")
    await first.end_session("s")
    state, created = await second.open_session("s", agent="Agent")
    assert not created and state.status == "open"
    await second.delete_session("s")
    with pytest.raises(UnknownSessionError):
        await first.get_session("s")
