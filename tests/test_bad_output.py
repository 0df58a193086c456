"""A model's bad output never ends a session: each case becomes a tool result or a clear message."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from autogen_core.models import FunctionExecutionResult, FunctionExecutionResultMessage, LLMMessage

from handoffs_runtime import AgentSpec, TeamPolicy, TeamSpec, current_model_call, tool_call
from handoffs_runtime.agents.ai import EMPTY_REPLY, MODEL_ERROR_REPLY, TOO_MANY_ROUNDS_REPLY
from handoffs_runtime.agents.replies import MAX_CALLS_PER_RESPONSE
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.deadline import SLOW_MODEL_REPLY
from handoffs_runtime.models.scripted import ScriptedModel

from .support import run_sessions, texts


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def team(policy: TeamPolicy | None = None) -> TeamSpec:
    return TeamSpec(
        name="t",
        entry="Front",
        policy=policy or TeamPolicy(),
        agents=[
            AgentSpec("Front", tools=[add, explode], handoffs=["Back", "Other"]),
            AgentSpec("Back", description="The back office.", handoffs=["Front"]),
            AgentSpec("Other", description="Somebody else."),
        ],
    )


def last_results(messages: Sequence[LLMMessage]) -> list[FunctionExecutionResult]:
    last = messages[-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    return last.content


async def run_front(front: ScriptedModel, *, lines: int = 1, **models: ScriptedModel) -> ScriptedChannel:
    channel = ScriptedChannel.for_sessions({"s1": [f"message {i}" for i in range(lines)]})
    await run_sessions(team(), channel, models={"Front": front, **models})
    return channel


async def test_call_to_a_tool_that_was_not_offered() -> None:
    front = ScriptedModel([[tool_call("delete_database")], "recovered"])
    channel = await run_front(front)
    [result] = last_results(front.calls[1][0])
    assert result.is_error and "no tool named 'delete_database'" in result.content and "add" in result.content
    assert texts(channel) == [("Front", "recovered")]


async def test_invalid_json_arguments() -> None:
    front = ScriptedModel([[tool_call("add", '{"a": 1, "b": ')], "recovered"])
    await run_front(front)
    [result] = last_results(front.calls[1][0])
    assert result.is_error and "not valid JSON" in result.content


async def test_arguments_that_are_not_an_object() -> None:
    front = ScriptedModel([[tool_call("add", "[1, 2]")], "recovered"])
    await run_front(front)
    [result] = last_results(front.calls[1][0])
    assert result.is_error and "must be a JSON object" in result.content


async def test_arguments_of_the_wrong_type_name_the_field() -> None:
    front = ScriptedModel(
        [[tool_call("add", {"a": "one", "b": 2})], [tool_call("add", {"a": 1, "b": 2})], "3"]
    )
    channel = await run_front(front)
    [bad] = last_results(front.calls[1][0])
    assert bad.is_error and "a:" in bad.content and "integer" in bad.content
    [good] = last_results(front.calls[2][0])
    assert (good.content, good.is_error) == ("3", None)
    assert texts(channel) == [("Front", "3")]


async def test_tool_that_raises_becomes_an_error_result() -> None:
    front = ScriptedModel([[tool_call("explode", {"reason": "test"})], "sorry"])
    channel = await run_front(front)
    [result] = last_results(front.calls[1][0])
    assert result.is_error and "RuntimeError: boom: test" in result.content
    assert texts(channel) == [("Front", "sorry")]


async def test_several_handoffs_first_wins_and_every_call_has_a_result() -> None:
    front = ScriptedModel(
        [[tool_call("transfer_to_back", call_id="c1"), tool_call("transfer_to_other", call_id="c2")]]
    )
    back = ScriptedModel(["back here"])
    channel = await run_front(front, Back=back)
    assert texts(channel) == [("Back", "back here")]
    forwarded = back.calls[0][0]
    results = {r.call_id: r for r in last_results(forwarded)}
    assert set(results) == {"c1", "c2"}
    assert not results["c1"].is_error and "Transferred to Back" in results["c1"].content
    assert results["c2"].is_error and "ignored" in results["c2"].content
    assert [(e.target, e.outcome) for e in channel.handoffs("s1")] == [
        ("Other", "refused"),
        ("Back", "handoff"),
    ]


async def test_five_thousand_handoff_calls_are_one_refused_line() -> None:
    calls = [tool_call("transfer_to_back" if i % 2 else "transfer_to_other") for i in range(5000)]
    front, other = ScriptedModel([calls]), ScriptedModel(["other here"])
    channel = await run_front(front, Other=other)
    assert texts(channel) == [("Other", "other here")]
    assert len(last_results(other.calls[0][0])) == 5000  # the model still gets a result for each call
    [ignored, carried_out] = channel.handoffs("s1")
    assert (ignored.target, ignored.outcome) == ("Back", "refused")
    ignored_calls = MAX_CALLS_PER_RESPONSE - 1  # the calls past the cap are refused without a decision
    assert (
        ignored.reason
        == f"ignored: only one handoff per response is carried out ({ignored_calls} calls ignored)"
    )
    assert (carried_out.target, carried_out.outcome) == ("Other", "handoff")


async def test_handoff_with_regular_tools_runs_the_tools_first() -> None:
    front = ScriptedModel(
        [[tool_call("transfer_to_back", call_id="h"), tool_call("add", {"a": 2, "b": 2}, call_id="t")]]
    )
    back = ScriptedModel(["the sum was 4"])
    channel = await run_front(front, Back=back)
    results = {r.call_id: r.content for r in last_results(back.calls[0][0])}
    assert results == {"h": "Transferred to Back. Adopt persona immediately.", "t": "4"}
    assert texts(channel) == [("Back", "the sum was 4")]


async def test_empty_reply_becomes_a_clear_message_and_the_session_goes_on() -> None:
    front = ScriptedModel(["   ", "", "second answer"])  # empty, and empty again when asked in words
    channel = await run_front(front, lines=2)
    assert texts(channel) == [("Front", EMPTY_REPLY), ("Front", "second answer")]


async def test_empty_tool_call_list_is_treated_as_an_empty_reply() -> None:
    front = ScriptedModel([[], []])
    channel = await run_front(front)
    assert texts(channel) == [("Front", EMPTY_REPLY)]


async def test_model_error_apologises_and_the_session_goes_on() -> None:
    front = ScriptedModel([RuntimeError("model failed"), "I'm back"])
    channel = await run_front(front, lines=2)
    assert texts(channel) == [("Front", MODEL_ERROR_REPLY), ("Front", "I'm back")]


async def test_tool_rounds_are_bounded_per_turn() -> None:
    policy = TeamPolicy(max_tool_rounds=3)
    front = ScriptedModel([[tool_call("add", {"a": 1, "b": 1})]] * 3 + ["next turn works"])
    channel = ScriptedChannel.for_sessions({"s1": ["loop forever", "again"]})
    await run_sessions(team(policy), channel, models={"Front": front})
    assert texts(channel) == [("Front", TOO_MANY_ROUNDS_REPLY), ("Front", "next turn works")]
    front.assert_done()


async def test_repeated_call_ids_keep_every_result() -> None:
    front = ScriptedModel(
        [[tool_call("add", {"a": 1, "b": 2}, call_id="x"), tool_call("transfer_to_back", call_id="x")]]
    )
    back = ScriptedModel(["ok"])
    await run_front(front, Back=back)
    contents = [r.content for r in last_results(back.calls[0][0])]
    assert contents == ["3", "Transferred to Back. Adopt persona immediately."]


async def test_handoff_with_invalid_json_is_refused_with_an_event() -> None:
    front = ScriptedModel([[tool_call("transfer_to_back", "{oops")], "staying here"])
    channel = await run_front(front)
    [result] = last_results(front.calls[1][0])
    assert result.is_error and "not valid JSON" in result.content
    assert [(e.target, e.outcome) for e in channel.handoffs("s1")] == [("Back", "refused")]
    assert texts(channel) == [("Front", "staying here")]


async def test_a_hanging_model_times_out_into_an_apology() -> None:
    class Hanging(ScriptedModel):
        answers_promptly = False

        async def create(self, *args: object, **kwargs: object) -> Any:  # type: ignore[override]
            await asyncio.sleep(3600)

    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    await run_sessions(team(TeamPolicy(model_timeout=0.05)), channel, models={"Front": Hanging([])})
    assert texts(channel) == [("Front", SLOW_MODEL_REPLY)]  # the truth: the model is slow


async def test_a_model_whose_create_raises_before_any_await_or_returns_no_awaitable_gets_an_apology() -> None:
    """The loop calls the model outside a coroutine of its own (one frame fewer per session waiting): a
    client whose ``create`` raises at once, or hands back something that cannot be awaited, still ends
    the turn in an apology, with the call's scope set while it ran, and the session goes on."""
    seen: list[Any] = []

    class RaisesAtOnce(ScriptedModel):
        def create(self, *args: object, **kwargs: object) -> Any:  # type: ignore[override]
            seen.append(current_model_call())
            raise RuntimeError("refused before any await")

    class NotAwaitable(ScriptedModel):
        def create(self, *args: object, **kwargs: object) -> Any:  # type: ignore[override]
            return "a string, not a coroutine"

    for model in (RaisesAtOnce([]), NotAwaitable([])):
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "again"]})
        await run_sessions(team(), channel, models={"Front": model})
        assert texts(channel) == [("Front", MODEL_ERROR_REPLY), ("Front", MODEL_ERROR_REPLY)]
    assert [(call.agent, call.session_id) for call in seen] == [("Front", "s1"), ("Front", "s1")]
    assert current_model_call() is None
