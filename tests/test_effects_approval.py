"""An operator's approval of an irreversible call is void once its turn is over: the person wrote again
(from another front end, after their turn was given up) while the operator was deciding. Real store, real
runtime, scripted model; over the web, see ``test_effects_web``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from autogen_core.models import FunctionExecutionResultMessage, UserMessage

from handoffs_runtime import AgentSpec, TeamPolicy, TeamSpec, irreversible, requires_approval, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.messages import Notice, Person
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import entry_for_message

from .support import run_sessions

ORDERS: list[str] = []


async def place_order(item: str) -> str:
    """Place an order."""
    ORDERS.append(item)
    return f"Ordered {item}."


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteSessionStore]:
    ORDERS.clear()
    opened = await asyncio.to_thread(SQLiteSessionStore, tmp_path / "s.sqlite3")
    yield opened
    await opened.close()


@dataclass
class OperatorAnswers(ScriptedChannel):
    """The customer's script; the operator says ``approval`` to each approval, and ``meanwhile`` the
    person's next message reaches the store first (when given)."""

    store: SQLiteSessionStore | None = None
    meanwhile: str | None = None
    approval: str = "yes"
    approvals: list[str] = field(default_factory=list)

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        if person != "operator":
            return await super().ask(session_id, prompt, person=person)
        self.approvals.append(prompt)
        if self.store is not None and self.meanwhile is not None:
            await self.store.append(
                session_id, [entry_for_message(UserMessage(content=self.meanwhile, source="user"))]
            )
        return self.approval


def shop() -> TeamSpec:
    tool = requires_approval(irreversible(place_order), person="operator", max_age=60)
    return TeamSpec(name="shop", entry="Shop", agents=[AgentSpec("Shop", tools=[tool])])


async def run(store: SQLiteSessionStore, channel: OperatorAnswers) -> str:
    """One turn that orders an anvil; returns the tool's result as the model read it."""
    model = ScriptedModel([[tool_call("place_order", {"item": "anvil"})], "Done."])
    await run_sessions(shop(), channel, model=model, store=store)
    message = model.calls[1][0][-1]
    assert isinstance(message, FunctionExecutionResultMessage) and channel.approvals
    return message.content[0].content


async def test_an_approval_after_the_person_wrote_again_does_not_run_the_tool(
    store: SQLiteSessionStore,
) -> None:
    channel = OperatorAnswers(customer={"s1": ["buy an anvil"]}, store=store, meanwhile="hello? anyone?")
    result = await run(store, channel)
    assert ORDERS == []
    assert result.startswith("Refused: place_order was not run: the operator's approval came when the person")
    told = [e.text for e in channel.shown["s1"] if isinstance(e, Notice)]
    assert any("A request was not carried out" in text and "turn was over" in text for text in told)


async def test_an_approval_within_its_turn_runs_the_tool(store: SQLiteSessionStore) -> None:
    result = await run(store, OperatorAnswers(customer={"s1": ["buy an anvil"]}, store=store))
    assert ORDERS == ["anvil"] and result == "Ordered anvil."


def test_an_approval_age_must_be_positive() -> None:
    with pytest.raises(TeamConfigError, match="max_age must be a positive number"):
        requires_approval(place_order, person="operator", max_age=0)
    with pytest.raises(TeamConfigError, match="approval_max_age"):
        TeamPolicy(approval_max_age=-1)
