"""Workers on the real single-threaded runtime: answers, parallelism, limits, failures, agent-as-tool."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from autogen_core import AgentId, CancellationToken, SingleThreadedAgentRuntime
from autogen_core.models import (
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import FunctionTool, Tool, ToolSchema

from handoffs_runtime import (
    AgentSpec,
    TeamPolicy,
    TeamSpec,
    build_team,
    register_team,
    start_session,
)
from handoffs_runtime.agents.worker import WorkerAgent, WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.messages import WorkerResult, WorkerTask
from handoffs_runtime.models.local import Reply, tool_call
from handoffs_runtime.models.scripted import FunctionModel, ScriptedModel
from handoffs_runtime.team.build import delegations
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.tools.context import current_tool_context
from handoffs_runtime.tools.workers import (
    WorkerError,
    WorkerLimits,
    ask_worker,
    worker_tools,
)
from handoffs_runtime.topics import agent_tool_name

from .support import run_sessions, texts


def _team(
    orchestrator: list[object] | None = None,
    worker_tools_: Sequence[object] = (),
    limits: WorkerLimits | None = None,
    *,
    worker_handoffs: Sequence[str] = (),
) -> TeamSpec:
    return TeamSpec(
        name="lab",
        entry="Boss",
        agents=[
            AgentSpec("Boss", tools=[*worker_tools("Worker", limits=limits), *(orchestrator or [])]),
            AgentSpec("Worker", tools=list(worker_tools_), kind="worker", handoffs=list(worker_handoffs)),  # type: ignore[arg-type]
        ],
    )


def _results(model: ScriptedModel | FunctionModel, call: int = -1) -> list[FunctionExecutionResult]:
    messages, _ = model.calls[call]
    last = messages[-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    return last.content


async def test_the_workers_answer_comes_back_as_the_tool_result() -> None:
    boss = ScriptedModel([[tool_call("create_worker", {"task_description": "compute 6*7"})], "It is 42."])
    worker = ScriptedModel(["42"])
    channel = ScriptedChannel.for_sessions({"s1": ["what is 6*7?"]})
    await run_sessions(_team(), channel, models={"Boss": boss, "Worker": worker})

    [result] = _results(boss)
    assert (result.name, result.content, bool(result.is_error)) == ("create_worker", "42", False)
    assert texts(channel) == [("Boss", "It is 42.")]  # the caller kept the conversation
    worker_messages, worker_tools_offered = worker.calls[0]
    assert [m.content for m in worker_messages if isinstance(m, UserMessage)] == ["compute 6*7"]
    assert worker_tools_offered == []
    boss.assert_done()
    worker.assert_done()


async def test_workers_run_in_parallel() -> None:
    barrier = asyncio.Barrier(3)

    async def meet() -> str:
        """Wait until all three workers are here at once."""
        async with asyncio.timeout(10):  # sequential workers would deadlock here; fail instead of hanging
            await barrier.wait()
        return "met"

    def worker_reply(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        task = next(m.content for m in messages if isinstance(m, UserMessage))
        if isinstance(messages[-1], FunctionExecutionResultMessage):
            return f"done {task}"
        return [tool_call("meet")]

    boss = ScriptedModel([[tool_call("create_workers", {"task_descriptions": ["a", "b", "c"]})], "All done."])
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    await run_sessions(
        _team(worker_tools_=[meet]), channel, models={"Boss": boss, "Worker": FunctionModel(worker_reply)}
    )

    [result] = _results(boss)
    assert result.content == "worker 1: done a\nworker 2: done b\nworker 3: done c"
    assert texts(channel) == [("Boss", "All done.")]


async def test_the_per_turn_worker_limit_refuses_extra_workers() -> None:
    calls = [tool_call("create_worker", {"task_description": f"task {i}"}) for i in range(3)]
    boss = ScriptedModel([calls, "ok", [tool_call("create_worker", {"task_description": "next turn"})], "ok"])
    worker = ScriptedModel(["one", "two", "three"])
    channel = ScriptedChannel.for_sessions({"s1": ["first", "second"]})
    team = _team(limits=WorkerLimits(max_workers_per_turn=2))
    await run_sessions(team, channel, models={"Boss": boss, "Worker": worker})

    first = _results(boss, 1)
    assert [r.content for r in first[:2]] == ["one", "two"]
    assert first[2].is_error and "worker limit reached: at most 2 workers per turn" in first[2].content
    [second] = _results(boss, 3)
    assert second.content == "three"  # the count starts again with the person's next message


async def test_create_workers_refuses_a_batch_over_the_limit_without_starting_any() -> None:
    boss = ScriptedModel([[tool_call("create_workers", {"task_descriptions": ["a", "b", "c"]})], "ok"])
    worker = ScriptedModel([])
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    await run_sessions(
        _team(limits=WorkerLimits(max_workers_per_turn=2)), channel, models={"Boss": boss, "Worker": worker}
    )
    [result] = _results(boss)
    assert result.is_error and "2 left" in result.content
    assert worker.calls == []


async def test_nesting_is_bounded_by_the_depth_limit() -> None:
    def worker_reply(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        task = next(m.content for m in messages if isinstance(m, UserMessage))
        last = messages[-1]
        if isinstance(last, FunctionExecutionResultMessage):
            return f"{task} <- {last.content[0].content}"
        return [tool_call("create_worker", {"task_description": f"sub of {task}"})]

    for depth, expected in (
        (1, "top <- Error: tool create_worker failed: WorkerError: nesting limit reached"),
        (2, "top <- sub of top <- Error: tool create_worker failed: WorkerError: nesting limit reached"),
    ):
        limits = WorkerLimits(max_depth=depth)
        boss = ScriptedModel([[tool_call("create_worker", {"task_description": "top"})], "ok"])
        channel = ScriptedChannel.for_sessions({"s1": ["go"]})
        team = _team(worker_tools_=worker_tools("Worker", limits=limits), limits=limits)
        await run_sessions(team, channel, models={"Boss": boss, "Worker": FunctionModel(worker_reply)})
        [result] = _results(boss)
        assert result.content.startswith(expected), result.content


async def test_a_worker_whose_model_fails_becomes_an_error_result_and_the_session_goes_on() -> None:
    boss = ScriptedModel(
        [[tool_call("create_worker", {"task_description": "x"})], "Sorry, that failed.", "Yes, still here."]
    )
    worker = ScriptedModel([RuntimeError("model is down")])
    channel = ScriptedChannel.for_sessions({"s1": ["go", "still there?"]})
    await run_sessions(_team(), channel, models={"Boss": boss, "Worker": worker})
    [result] = _results(boss, 1)
    assert result.is_error
    assert "Worker's model failed: RuntimeError: model is down" in result.content
    assert texts(channel) == [("Boss", "Sorry, that failed."), ("Boss", "Yes, still here.")]
    boss.assert_done()


async def test_a_worker_that_takes_too_long_is_stopped_and_reported() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def hang() -> str:
        """Never finishes on its own."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    boss = ScriptedModel([[tool_call("create_worker", {"task_description": "x"})], "It timed out."])
    worker = ScriptedModel([[tool_call("hang")]])
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    team = _team(worker_tools_=[hang], limits=WorkerLimits(timeout=0.3))
    await run_sessions(team, channel, models={"Boss": boss, "Worker": worker})

    [result] = _results(boss)
    assert result.is_error and "timed out after 0.3 s" in result.content
    assert started.is_set() and cancelled.is_set()  # the cancellation reached the worker's tool
    assert texts(channel) == [("Boss", "It timed out.")]


async def test_cancelling_the_callers_tool_call_cancels_the_worker() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()
    outcome: list[str] = []

    async def hang() -> str:
        """Never finishes on its own."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    async def delegate_then_cancel() -> str:
        """Start a worker, then cancel it as a stopped caller would."""
        token = CancellationToken()
        call = asyncio.ensure_future(ask_worker("Worker", "hang", cancellation_token=token))
        await started.wait()
        token.cancel()
        try:
            await call
        except (asyncio.CancelledError, WorkerError) as exc:
            outcome.append(type(exc).__name__)
        await cancelled.wait()
        return "cancelled"

    boss = ScriptedModel([[tool_call("delegate_then_cancel")], "ok"])
    worker = ScriptedModel([[tool_call("hang")]])
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    await run_sessions(
        _team(orchestrator=[delegate_then_cancel], worker_tools_=[hang]),
        channel,
        models={"Boss": boss, "Worker": worker},
    )
    assert cancelled.is_set()
    assert outcome == ["CancelledError"]
    assert _results(boss)[0].content == "cancelled"


async def test_ask_worker_outside_an_agent_says_why_it_cannot_run() -> None:
    with pytest.raises(WorkerError, match="only be created by a tool that an agent runs"):
        await ask_worker("Worker", "x")


def test_tools_that_delegate_to_a_missing_worker_are_rejected_when_the_team_is_built() -> None:
    team = TeamSpec(name="t", entry="Boss", agents=[AgentSpec("Boss", tools=worker_tools("Helper"))])
    with pytest.raises(
        TeamConfigError, match=r"sends tasks to 'Helper'.*AgentSpec\('Helper', kind='worker'\)"
    ):
        build_team(team)


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        (
            [AgentSpec("Boss", handoffs=["Worker"]), AgentSpec("Worker", kind="worker")],
            "offer it with agent_tools",
        ),
        ([AgentSpec("Boss"), AgentSpec("Worker", kind="worker", handoffs=["Boss"])], "takes no handoffs"),
        ([AgentSpec("Worker", kind="worker"), AgentSpec("Boss")], "is a worker; pick an ai agent"),
        ([AgentSpec("Boss", agent_tools=["Nobody"])], "agent_tools names 'Nobody'"),
        ([AgentSpec("Boss", agent_tools=["Boss"])], "agent_tools names 'Boss'"),
        (
            [AgentSpec("Boss", agent_tools=["Op"]), AgentSpec("Op", kind="human")],
            "'Op' is human, not a tool; hand off to it",
        ),
    ],
)
def test_bad_worker_and_agent_tool_configurations(agents: list[AgentSpec], message: str) -> None:
    entry = "Worker" if agents[0].name == "Worker" else "Boss"
    with pytest.raises(TeamConfigError, match=message):
        build_team(TeamSpec(name="t", entry=entry, agents=agents))


@pytest.mark.parametrize(("kwargs"), [{"max_workers_per_turn": 0}, {"max_depth": 0}, {"timeout": 0}])
def test_bad_limits_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(TeamConfigError):
        WorkerLimits(**kwargs)  # type: ignore[arg-type]


# --- agent as tool -----------------------------------------------------------------------------------


def _advice_team() -> TeamSpec:
    def price_of(item: str) -> str:
        """Look up the price of an item."""
        return f"{item}: $500"

    return TeamSpec(
        name="shop",
        entry="Front",
        agents=[
            AgentSpec(
                "Front",
                system_message="Talk to the customer.",
                agent_tools=["PriceExpert"],
                handoffs=["Desk"],
            ),
            AgentSpec("PriceExpert", description="Knows every price.", tools=[price_of], handoffs=["Front"]),
            AgentSpec("Desk", description="The help desk."),
        ],
    )


async def test_an_agent_offered_as_a_tool_answers_and_the_caller_keeps_control() -> None:
    front = ScriptedModel(
        [
            [tool_call("ask_price_expert", {"request": "price of rocket skates?"})],
            "Rocket skates are $500.",
            "You're welcome.",
        ]
    )
    expert = ScriptedModel([[tool_call("price_of", {"item": "rocket skates"})], "rocket skates: $500"])
    channel = ScriptedChannel.for_sessions({"s1": ["how much are rocket skates?", "thanks"]})
    await run_sessions(_advice_team(), channel, models={"Front": front, "PriceExpert": expert})

    [result] = _results(front, 1)
    assert (result.name, result.content) == ("ask_price_expert", "rocket skates: $500")
    assert texts(channel) == [("Front", "Rocket skates are $500."), ("Front", "You're welcome.")]
    assert channel.handoffs("s1") == []  # no handoff happened
    _, offered_to_front = front.calls[0]
    ask = next(t for t in offered_to_front if t["name"] == "ask_price_expert")
    assert "Knows every price." in ask["description"]
    _, offered_to_expert = expert.calls[0]
    assert [t["name"] for t in offered_to_expert] == ["price_of"]  # as a tool it has no handoffs
    front.assert_done()
    expert.assert_done()


def test_agent_tool_names_are_snake_case() -> None:
    assert agent_tool_name("PriceExpert") == "ask_price_expert"
    assert agent_tool_name("Issues and repairs") == "ask_issues_and_repairs"
    built = build_team(_advice_team())
    assert list(built["Front"].tools) == ["ask_price_expert"]


async def test_worker_addresses_are_slots_reused_from_turn_to_turn() -> None:
    seen: list[str] = []

    async def where_am_i() -> str:
        """Report this worker's address."""
        ctx = current_tool_context()
        assert ctx is not None and ctx.agent_id is not None
        seen.append(f"{ctx.agent_id.type}/{ctx.agent_id.key} depth {ctx.depth}")
        return "noted"

    def worker_reply(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        return "ok" if isinstance(messages[-1], FunctionExecutionResultMessage) else [tool_call("where_am_i")]

    two = [tool_call("create_worker", {"task_description": t}) for t in ("a", "b")]
    boss = ScriptedModel([two, "ok", [tool_call("create_worker", {"task_description": "c"})], "ok"])
    channel = ScriptedChannel.for_sessions({"s1": ["first", "second"]})
    team = _team(worker_tools_=[where_am_i])
    await run_sessions(team, channel, models={"Boss": boss, "Worker": FunctionModel(worker_reply)})
    assert seen == ["Worker/s1.1.1 depth 1", "Worker/s1.1.2 depth 1", "Worker/s1.1.1 depth 1"]


# --- the worker agent on its own ---------------------------------------------------------------------


async def _ask_directly(
    model: ScriptedModel, tools: Sequence[Tool], timeout: float | None = None
) -> WorkerResult:
    runtime = SingleThreadedAgentRuntime()
    config = WorkerAgentConfig(
        name="Solo",
        system_message=SystemMessage(content="Work."),
        model=model,
        tools={t.name: t for t in tools},
        policy=TeamPolicy(max_tool_rounds=2),
    )
    await WorkerAgent.register(runtime, "Solo", lambda: WorkerAgent(config))
    runtime.start()
    try:
        task = WorkerTask(session_id="s1", task="do it", caller="test", timeout=timeout)
        reply = await runtime.send_message(task, AgentId("Solo", "s1.1.1"))
    finally:
        await runtime.stop()
    assert isinstance(reply, WorkerResult)
    return reply


async def test_a_worker_stops_at_the_timeout_that_comes_with_its_task() -> None:
    cancelled = asyncio.Event()

    async def hang() -> str:
        """Never finishes on its own."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    reply = await _ask_directly(
        ScriptedModel([[tool_call("hang")]]), [FunctionTool(hang, "hang")], timeout=0.2
    )
    assert (reply.ok, reply.text) == (False, "Solo ran out of time (0.2 s)")
    assert cancelled.is_set()


async def test_a_worker_answers_unknown_tools_and_gives_up_after_its_tool_rounds() -> None:
    model = ScriptedModel([[tool_call("nope")], [tool_call("nope")]])
    reply = await _ask_directly(model, [])
    assert (reply.ok, reply.text) == (False, "Solo did not finish within 2 tool rounds")
    last = model.calls[-1][0][-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    assert last.content[0].content == "Error: there is no tool named 'nope'; available: none"


async def test_a_worker_with_an_empty_answer_reports_it() -> None:
    reply = await _ask_directly(ScriptedModel(["   "]), [])
    assert (reply.ok, reply.text) == (False, "empty answer")


async def test_a_worker_type_missing_from_the_runtime_is_an_error_result() -> None:
    boss = ScriptedModel([[tool_call("create_worker", {"task_description": "x"})], "no workers here"])
    channel = ScriptedChannel.for_sessions({"s1": ["go"]})
    runtime = SingleThreadedAgentRuntime()
    await register_team(
        runtime, _team(), model=boss, channel=channel, only=["Boss"]
    )  # Worker lives elsewhere
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    [result] = _results(boss)
    assert result.is_error and "is an agent of type 'Worker' registered" in result.content
    assert texts(channel) == [("Boss", "no workers here")]


def test_delegations_are_the_caller_keeps_control_edges_of_the_team() -> None:
    assert delegations(build_team(_advice_team())) == [("Front", "PriceExpert", "ask_price_expert")]
    assert delegations(build_team(orchestrator_team())) == [
        ("Orchestrator", "Worker", "create_worker"),
        ("Orchestrator", "Worker", "create_workers"),
    ]


async def test_ending_a_session_releases_the_workers_it_created() -> None:
    from handoffs_runtime import HandoffsRuntime
    from handoffs_runtime.runtime.release import live_sessions

    two = [tool_call("create_worker", {"task_description": t}) for t in ("a", "b")]
    boss = FunctionModel(
        lambda messages, tools: "done" if isinstance(messages[-1], FunctionExecutionResultMessage) else two
    )
    sessions = [f"s{i}" for i in range(5)]
    channel = ScriptedChannel.for_sessions({s: ["split this"] for s in sessions})
    runtime = HandoffsRuntime()
    await register_team(
        runtime, _team(), model=boss, channel=channel, models={"Worker": ScriptedModel(["w"] * 10)}
    )
    runtime.start()
    for s in sessions:
        await start_session(runtime, s)
    await runtime.stop_when_idle()
    assert [texts(channel, s) for s in sessions] == [[("Boss", "done")]] * 5
    assert live_sessions(runtime) == set()
    assert runtime._instantiated_agents == {}
