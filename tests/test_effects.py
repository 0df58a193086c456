"""Effects happen once: the tool loop and the effect ledger on a real store, real runtime, scripted model.

A step that finds its effect recorded gets the recorded outcome; an intent with no outcome is never run
again on its own, the person is told, and a tool's ``reconcile`` settles it; the same action asked for
again after such a crash runs only once reconciled as not done or confirmed by the person.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from autogen_core.models import UserMessage

from handoffs_runtime import AgentSpec, OfflineModel, TeamSpec, ask_person, irreversible, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.effects import EffectKey
from handoffs_runtime.sessions.recording import UNANSWERED
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import entry_for_message, notice_entry
from handoffs_runtime.tools.context import current_tool_context

from .support import emptied_around_each_test, notices, questions, results, run_sessions, texts

ORDERS: list[tuple[str, str | None]] = []
"""Every order placed: (item, the idempotency key it carried)."""
ANVIL = '{"copies":1,"item":"anvil"}'


async def place_order(item: str, copies: int = 1) -> str:
    """Place an order, after the customer confirms it."""
    answer = await ask_person(f"Order {copies} x {item}? y/n")
    if answer is None or answer.strip().lower() not in ("y", "yes"):
        return "Nothing was ordered."
    ctx = current_tool_context()
    ORDERS.append((item, ctx.idempotency_key if ctx is not None else None))
    return f"Ordered {copies} x {item}."


no_orders = emptied_around_each_test(ORDERS)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteSessionStore]:
    opened = await asyncio.to_thread(SQLiteSessionStore, tmp_path / "s.sqlite3")
    yield opened
    await opened.close()


def shop(*, reconcile: object = None) -> TeamSpec:
    tool = irreversible(place_order, reconcile=reconcile)  # type: ignore[arg-type]
    return TeamSpec(name="shop", entry="Shop", agents=[AgentSpec("Shop", tools=[tool])])


def order(item: str = "anvil") -> object:
    return tool_call("place_order", {"item": item})


async def _crashed_earlier(store: SQLiteSessionStore, *, turn: int) -> EffectKey:
    """Leave the session as a process killed inside ``place_order(anvil)`` in ``turn`` would."""
    await store.open_session("s1", agent="Shop", team="shop")
    key = EffectKey("s1", turn, "place_order", ANVIL)
    assert await store.record_intent(key) is None
    return key


async def _ordered_again(store: SQLiteSessionStore, *, reply: str) -> tuple[str, ScriptedChannel]:
    """The redelivered turn orders the anvil again and the model then says ``reply``: nothing is run
    and nobody is asked; the one tool result the model read, and the channel."""
    model = ScriptedModel([[order()], reply])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil"]})
    await run_sessions(shop(), channel, model=model, store=store)
    assert ORDERS == [] and questions(channel) == []
    [answer] = results(model, 1)
    return answer, channel


async def test_the_same_call_twice_in_one_response_runs_once_and_both_are_on_record(
    store: SQLiteSessionStore,
) -> None:
    model = ScriptedModel([[order(), tool_call("place_order", '{"item": " anvil ", "copies": 1}')], "Done."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "y"]})
    await run_sessions(shop(), channel, model=model, store=store)
    assert [item for item, _ in ORDERS] == ["anvil"]
    first, second = results(model, 1)
    assert first == "Ordered 1 x anvil." and second.startswith("Not run again")
    [effect] = await store.effects("s1")
    assert (effect.key.turn, effect.key.arguments, effect.status) == (1, ANVIL, "done")
    assert ORDERS[0][1] == effect.key.id  # the key reached the tool


async def test_a_repeated_step_gets_the_recorded_outcome(store: SQLiteSessionStore) -> None:
    """A redelivered turn (same person's message, seq 1) reaches a call already done: it is not run."""
    key = await _crashed_earlier(store, turn=1)
    await store.record_outcome(key, "done", "Ordered 1 x anvil.")
    answer, _ = await _ordered_again(store, reply="Done.")
    assert answer.startswith("Not run again") and "Ordered 1 x anvil." in answer


async def test_an_intent_without_outcome_is_not_run_again_and_the_person_is_told(
    store: SQLiteSessionStore,
) -> None:
    await _crashed_earlier(store, turn=1)
    answer, channel = await _ordered_again(store, reply="It may or may not have gone through.")
    assert answer.startswith("Error: not run: place_order(") and "may or may not have happened" in answer
    assert any("may or may not have happened" in text for text in notices(channel))
    [effect] = await store.effects("s1")
    assert effect.status == "pending"  # still unknown: nobody guessed


async def test_reconcile_settles_an_intent_without_outcome(store: SQLiteSessionStore) -> None:
    key = await _crashed_earlier(store, turn=1)
    asked: list[tuple[str, object]] = []

    def order_exists(idempotency_key: str, arguments: dict[str, object]) -> bool:
        asked.append((idempotency_key, arguments))
        return True

    model = ScriptedModel([[order()], "It went through."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil"]})
    await run_sessions(shop(reconcile=order_exists), channel, model=model, store=store)
    assert asked == [(key.id, {"copies": 1, "item": "anvil"})]
    assert ORDERS == []
    assert "a look-up shows it went through" in results(model, 1)[0]
    [effect] = await store.effects("s1")
    assert effect.status == "done"


@pytest.mark.parametrize(("verdict", "answer", "runs"), [(None, "n", 0), (None, "y", 1), (False, None, 1)])
async def test_the_same_action_asked_for_after_a_crash_runs_only_once_settled_or_confirmed(
    store: SQLiteSessionStore, verdict: bool | None, answer: str | None, runs: int
) -> None:
    """The person's message of turn 1 was never answered; in a new turn they ask for the same order."""
    await _crashed_earlier(store, turn=1)
    said = entry_for_message(UserMessage(content="buy an anvil", source="User"), agent="Shop")
    await store.append("s1", [said])  # turn 1: the person's message, never answered
    await store.append("s1", [notice_entry(UNANSWERED)], context=[])  # as a resumed session notes it
    lines = ["buy an anvil", *([answer] if answer else []), *(["y"] if runs else [])]
    model = ScriptedModel([[order()], "Done."])
    channel = ScriptedChannel.for_sessions({"s1": lines})
    await run_sessions(shop(reconcile=lambda key, arguments: verdict), channel, model=model, store=store)
    assert len(ORDERS) == runs
    again = [q for q in questions(channel) if "may already have happened" in q]
    assert len(again) == (1 if verdict is None else 0)
    statuses = [e.status for e in await store.effects("s1")]
    settled = {None: "unknown" if runs else "pending", False: "not_done"}[verdict]
    assert statuses[0] == settled
    assert statuses[1:] == (["done"] if runs else [])


async def test_the_idempotency_key_is_stable_across_retries_and_differs_between_orders(
    store: SQLiteSessionStore,
) -> None:
    """Two separate orders of the same item (two turns) carry two keys; a retry of one call, its own."""
    model = ScriptedModel([[order()], "Ordered.", [order()], "Ordered another."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "y", "one more, please", "y"]})
    await run_sessions(shop(), channel, model=model, store=store)
    (_, first), (_, second) = ORDERS
    assert first is not None and second is not None and first != second
    keys = [e.key for e in await store.effects("s1")]
    assert [k.id for k in keys] == [first, second]
    # a retry of the first call (its turn redelivered) computes the same key from the same values
    assert EffectKey("s1", keys[0].turn, "place_order", ANVIL).id == first


async def test_no_store_no_ledger_and_no_key() -> None:
    model = ScriptedModel([[order()], "Done."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "y"]})
    await run_sessions(shop(), channel, model=model)
    assert ORDERS == [("anvil", None)]


async def test_acme_reconciles_an_order_by_looking_it_up(store: SQLiteSessionStore) -> None:
    """An order placed whose outcome was never recorded (the step died after the tool) is found."""
    from handoffs_runtime.teams.acme import ORDER_BOOK, order_placed

    key = EffectKey("s1", 1, "execute_order", '{"price":10,"product":"anvil"}')
    assert order_placed(key.id, {"price": 10, "product": "anvil"}) is None  # not in the book: unknown
    ORDER_BOOK[key.id] = "anvil for $10"
    try:
        assert order_placed(key.id, {"price": 10, "product": "anvil"}) is True
    finally:
        del ORDER_BOOK[key.id]


def test_the_person_reads_an_unsettled_action_in_words_not_as_a_tool_call() -> None:
    from handoffs_runtime.sessions.effects import EffectKey

    key = EffectKey("s", 3, "execute_order", '{"price":100,"product":"rocket skates"}')
    assert key.described == "execute order with price 100 and product “rocket skates”"
    assert "{" not in key.described and "_" not in key.described


async def test_the_offline_model_tells_the_person_an_unknown_outcome_in_plain_words(
    store: SQLiteSessionStore,
) -> None:
    """Found pending on a redelivered turn, the offline model says what the person may know, not the
    runtime's instruction to the model (``Tell the person exactly that``)."""
    await _crashed_earlier(store, turn=3)  # the "yes" (seq 3, after the proposal) ran it, then the crash
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "yes"]})
    await run_sessions(shop(), channel, model=OfflineModel(), store=store)
    [_, (_, reply)] = texts(channel)
    assert ORDERS == [] and "may or may not have happened" in reply, reply
    assert "Tell" not in reply and "tell the person" not in reply, reply
