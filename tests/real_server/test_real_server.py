"""The project against a real OpenAI-compatible server nobody here wrote (llama-cpp-python's, SmolLM2-135M).

Protocol properties, not routing quality: a 135M model routes badly, so a handoff is asked for with a few
scripted first messages and one is enough. What must hold on every run: the server refuses nothing the
project sends (bar what a test provokes, and the one refusal the ``auto`` content mode learns from),
tool calls are parsed and a handoff call is carried out, usage is recorded, and each failure is said as
what it is.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

from handoffs_runtime import AgentSpec, SQLiteSessionStore, TeamPolicy, TeamSpec, handoff, openai_model
from handoffs_runtime.agents.ai import EMPTY_REPLY, MODEL_ERROR_REPLY
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.trim import is_trimmed
from handoffs_runtime.agents.turn import Replied
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.capabilities import set_capabilities
from handoffs_runtime.models.failures import explain_model_error
from handoffs_runtime.tools.context import ToolContext

from ..cli_support import run_handoffs
from ..support import run_sessions
from .conftest import CONTEXT_TOKENS, RealServer

pytestmark = pytest.mark.real_server

FIRST_MESSAGES = (
    "Transfer me to sales please, I want to buy rocket skates.",
    "I want to buy something.",
    "My anvil arrived broken and I want a refund.",
    "Please transfer me to issues and repairs.",
)
"""Tried in order until the model answers one with a handoff call."""
HANDED = "has joined"
LEARNT_EMPTY_CONTENT = "sending null content from now on"
MODEL_SECONDS = 600.0
"""One CPU thread: a long reply of the small model takes minutes; the suite checks protocol, not speed."""


def _chat(
    server: RealServer, first: str, store: Path, session: str, *options: str
) -> subprocess.CompletedProcess[str]:
    return run_handoffs(
        "chat", "--model", "smollm2", "--base-url", server.url, "--model-timeout", f"{MODEL_SECONDS:g}",
        "--no-colour", "-v", "--store", str(store), "--session", session, *options,
        stdin=f"{first}\n", timeout=4 * MODEL_SECONDS,
    )  # fmt: skip


async def _usage(store_path: Path, session: str) -> int:
    store = SQLiteSessionStore(str(store_path))
    try:
        replies = [e for e in await store.entries(session) if e.kind == "reply"]
    finally:
        await store.close()
    return sum(sum(counts) for e in replies for counts in (e.body.get("usage") or {}).values())


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "plain"])
async def test_handoffs_chat_carries_out_a_handoff_and_the_server_refuses_nothing(
    real_server: RealServer, tmp_path: Path, stream: bool
) -> None:
    mark = real_server.mark()
    store = tmp_path / "sessions.sqlite3"
    runs: list[subprocess.CompletedProcess[str]] = []
    for i, first in enumerate(FIRST_MESSAGES):
        result = _chat(real_server, first, store, f"s{i}", *([] if stream else ["--no-stream"]))
        runs.append(result)
        assert result.returncode == 0, result.stderr[-3000:]
        # Every answer parsed, nothing failed: no apology, no explained failure.
        assert MODEL_ERROR_REPLY not in result.stdout and "I can't answer" not in result.stdout, result.stdout
        if HANDED in result.stdout:
            break
    else:
        pytest.fail("no handoff in any first message:\n" + "\n---\n".join(r.stdout for r in runs))
    assert await _usage(store, f"s{len(runs) - 1}") > 0  # a handoff call is always made without streaming
    # Nothing refused ("" content is sent from the start; a refusal of it would be learnt, logged with -v).
    learnt = sum(r.stderr.count(LEARNT_EMPTY_CONTENT) for r in runs)
    refused = real_server.refused(mark)
    assert len(refused) == learnt <= len(runs), refused
    assert all(status == 500 for _, status in refused)


def _two_desks(stream: bool) -> TeamSpec:
    """A team of one's own: a front desk that passes billing questions on."""
    to_billing = handoff("Billing", tool_description_override="Use for bills, invoices, payments, refunds.")
    return TeamSpec(
        name="desks",
        entry="FrontDesk",
        agents=[
            AgentSpec("FrontDesk", system_message="You greet customers of a bank.", handoffs=[to_billing]),
            AgentSpec("Billing", system_message="You answer questions about bills in one sentence."),
        ],
        policy=TeamPolicy(stream=stream),
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_team_of_ones_own_through_the_library(
    real_server: RealServer, tmp_path: Path, stream: bool
) -> None:
    mark = real_server.mark()
    model = openai_model(
        "smollm2", base_url=real_server.url, timeout=MODEL_SECONDS, tool_call_content="empty"
    )
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    firsts = ["Transfer me to billing, I have a question about my bill.", "I want a refund of a payment."]
    channel = ScriptedChannel.for_sessions({f"s{i}": [m] for i, m in enumerate(firsts)})
    team = _two_desks(stream)
    handed = False
    for i in range(len(firsts)):  # one session at a time: the server answers one call at a time anyway
        await run_sessions(team, channel, model=model, sessions=[f"s{i}"], store=store)
        events = channel.handoffs(f"s{i}")
        assert all(e.outcome in ("handoff", "refused") for e in events)
        if any(e.outcome == "handoff" and e.target == "Billing" for e in events):
            handed = True
            break
    replies = [e for e in await store.entries(f"s{i}") if e.kind == "reply"]
    await store.close()
    assert handed, [r.text for s in range(i + 1) for r in channel.replies(f"s{s}")]
    assert any(sum(map(sum, (r.body.get("usage") or {}).values())) > 0 for r in replies)
    assert real_server.refused(mark) == []  # "" content chosen up front: nothing at all refused


def _after_a_tool_call() -> list[LLMMessage]:
    call = FunctionCall(id="c1", name="look_up_item", arguments='{"search_query": "skates"}')
    return [
        SystemMessage(content="You are a shop assistant. Answer in one short sentence."),
        UserMessage(content="Do you sell skates?", source="user"),
        AssistantMessage(content=[call], source="assistant"),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(call_id="c1", name="look_up_item", content="item_1: skates")]
        ),
    ]


async def test_a_tool_call_in_the_conversation_provokes_no_refusal(real_server: RealServer) -> None:
    model = openai_model("smollm2", base_url=real_server.url, timeout=MODEL_SECONDS)
    mark = real_server.mark()
    first = await model.create(_after_a_tool_call(), extra_create_args={"max_tokens": 16})
    second = await model.create(_after_a_tool_call(), extra_create_args={"max_tokens": 16})
    assert isinstance(first.content, str) and isinstance(second.content, str)
    statuses = [status for _, status in real_server.statuses(mark)]
    assert statuses == [200, 200]  # "auto" sends "" beside tool calls from the start: nothing refused


async def test_a_server_that_refuses_null_content_is_said_as_such(real_server: RealServer) -> None:
    model = openai_model("smollm2", base_url=real_server.url, timeout=MODEL_SECONDS, tool_call_content="null")
    with pytest.raises(Exception) as failed:
        await model.create(_after_a_tool_call())
    set_capabilities(real_server.url, tool_call_content="auto")  # the endpoint's setting, for the tests after
    problem = explain_model_error(failed.value)
    assert problem is not None and "fails on this request (HTTP 500" in problem.detail


async def test_a_context_overflow_is_said_as_what_it_is(real_server: RealServer) -> None:
    mark = real_server.mark()
    model = openai_model("smollm2", base_url=real_server.url, timeout=MODEL_SECONDS)
    channel = ScriptedChannel.for_sessions({"s1": ["tell me about skates " * (CONTEXT_TOKENS // 3)]})
    team = TeamSpec(name="one", entry="Desk", agents=[AgentSpec("Desk", system_message="Be brief.")])
    await run_sessions(team, channel, model=model)
    [reply] = channel.replies("s1")
    assert reply.text == (
        "Sorry, I can't answer: your last message is longer than the model can read (it reads at most "
        f"{CONTEXT_TOKENS} tokens), even with the earlier conversation left out; "
        "please say it in fewer words."
    )
    assert reply.text != EMPTY_REPLY
    assert real_server.refused(mark) == [("/v1/chat/completions", 400)]  # provoked; nothing to leave out


async def test_a_conversation_longer_than_the_context_is_trimmed_and_answered(
    real_server: RealServer,
) -> None:
    """Two long exchanges and a short question: together past the server's context, which refuses them
    once; the loop sends the question with what fits of the rest, and the model answers."""
    model = openai_model("smollm2", base_url=real_server.url, timeout=MODEL_SECONDS)
    long = "tell me about skates " * (CONTEXT_TOKENS // 7)  # each over half the context (4 tokens a time)
    history: list[LLMMessage] = [
        UserMessage(content=long, source="user"),
        AssistantMessage(content="Skates have wheels.", source="Desk"),
        UserMessage(content=long, source="user"),
        AssistantMessage(content="Skates are fast.", source="Desk"),
        UserMessage(content="Say hello.", source="user"),
    ]
    policy = TeamPolicy(model_timeout=None)  # the client's own deadline: one CPU thread reads slowly
    loop = ToolLoop("Desk", SystemMessage(content="Answer in three words."), model, policy=policy)
    mark = real_server.mark()
    end = await loop.run(history, ToolContext("s1", "Desk", None), CancellationToken())
    assert isinstance(end, Replied) and end.text, end
    assert is_trimmed(end.history) and end.history[-1] == history[-1]
    assert [status for _, status in real_server.statuses(mark)] == [400, 200]  # refused once, then read
