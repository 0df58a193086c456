"""A session's workflow on a real dev server, its worker in this process: the idle end and the resume
from the store, a client's retry answered once, and a long session's history (continue-as-new)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the temporal extra is not installed: pip install -e '.[temporal]'")
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, RequestUsage, UserMessage
from autogen_core.tools import ToolSchema
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowExecutionStatus

from handoffs_runtime.agents.ai import MODEL_PROBLEM_NOTICE
from handoffs_runtime.durable.fenced import open_state, record_said
from handoffs_runtime.durable.step import AgentSteps, StepRequest
from handoffs_runtime.durable.temporal import Cluster, TemporalSessions, connect, run_worker
from handoffs_runtime.models.deadline import SLOW_MODEL_REPLY
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.sessions.effects import ledger_of
from handoffs_runtime.sessions.open import open_store
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.sessions.transcript import stored_usage
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.teams.acme import ITEM_ID, acme_team
from handoffs_runtime.usage import BUDGET_REPLY
from tests.temporal_effect_team import ASK, CONFIRM, EFFECTS_FILE, ORDERED
from tests.temporal_effect_team import team as effect_team
from tests.temporal_support import DevServer, dev_server

HISTORY_BYTES_PER_TURN = 6 * 1024
"""The workflow history a turn may add: the conversation is passed by reference, so a turn costs its
events and small values, whatever the conversation's length (inline it grows with every turn)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevServer]:
    # The server suggests a continue-as-new after 300 events (4 Ki by default): a 60-turn session crosses it.
    yield from dev_server(tmp_path, dynamic=["limit.historyCount.suggestContinueAsNew=300"])


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SessionStore]:
    opened = open_store(str(tmp_path / "sessions.sqlite3"))
    yield opened
    await opened.close()


@asynccontextmanager
async def serving(
    server: DevServer, store: SessionStore, model: ChatCompletionClient, *, team: TeamSpec | None = None
) -> AsyncIterator[Client]:
    """A worker of every agent type and the workflows, in this process, on ``model``."""
    cluster = Cluster(server.address)
    ready, stop = asyncio.Event(), asyncio.Event()
    served = team or acme_team()
    worker = asyncio.create_task(
        run_worker(cluster, served, store=store, model=model, workflows=True, ready=ready, stop=stop)
    )
    await asyncio.wait_for(ready.wait(), 30)
    try:
        yield await connect(cluster)
    finally:
        stop.set()
        await asyncio.wait_for(worker, 30)


@pytest.fixture
async def client(server: DevServer, store: SessionStore) -> AsyncIterator[Client]:
    async with serving(server, store, OfflineModel()) as connected:
        yield connected


async def test_a_message_after_the_idle_end_resumes_the_session_from_the_store(
    client: Client, store: SessionStore
) -> None:
    sessions = TemporalSessions(client, idle_seconds=1)
    first = await sessions.say("idle1", "I want a refund for my shoes")
    assert first.agent == "IssuesAndRepairsAgent"
    handle = client.get_workflow_handle("idle1")
    first_run = (await handle.describe()).run_id
    for _ in range(200):  # the idle timer ends the workflow (bounded: 20 s)
        if (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED:
            break
        await asyncio.sleep(0.1)
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    second = await sessions.say("idle1", "yes")
    # A new workflow, started from the store: the repairs agent still holds the conversation.
    assert (await client.get_workflow_handle("idle1").describe()).run_id != first_run
    assert second.lines == [f"ACME repairs › Done: look up item → {ITEM_ID}; execute refund → success."]
    assert second.agent == "IssuesAndRepairsAgent"
    said = [e.text for e in await store.entries("idle1") if e.kind == "user"]
    assert said == ["I want a refund for my shoes", "yes"]


async def test_a_message_sent_again_with_its_id_is_answered_once(client: Client, store: SessionStore) -> None:
    sessions = TemporalSessions(client)
    first = await sessions.say("retry1", "I want a refund for my shoes", message_id="m1")
    again = await sessions.say("retry1", "I want a refund for my shoes", message_id="m1")
    assert again == first
    entries = await store.entries("retry1")
    assert [e.text for e in entries if e.kind == "user"] == ["I want a refund for my shoes"]
    assert len([e for e in entries if e.kind == "reply"]) == 1


async def test_a_60_turn_session_keeps_its_history_small_and_its_context_over_continue_as_new(
    client: Client, store: SessionStore
) -> None:
    sessions = TemporalSessions(client)
    words = [f"I want a refund for my shoes, number {n}" if n % 2 == 0 else "no" for n in range(60)]
    for text in words:
        answered = await sessions.say("long1", text)
        assert answered.lines, text
    runs = [r async for r in client.list_workflows("WorkflowId = 'long1'")]
    assert len(runs) >= 2, "the server's suggestion should have continued the workflow as new"
    total = 0
    for run in runs:
        history = await client.get_workflow_handle("long1", run_id=run.run_id).fetch_history()
        total += History(events=history.events).ByteSize()
    per_turn = total / len(words)
    print(f"history: {per_turn:.0f} bytes per turn over {len(runs)} runs")
    assert per_turn < HISTORY_BYTES_PER_TURN, f"{per_turn:.0f} bytes of history per turn"
    # The context survived every continue-as-new: every message is in it, in order, once.
    state = await store.get_session("long1")
    in_context = [m.content for m in state.context if isinstance(m, UserMessage)]
    assert in_context == words
    assert [e.text for e in await store.entries("long1") if e.kind == "user"] == words


async def test_a_transient_model_failure_is_tried_again_and_a_permanent_one_is_not(
    server: DevServer, store: SessionStore
) -> None:
    calls: list[str] = []

    def respond(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        said = str(messages[-1].content)
        calls.append(said)
        if said == "flaky" and calls.count(said) <= 2:
            raise TimeoutError("the model is slow right now")  # transient: the apology fits
        if said == "always slow":
            raise TimeoutError("the model is slow right now")
        if said == "broken":
            raise ValueError("the answer is not JSON")  # permanent: explained at once
        return f"answered {said}"

    async with serving(server, store, FunctionModel(respond)) as client:
        sessions = TemporalSessions(client)
        flaky = await sessions.say("fail1", "flaky")
        broken = await sessions.say("fail1", "broken")
        slow = await sessions.say("fail1", "always slow")
    assert flaky.lines == ["ACME assistant › answered flaky"]
    assert calls.count("flaky") == 3  # two failures tried again, then the answer
    assert calls.count("broken") == 1
    assert broken.lines[0] == MODEL_PROBLEM_NOTICE  # as the console shows it, then the reply
    assert broken.lines[1].startswith(
        "ACME assistant › Sorry, I can't answer: the language model's answer could not"
    )
    assert calls.count("always slow") == 4  # the step's every try; the last one's apology is the answer
    assert slow.lines == [f"ACME assistant › {SLOW_MODEL_REPLY}"]
    replies = [e.text for e in await store.entries("fail1") if e.kind == "reply"]
    assert len(replies) == 3  # one stored answer per message, whatever the tries


async def test_a_step_tried_again_after_its_question_does_not_repeat_the_effect_before_it(
    server: DevServer, store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    happened = tmp_path / "effects.txt"
    monkeypatch.setenv(EFFECTS_FILE, str(happened))
    async with serving(server, store, OfflineModel(), team=effect_team) as client:
        sessions = TemporalSessions(client)
        answered = await sessions.say("voucher1", "buy an anvil for 30 dollars")
        assert answered.lines[-1] == f"ACME sales › {ASK}"
        asked = await sessions.say("voucher1", "yes")  # the voucher is sent, then the order asks
        assert asked.question == CONFIRM
        confirmed = await sessions.say("voucher1", "y")  # the step runs again, with the answer
    assert confirmed.lines[-1] == f"ACME sales › {ORDERED}"
    ledger = ledger_of(store)
    assert ledger is not None
    effects = {e.key.tool: e for e in await ledger.effects("voucher1")}
    assert sorted(effects) == ["place_order", "send_voucher"]
    assert [e.status for e in effects.values()] == ["done", "done"]
    lines = [f"voucher1 {tool} {effects[tool].key.id}" for tool in ["send_voucher", "place_order"]]
    assert happened.read_text().splitlines() == lines


class _Counted(FunctionModel):
    """A model that reports 100 tokens read and 10 written per call."""

    async def create(self, messages: Sequence[LLMMessage], **options: Any) -> CreateResult:
        result = await super().create(messages, **options)
        return result.model_copy(update={"usage": RequestUsage(prompt_tokens=100, completion_tokens=10)})


async def test_the_token_budget_counts_every_step_of_the_session(
    server: DevServer, store: SessionStore
) -> None:
    team = acme_team()
    team = replace(team, policy=replace(team.policy, token_budget=250))
    model = _Counted(lambda messages, tools: f"answered {messages[-1].content}")
    async with serving(server, store, model, team=team) as client:
        sessions = TemporalSessions(client)
        answers = [await sessions.say("budget1", f"question {n}") for n in range(4)]
    assert [a.lines for a in answers[:3]] == [[f"ACME assistant › answered question {n}"] for n in range(3)]
    assert answers[3].lines == [f"ACME assistant › {BUDGET_REPLY}"]  # 330 tokens spent: over 250
    assert stored_usage(await store.entries("budget1")).total == 330


async def test_a_worker_frees_each_sessions_agents_after_its_step_and_logs_no_question_as_an_error(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    team = acme_team()
    steps = await AgentSteps.start(team, store=store, model=OfflineModel(), agents=["SalesAgent"])
    try:
        for n in range(20):
            session = f"mem{n}"
            opened = await open_state(store, session, entry_agent="SalesAgent", team=team.name)
            seq = await record_said(
                store, session, "buy an anvil for 30 dollars", agent="SalesAgent", expected_seq=opened.seq
            )
            offered = await steps.run(StepRequest(session, "SalesAgent", seq))
            assert offered.kind == "reply"
            seq = await record_said(store, session, "yes", agent="SalesAgent", expected_seq=offered.seq)
            asked = await steps.run(StepRequest(session, "SalesAgent", seq))
            assert asked.kind == "question"  # the order's confirmation ended the step
        assert steps.live_sessions() == set()  # no agent instance outlives its step
    finally:
        await steps.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []  # a question is how a step ends, not an error


async def test_a_client_reads_the_question_a_running_workflow_keeps_for_a_person(client: Client) -> None:
    sessions = TemporalSessions(client)
    assert await sessions.waiting("asks1") is None  # no workflow yet
    asked = await sessions.say("asks1", "let me talk to a person")
    assert asked.person == "operator"
    pending = await sessions.waiting("asks1")
    assert pending is not None
    assert (pending.agent, pending.person, pending.prompt) == ("HumanAgent", "operator", asked.question)


async def test_a_question_waiting_for_its_person_outlasts_the_idle_end(
    client: Client, store: SessionStore
) -> None:
    sessions = TemporalSessions(client, idle_seconds=1)
    await sessions.say("asks2", "I want to buy an anvil")
    offered = await sessions.say("asks2", "buy an anvil for 30 dollars")
    assert offered.agent == "SalesAgent"
    asked = await sessions.say("asks2", "yes")
    assert asked.question == "Order summary: anvil for $30. Confirm order? y/n"
    handle = client.get_workflow_handle("asks2")
    run_id = (await handle.describe()).run_id
    await asyncio.sleep(3)  # three idle periods: the workflow keeps the question
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    confirmed = await sessions.say("asks2", "y")
    assert confirmed.lines[-1] == "ACME sales › Done: execute order → Success."
    assert (await client.get_workflow_handle("asks2").describe()).run_id == run_id
