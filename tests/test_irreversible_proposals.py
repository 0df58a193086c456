"""Issue 35: any model's proposal of a call that asks first (an irreversible tool, an approval) is checked
against the tool's types before the person is asked. A wrong type, a missing argument or one the tool
does not take never reaches the person: the model is told which argument is wrong, nothing is recorded
in the effect ledger and nothing runs; a proposal that fits is asked as before. The airline team is one
this project never saw; the model is scripted."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from autogen_core import CancellationToken

from handoffs_runtime import TeamSpec, irreversible, requires_approval, tool_call
from handoffs_runtime.agents.progress import REPEAT_NOTE
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.effects import ledger_of
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.tools.schema import SchemaTool

from . import airline_team
from .airline_team import BOOKINGS
from .support import questions, results, run_sessions, texts

ASKED = "Could you move booking SKY456 to the 20th of December?"


@pytest.fixture(autouse=True)
def _nothing_done() -> Iterator[None]:
    airline_team.done.clear()
    yield
    airline_team.done.clear()


def bookings_first(*, approved: bool = False) -> TeamSpec:
    """The airline team, met at its bookings desk; with ``approved``, each of its calls asks the customer
    first (as ``requires_approval`` in the team file, or the operator's approval on the web)."""
    team = airline_team.airline_team()
    agents = [
        replace(a, tools=[requires_approval(t) for t in a.tools]) if a.name == BOOKINGS and approved else a
        for a in team.agents
    ]
    return replace(team, entry=BOOKINGS, agents=agents)


def change(**arguments: object) -> list[object]:
    return [tool_call("change_flight", arguments)]


async def test_an_argument_the_tool_does_not_take_is_not_put_to_the_person() -> None:
    """pydantic drops an unknown argument without a word: the person would confirm a seat that the call
    never sends. The model is told; its corrected proposal is the one the person is asked about."""
    extra = change(booking_ref="SKY456", new_date="20 December", seat="12A")
    fits = change(booking_ref="SKY456", new_date="20 December")
    model = ScriptedModel([extra, fits, "Done: SKY456 now flies on 20 December."])  # type: ignore[list-item]
    channel = ScriptedChannel.for_sessions({"s1": [ASKED, "yes"]})
    await run_sessions(bookings_first(approved=True), channel, model=model)
    assert questions(channel) == ['Allow change_flight(booking_ref="SKY456", new_date="20 December")? y/n']
    [refused] = results(model, 1)
    assert refused.startswith("Error: invalid arguments for change_flight: seat: change_flight takes no "
                              "such argument (it takes booking_ref, new_date)")  # fmt: skip
    assert "It was not put to the person and nothing was done" in refused
    assert airline_team.done == [("change_flight", {"booking_ref": "SKY456", "new_date": "20 December"})]
    assert texts(channel) == [(BOOKINGS, "Done: SKY456 now flies on 20 December.")]


@pytest.mark.parametrize(
    ("proposal", "named"),
    [
        ({"booking_ref": 123, "new_date": None}, ["booking_ref: Input should be a valid string", "new_date"]),
        ({"booking_ref": "SKY456"}, ["new_date: Field required"]),
    ],
    ids=["wrong-types", "missing"],
)
async def test_a_proposal_that_does_not_fit_is_told_to_the_model_and_nothing_is_recorded(
    tmp_path: Path, proposal: dict[str, object], named: list[str]
) -> None:
    """With a store that keeps the effect ledger: no intent is recorded for a call that cannot run, so
    nothing about it is ever put to the person (not even "it may already have happened")."""
    bad = change(**proposal)
    model = ScriptedModel([bad, bad, "Which date would you like to fly on instead?"])  # type: ignore[list-item]
    channel = ScriptedChannel.for_sessions({"s1": ["I want to change my flight"]})
    store = SQLiteSessionStore(tmp_path / "s.sqlite3")
    try:
        await run_sessions(bookings_first(), channel, model=model, store=store)
        ledger = ledger_of(store)
        assert ledger is not None
        assert await ledger.effects("s1") == []  # nothing recorded: nothing started
    finally:
        await store.close()
    [refused] = results(model, 1)
    assert refused.startswith("Error: invalid arguments for change_flight: ")
    assert "It was not put to the person and nothing was done" in refused
    assert all(name in refused for name in named), refused
    [again] = results(model, 2)  # the same proposal again: answered from memory, a failed call repeated
    assert again.startswith(refused) and REPEAT_NOTE.format(name="change_flight") in again
    assert questions(channel) == [] and airline_team.done == []
    assert texts(channel) == [(BOOKINGS, "Which date would you like to fly on instead?")]


class RemoteChange(SchemaTool):
    """A tool another vendor describes only by its JSON schema (as an MCP server's is): its argument
    type accepts anything, so only the schema can say a proposal is wrong."""

    def __init__(self) -> None:
        schema = {
            "type": "object",
            "properties": {"booking_ref": {"type": "string"}, "new_date": {"type": "string"}},
            "required": ["booking_ref", "new_date"],
        }
        super().__init__("change_flight", "Move a booking to another date.", schema)
        self.ran: list[Mapping[str, Any]] = []

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        self.ran.append(args)
        return "changed"


async def test_a_tool_known_only_by_its_schema_is_checked_against_the_schema() -> None:
    remote = RemoteChange()
    tool = requires_approval(irreversible(remote))
    team = bookings_first()
    agents = [replace(a, tools=[tool]) if a.name == BOOKINGS else a for a in team.agents]
    model = ScriptedModel([change(booking_ref=456, when="tomorrow"), "Which booking, and which date?"])  # type: ignore[list-item]
    channel = ScriptedChannel.for_sessions({"s1": ["change my flight"]})
    await run_sessions(replace(team, agents=agents), channel, model=model)
    [refused] = results(model, 1)
    for problem in ("when: change_flight takes no such argument", "new_date: Field required",
                    "booking_ref: Input should be string"):  # fmt: skip
        assert problem in refused, refused
    assert questions(channel) == [] and remote.ran == []
