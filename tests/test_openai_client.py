"""The real OpenAI client (through autogen-ext) against a local OpenAI-compatible server."""

from __future__ import annotations

import pytest

from handoffs_runtime import ModelConfigError, TeamPolicy, openai_model
from handoffs_runtime.agents.ai import MODEL_ERROR_REPLY
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.teams.acme import acme_team

from .fake_openai import fake_openai
from .support import run_sessions, texts


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_handoff_and_answer_through_a_real_openai_client(stream: bool) -> None:
    answers = [[("transfer_to_sales_agent", {})], "Rocket skates, $500. Interested?"]
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="test-key")
        channel = ScriptedChannel.for_sessions({"s1": ["I want to buy something"]})
        await run_sessions(acme_team(policy=TeamPolicy(stream=stream)), channel, model=model)
    assert texts(channel) == [("SalesAgent", "Rocket skates, $500. Interested?")]
    first, second = server.requests
    assert bool(first.get("stream")) is stream
    assert [t["function"]["name"] for t in first["tools"]] == [
        "transfer_to_issues_and_repairs",
        "transfer_to_sales_agent",
        "escalate_to_human",
    ]
    assert first["parallel_tool_calls"] is False
    assert first["messages"][0]["role"] == "system"
    # Sales received the handoff call and its result, and its own system message only at the start.
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["content"].startswith("Transferred to SalesAgent")


async def test_a_server_error_that_repeats_is_said_as_such_and_the_session_goes_on() -> None:
    with fake_openai([500, 500, "back again"]) as server:
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="k", max_retries=1, timeout=10)
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "hello again"]})
        await run_sessions(acme_team(), channel, model=model)
    (first_agent, first), second = texts(channel)
    assert first_agent == "TriageAgent"
    assert "fails on this request, also when it is tried again" in first
    assert "try again in a moment" not in first
    assert second == ("TriageAgent", "back again")
    assert len(server.requests) == 3  # one try and one retry, then the next turn


async def test_a_transient_server_error_keeps_the_apology() -> None:
    with fake_openai([503, "back again"]) as server:
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="k", max_retries=0, timeout=10)
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "hello again"]})
        await run_sessions(acme_team(), channel, model=model)
    assert texts(channel) == [("TriageAgent", MODEL_ERROR_REPLY), ("TriageAgent", "back again")]


async def test_unknown_model_names_get_generic_model_info() -> None:
    with fake_openai(["hi from llama"]) as server:
        model = openai_model("llama3.1:8b", base_url=server.url)
        assert model.model_info["function_calling"] is True
        channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
        await run_sessions(acme_team(), channel, model=model)
    assert texts(channel) == [("TriageAgent", "hi from llama")]
    assert server.requests[0]["model"] == "llama3.1:8b"


def test_missing_key_for_a_hosted_model_is_a_clear_error() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        openai_model("gpt-4o-mini")
