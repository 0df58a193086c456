"""Each way real OpenAI-compatible servers differ from OpenAI, against the local fake server with that
quirk turned on, through the real ``openai`` client: the handoff still happens, or the person reads
what went wrong, and nothing the server refused is sent to it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoffs_runtime import AgentSpec, SQLiteSessionStore, TeamPolicy, TeamSpec, openai_model
from handoffs_runtime.agents.ai import EMPTY_REPLY, MODEL_ERROR_REPLY
from handoffs_runtime.agents.trim import TRIM_NOTE, TRIMMED_NOTICE
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import ModelProtocolError
from handoffs_runtime.messages import Notice
from handoffs_runtime.models.failures import explain_model_error
from handoffs_runtime.models.responses import TRUNCATED_STREAM
from handoffs_runtime.teams.acme import acme_team

from .fake_openai import fake_openai
from .support import run_sessions, texts

TO_SALES = [("transfer_to_sales_agent", {})]
SALES_ANSWER = "Rocket skates, $500. Interested?"


def model_for(url: str, **options: object) -> object:
    return openai_model("gpt-4o-mini", base_url=url, api_key="k", max_retries=0, timeout=10, **options)  # type: ignore[arg-type]


async def test_a_legacy_function_call_beside_tool_calls_is_ignored_and_the_handoff_happens() -> None:
    with fake_openai([TO_SALES, SALES_ANSWER]) as server:  # type: ignore[list-item]
        server.legacy_function_call = True
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        await run_sessions(acme_team(), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert [(e.target, e.outcome) for e in channel.handoffs("s1")] == [("SalesAgent", "handoff")]
    assert texts(channel) == [("SalesAgent", SALES_ANSWER)]


async def test_a_lone_legacy_function_call_is_read_as_a_tool_call() -> None:
    legacy = {"role": "assistant", "content": None, "function_call": {"name": "transfer_to_sales_agent"}}
    with fake_openai([legacy, SALES_ANSWER]) as server:
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        await run_sessions(acme_team(), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("SalesAgent", SALES_ANSWER)]


async def test_a_tool_call_the_server_cannot_stream_is_asked_again_without_streaming() -> None:
    with fake_openai([TO_SALES, TO_SALES, SALES_ANSWER]) as server:  # type: ignore[list-item]
        server.streams_tool_calls = False  # 200, then nothing: no data, no [DONE]
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        policy = TeamPolicy(stream=True)
        await run_sessions(acme_team(policy=policy), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("SalesAgent", SALES_ANSWER)]
    streamed = [bool(r.get("stream")) for r in server.requests]
    assert streamed == [True, False, False]  # the truncated stream, the same call plain, then Sales
    # (Sales offers tools, and the endpoint is known not to stream tool calls: asked plain at once)
    assert server.requests[0]["messages"] == server.requests[1]["messages"]


async def test_a_stream_that_stops_after_its_first_words_is_a_failure_not_an_answer() -> None:
    with fake_openai(["Let me see what I can find for you today."]) as server:
        server.end_after = 2  # two deltas, then the stream just ends
        channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
        policy = TeamPolicy(stream=True)
        await run_sessions(acme_team(policy=policy), channel, model=model_for(server.url))  # type: ignore[arg-type]
    [(_, said)] = texts(channel)
    assert said == (
        "Sorry, I can't answer: the language model's answer could not be read; whoever runs this "
        "service has been told what is wrong."
    )
    [detail] = [e.detail for e in channel.shown["s1"] if isinstance(e, Notice) and e.detail]
    assert detail == (
        f"the model server's answer could not be read ({TRUNCATED_STREAM}); the server may not support "
        "tool calls this way"
    )
    assert said not in (EMPTY_REPLY, MODEL_ERROR_REPLY)
    assert len(server.requests) == 1  # words were shown: not asked again


def test_a_truncated_stream_is_explained_once_then_recalled() -> None:
    problem = explain_model_error(ModelProtocolError(TRUNCATED_STREAM))
    assert problem is not None and "could not be read" in problem.first and "see above" in problem.again


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_server_that_refuses_null_content_is_never_sent_it(stream: bool) -> None:
    answers = [TO_SALES, SALES_ANSWER, "Size 42, yes."]
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        server.refuses_null_content = True
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something", "In size 42?"]})
        policy = TeamPolicy(stream=stream)
        await run_sessions(acme_team(policy=policy), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("SalesAgent", SALES_ANSWER), ("SalesAgent", "Size 42, yes.")]
    assert server.statuses == [200, 200, 200]  # "" is sent from the start: nothing to refuse
    calls = [m for m in server.requests[2]["messages"] if m.get("tool_calls")]
    assert calls and all(m["content"] == "" for m in calls)


async def test_empty_content_can_be_chosen_so_nothing_is_refused() -> None:
    with fake_openai([TO_SALES, SALES_ANSWER]) as server:  # type: ignore[list-item]
        server.refuses_null_content = True
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        model = model_for(server.url, tool_call_content="empty")
        await run_sessions(acme_team(), channel, model=model)  # type: ignore[arg-type]
    assert texts(channel) == [("SalesAgent", SALES_ANSWER)]
    assert server.statuses == [200, 200]


async def test_a_server_that_keeps_refusing_null_content_when_told_to_send_it_is_said_clearly() -> None:
    with fake_openai([TO_SALES]) as server:  # type: ignore[list-item]
        server.refuses_null_content = True
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        model = model_for(server.url, tool_call_content="null")
        await run_sessions(acme_team(), channel, model=model)  # type: ignore[arg-type]
    [(agent, said)] = texts(channel)
    assert agent == "SalesAgent"
    assert said.startswith("Sorry, I can't answer: the language model fails on this request, also when")
    [detail] = [e.detail for e in channel.shown["s1"] if isinstance(e, Notice) and e.detail]
    assert detail.startswith("the model server at http://127.0.0.1:")
    assert "fails on this request (HTTP 500, also when tried again: " in detail
    assert detail.endswith("its log says why")


def brief_team(policy: TeamPolicy) -> TeamSpec:
    """One agent with a short prompt and no tools: what the fake server counts is the conversation."""
    return TeamSpec(
        name="t", entry="Front", policy=policy, agents=[AgentSpec("Front", system_message="Be brief.")]
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_conversation_that_outgrew_the_context_is_trimmed_and_the_session_goes_on(
    stream: bool, tmp_path: Path
) -> None:
    answers = ["Hello! How can I help?", "That is a long question.", "It is 4.", "You are welcome."]
    script = ["hi", "y" * 4000, "z" * 2000 + " what is 2 + 2?", "thanks"]
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        server.context_chars = 5000  # the first two turns fit, the third not
        channel = ScriptedChannel.for_sessions({"s1": script})
        team = brief_team(TeamPolicy(stream=stream))
        await run_sessions(team, channel, model=model_for(server.url), store=store)  # type: ignore[arg-type]
    assert [text for _, text in texts(channel)] == answers
    assert server.statuses == [200, 200, 400, 200, 200]  # refused once, sent trimmed, then it fits
    retried = [(m["role"], m["content"]) for m in server.requests[3]["messages"]]
    assert retried == [
        ("system", "Be brief."),
        ("system", TRIM_NOTE),  # the oldest messages are left out; the model is told so
        ("assistant", "That is a long question."),
        ("user", script[2]),
    ]
    last = [m["content"] for m in server.requests[4]["messages"]]
    assert last == ["Be brief.", TRIM_NOTE, answers[1], script[2], answers[2], "thanks"]
    notices = [e.text for e in channel.shown["s1"] if isinstance(e, Notice)]
    assert notices.count(TRIMMED_NOTICE) == 1  # the person is told once, when it happens
    entries = [(e.kind, e.text) for e in await store.entries("s1")]
    said = [("user", line) for line in script]
    assert entries == [e for pair in zip(said, [("reply", a) for a in answers], strict=True) for e in pair]
    await store.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_message_longer_than_the_context_is_said_as_such(stream: bool) -> None:
    with fake_openai(["Hello! How can I help?", "Sure."]) as server:
        server.context_chars = 6000
        channel = ScriptedChannel.for_sessions({"s1": ["hi", "x" * 6000, "short again"]})
        team = brief_team(TeamPolicy(stream=stream))
        await run_sessions(team, channel, model=model_for(server.url))  # type: ignore[arg-type]
    first, second, third = texts(channel)
    assert first == ("Front", "Hello! How can I help?")
    assert second[1] == (
        "Sorry, I can't answer: your last message is longer than the model can read (it reads at most "
        "2048 tokens), even with the earlier conversation left out; please say it in fewer words."
    )
    assert third == ("Front", "Sure.")  # the long message is left out of what the model reads now
    assert server.statuses == [200, 400, 400, 400, 200]  # as sent, then alone; then trimmed, it fits


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_without_trimming_the_overflow_is_told_once_then_recalled(stream: bool) -> None:
    with fake_openai(["Hello! How can I help?"]) as server:
        server.context_chars = 6000  # the first turn fits (system prompt, tools aside), the second not
        channel = ScriptedChannel.for_sessions({"s1": ["hi", "x" * 6000, "and again"]})
        policy = TeamPolicy(stream=stream, trim_context=False)
        await run_sessions(acme_team(policy=policy), channel, model=model_for(server.url))  # type: ignore[arg-type]
    first, second, third = texts(channel)
    assert first == ("TriageAgent", "Hello! How can I help?")
    assert second[1] == (
        "Sorry, I can't answer: this conversation has grown longer than the model can read (it reads at "
        "most 2048 tokens); please start a new conversation."
    )
    assert (
        third[1] == "Sorry, I can't answer: this conversation is longer than the model can read (see above)."
    )
    assert server.statuses == [200, 400, 400]  # each overflow sent once: no other form of it is shorter


async def test_streamed_turns_record_the_usage_the_server_reports(tmp_path: Path) -> None:
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    with fake_openai(["Hello! How can I help?"]) as server:  # usage only when include_usage is asked
        channel = ScriptedChannel.for_sessions({"s1": ["hi"]})
        policy = TeamPolicy(stream=True)
        await run_sessions(acme_team(policy=policy), channel, model=model_for(server.url), store=store)  # type: ignore[arg-type]
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    [reply] = [e for e in await store.entries("s1") if e.kind == "reply"]
    assert reply.body.get("usage") == {"TriageAgent": [10, 5]}
    await store.close()


async def test_a_server_that_refuses_stream_options_is_asked_without_them_from_then_on() -> None:
    with fake_openai(["Hello!", "Hello again!"]) as server:
        server.refuses_stream_options = True
        channel = ScriptedChannel.for_sessions({"s1": ["hi", "hi again"]})
        policy = TeamPolicy(stream=True)
        await run_sessions(acme_team(policy=policy), channel, model=model_for(server.url))  # type: ignore[arg-type]
    assert texts(channel) == [("TriageAgent", "Hello!"), ("TriageAgent", "Hello again!")]
    assert server.statuses == [400, 200, 200]
    assert ["stream_options" in r for r in server.requests] == [True, False, False]
