"""The store's three concerns as three protocols, each kept by both backends (SQLite and PostgreSQL).

``SessionStore`` (entries, context, active agent, leases) is what agents ask for; ``OperatorDesk`` (who
waits for an operator, who took them) what the web's operator console asks for; ``SharedSecrets`` what
the web app's key signing asks for. Both backends implement all three, so one store serves a server.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

from handoffs_runtime.errors import StoreError
from handoffs_runtime.sessions.desk import OperatorDesk, OperatorWait
from handoffs_runtime.sessions.open import OpenedStore, SharedStore
from handoffs_runtime.sessions.secrets import SharedSecrets
from handoffs_runtime.sessions.store import SessionStore

from .store_backends import Backend

PROTOCOLS: tuple[type, ...] = (SessionStore, OperatorDesk, SharedSecrets)


def _methods(protocol: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_")}


def test_the_three_concerns_are_separate_protocols() -> None:
    """No method belongs to two concerns, and an object that keeps one concern is not taken for another."""
    desk, secrets, sessions = _methods(OperatorDesk), _methods(SharedSecrets), _methods(SessionStore)
    assert desk == {"wait_for_operator", "take_for_operator", "release_operator", "operator_waits"}
    assert secrets == {"secret"}
    assert not sessions & (desk | secrets)
    assert {"append", "entries", "claim", "open_session", "get_session"} <= sessions

    class DeskOnly:
        async def wait_for_operator(self, session_id: str, prompt: str) -> OperatorWait:
            return OperatorWait(session_id, prompt, 0.0, None)

        async def take_for_operator(self, session_id: str, operator: str) -> bool:
            return False

        async def release_operator(self, session_id: str, operator: str | None = None) -> None:
            return None

        async def operator_waits(self) -> list[OperatorWait]:
            return []

    assert isinstance(DeskOnly(), OperatorDesk)
    assert not isinstance(DeskOnly(), SessionStore | SharedSecrets)


async def test_both_backends_keep_all_three_concerns(backend: Backend) -> None:
    store = backend.make()
    for protocol in (*PROTOCOLS, SharedStore, OpenedStore):
        assert isinstance(store, protocol), protocol.__name__
    await store.close()


async def test_a_secret_is_made_once_and_shared_by_every_store_on_the_database(backend: Backend) -> None:
    """Web servers starting together agree on one key secret, and a restart finds it again."""
    stores: list[SharedSecrets] = [backend.make(), backend.make()]
    made = await asyncio.gather(*(s.secret("web-session-key") for s in stores * 5))
    assert len(set(made)) == 1 and len(made[0]) == 32
    assert await stores[0].secret("another", size=16) not in (made[0], b"") and len(made[0]) == 32
    for store in stores:
        assert isinstance(store, SessionStore)
        await store.close()
    again = backend.make()
    assert await again.secret("web-session-key") == made[0]
    await again.close()


async def test_a_read_only_store_finds_a_secret_but_cannot_make_one(backend: Backend) -> None:
    writer = backend.make()
    made = await writer.secret("web-session-key")
    await writer.close()
    reader: SharedSecrets = backend.make(read_only=True)
    assert await reader.secret("web-session-key") == made
    with pytest.raises(StoreError, match="holds no secret 'missing' yet, and a read-only store cannot make"):
        await reader.secret("missing")
    assert isinstance(reader, SessionStore)
    await reader.close()


async def test_which_session_waits_for_an_operator_and_who_took_it_is_shared(backend: Backend) -> None:
    sessions_here, sessions_there = backend.make(), backend.make()  # two web servers on one store
    here: OperatorDesk = sessions_here
    there: OperatorDesk = sessions_there
    for session in ("s1", "s2"):
        await sessions_here.open_session(session, agent="HumanAgent")
    first = await here.wait_for_operator("s1", "Customer asks for a person")
    await here.wait_for_operator("s2", "Approve the refund?")
    assert [(w.session_id, w.taken_by) for w in await there.operator_waits()] == [("s1", None), ("s2", None)]
    taken = await asyncio.gather(here.take_for_operator("s1", "ann"), there.take_for_operator("s1", "bob"))
    assert sorted(taken) == [False, True]  # exactly one of two operators on two servers
    winner = "ann" if taken[0] else "bob"
    assert await there.take_for_operator("s1", winner)  # taking again what one holds is fine
    assert not await there.take_for_operator("s3", winner)  # nobody waits there
    again = await there.wait_for_operator("s1", "the customer wrote again")
    assert (again.since, again.taken_by, again.prompt) == (first.since, winner, "the customer wrote again")
    await here.release_operator("s1", "somebody else")  # only the taker lets go
    await here.release_operator("s1", winner)
    assert [(w.session_id, w.taken_by) for w in await there.operator_waits()] == [("s1", None), ("s2", None)]
    await there.release_operator("s2")  # answered: it waits no more
    await sessions_here.end_session("s1")
    await sessions_here.delete_session("s1")  # a deleted session waits for nobody
    assert await there.operator_waits() == []
    for store in (sessions_here, sessions_there):
        await store.close()
