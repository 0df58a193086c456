"""An irreversible call runs once a turn with the same arguments: a model that does not read tool results
and calls ``place_order`` again and again places one order, and one the person declined is not asked
again. Real runtime, real tools asking through the channel; the model is scripted."""

from __future__ import annotations

from handoffs_runtime import AgentSpec, TeamSpec, ask_person, irreversible, requires_approval, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel

from .support import emptied_around_each_test, questions, results, run_sessions, texts

ORDERS: list[str] = []


async def place_order(item: str, copies: int = 1) -> str:
    """Place an order, after the customer confirms it."""
    answer = await ask_person(f"Order {copies} x {item}? y/n")
    if answer is not None and answer.strip().lower() in ("y", "yes"):
        ORDERS.append(item)
        return f"Ordered {copies} x {item}."
    return "Nothing was ordered."


def cancel_order(item: str) -> str:
    """Cancel an order."""
    ORDERS.remove(item)
    return f"Cancelled {item}."


no_orders = emptied_around_each_test(ORDERS)


def shop(*tools: object) -> TeamSpec:
    agents = [AgentSpec("Shop", tools=list(tools) or [irreversible(place_order)])]  # type: ignore[arg-type]
    return TeamSpec(name="shop", entry="Shop", agents=agents)


def order(item: str, **more: object) -> object:
    return tool_call("place_order", {"item": item, **more})


async def test_a_second_identical_irreversible_call_after_a_success_is_refused() -> None:
    same_again = tool_call("place_order", '{"copies": 1,  "item": "anvil"}')  # other spacing and order
    model = ScriptedModel([[order("anvil")], [order("anvil")], [same_again, order("anvil")], "Done."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "yes"]})
    await run_sessions(shop(), channel, model=model)
    assert ORDERS == ["anvil"]  # one order, however often the model asked for it
    assert questions(channel) == ["Order 1 x anvil? y/n"]  # and one confirmation
    assert results(model, 1) == ["Ordered 1 x anvil."]
    [again] = results(model, 2)
    assert again.startswith("Not run again: place_order already ran with these arguments in this turn")
    assert "Ordered 1 x anvil." in again and "tell the person it is done" in again
    assert results(model, 3) == [again, again]  # beside each other in one response too
    assert texts(channel) == [("Shop", "Done.")]


async def test_a_declined_irreversible_call_is_not_proposed_again_in_the_turn() -> None:
    """After one declined call of a tool, no call of that tool is put to the person again in the turn,
    whatever its arguments."""
    steps = [[order("anvil")], [order("anvil")], [order("anvil", copies=2)], "Nothing ordered."]
    model = ScriptedModel(steps)  # type: ignore[arg-type]
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "no"]})
    await run_sessions(shop(), channel, model=model)
    assert questions(channel) == ["Order 1 x anvil? y/n"]  # neither the same again nor two copies
    assert results(model, 1) == ["Nothing was ordered."]
    [declined] = results(model, 2)
    assert declined.startswith("Error: not asked again: the person declined place_order")
    [other] = results(model, 3)
    assert other.startswith("Error: not asked again: the person declined place_order earlier in this turn")
    assert ORDERS == []


async def test_a_refused_approval_counts_as_declined() -> None:
    tool = requires_approval(irreversible(cancel_order))
    calls = [tool_call("cancel_order", {"item": "anvil"})]
    model = ScriptedModel([calls, calls, "I left it as it is."])
    channel = ScriptedChannel.for_sessions({"s1": ["cancel my anvil", "no"]})
    await run_sessions(shop(tool), channel, model=model)
    assert questions(channel) == ['Allow cancel_order(item="anvil")? y/n']
    assert results(model, 1) == ["Refused: the customer did not approve running cancel_order."]
    [declined] = results(model, 2)
    assert declined.startswith("Error: not asked again: the person declined cancel_order")


async def test_the_same_order_in_a_later_turn_is_asked_for_again() -> None:
    """Once a turn: a person who orders the same thing again later means it."""
    model = ScriptedModel([[order("anvil")], "Ordered.", [order("anvil")], "Ordered another."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy an anvil", "yes", "one more, please", "yes"]})
    await run_sessions(shop(), channel, model=model)
    assert ORDERS == ["anvil", "anvil"]


async def test_a_call_that_failed_may_be_tried_again() -> None:
    bad, good = tool_call("place_order", {"item": "anvil", "copies": "many"}), order("anvil")
    model = ScriptedModel([[bad], [good], "Done."])
    channel = ScriptedChannel.for_sessions({"s1": ["buy anvils", "yes"]})
    await run_sessions(shop(), channel, model=model)
    assert results(model, 1)[0].startswith("Error: invalid arguments for place_order")
    assert ORDERS == ["anvil"]
