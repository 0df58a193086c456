"""The effect ledger on both stores: an intent is recorded once, atomically, whoever races for it."""

from __future__ import annotations

import asyncio

from handoffs_runtime.sessions.effects import EffectKey

from .store_backends import Backend, Store

KEY = EffectKey("s1", 3, "execute_order", '{"item":"anvil"}')


async def _made(backend: Backend, count: int) -> list[Store]:
    return [await asyncio.to_thread(backend.make) for _ in range(count)]


async def test_an_intent_is_ours_once_and_its_outcome_is_what_a_repeat_finds(backend: Backend) -> None:
    [store] = await _made(backend, 1)
    try:
        assert await store.record_intent(KEY, position=0) is None  # ours: run it
        again = await store.record_intent(KEY, position=0)
        assert again is not None and again.status == "pending"  # no outcome: never run on a guess
        await store.record_outcome(KEY, "done", "Success")
        done = await store.lookup(KEY)
        assert done is not None and (done.status, done.result) == ("done", "Success")
        assert done.settled_at is not None and done.key == KEY
        repeat = await store.record_intent(KEY)
        assert repeat is not None and repeat.status == "done"
        assert [e.key for e in await store.effects("s1")] == [KEY]
        assert await store.effects("other") == []
    finally:
        await store.close()


async def test_a_failed_or_reconciled_not_done_intent_may_be_claimed_again(backend: Backend) -> None:
    [store] = await _made(backend, 1)
    try:
        for status in ("failed", "not_done"):
            assert await store.record_intent(KEY) is None
            await store.record_outcome(KEY, status, "it did not happen")  # type: ignore[arg-type]
        assert await store.record_intent(KEY) is None
        await store.record_outcome(KEY, "declined", "Nothing was ordered.")
        declined = await store.record_intent(KEY)
        assert declined is not None and declined.status == "declined"
    finally:
        await store.close()


async def test_two_store_objects_racing_for_one_key_get_one_run(backend: Backend) -> None:
    """As two processes on one database: each round, exactly one of them may run the effect."""
    stores = await _made(backend, 2)
    try:
        for turn in range(1, 6):
            key = EffectKey("race", turn, "execute_order", '{"item":"anvil"}')
            found = await asyncio.gather(*(s.record_intent(key) for s in stores))
            assert sorted(f is None for f in found) == [False, True]
        assert len(await stores[0].effects("race")) == 5
    finally:
        for store in stores:
            await store.close()


async def test_deleting_a_session_deletes_its_effects(backend: Backend) -> None:
    [store] = await _made(backend, 1)
    try:
        await store.open_session("s1", agent="Shop")
        await store.record_intent(KEY)
        await store.end_session("s1")
        await store.delete_session("s1")
        assert await store.effects("s1") == []
    finally:
        await store.close()
