"""Streaming through the real OpenAI client and a local server that sends its deltas slowly."""

from __future__ import annotations

import asyncio

from handoffs_runtime import SQLiteSessionStore, TeamPolicy, openai_model, start_session
from handoffs_runtime.agents.ai import MODEL_ERROR_REPLY
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.messages import Delta, Event, Question, Reply, Said
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.teams.acme import acme_team

from .event_support import started
from .fake_openai import fake_openai

ANSWER = "Hello! I am the ACME triage bot; how can I help?"
TRIAGE = "ACME assistant"
"""What people read for ACME's TriageAgent."""


async def next_event(stream: object) -> Event:
    return await asyncio.wait_for(anext(stream), 20)  # type: ignore[call-overload]


async def until_reply(stream: object) -> list[Event]:
    seen: list[Event] = []
    while not seen or not isinstance(seen[-1], Reply):
        seen.append(await next_event(stream))
    return seen


async def test_the_first_words_arrive_before_the_model_has_finished(tmp_path: object) -> None:
    store = SQLiteSessionStore(f"{tmp_path}/s.sqlite3")
    with fake_openai([ANSWER]) as server:
        server.pause_after = 2  # the server holds the rest of the reply until the test has seen words
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="k")
        runtime, channel = await started(acme_team(policy=TeamPolicy(stream=True)), model, store=store)
        await start_session(runtime, "s1")
        stream = channel.events("s1")
        assert isinstance(await next_event(stream), Question)
        await channel.answer("s1", "hi")
        assert await next_event(stream) == Said(text="hi")
        first = await next_event(stream)
        assert first == Delta(agent="TriageAgent", text=ANSWER[:4], label=TRIAGE)
        assert server.deltas_sent <= 2  # the rest has not been sent yet
        server.resume.set()
        rest = await until_reply(stream)
        deltas = [first, *rest[:-1]]
        assert all(isinstance(d, Delta) for d in deltas)
        assert "".join(d.text for d in deltas if isinstance(d, Delta)) == ANSWER
        assert rest[-1] == Reply(agent="TriageAgent", text=ANSWER, label=TRIAGE)
        await channel.leave("s1")
        await runtime.stop_when_idle()
        await model.close()
    entries = await store.entries("s1")
    assert [(e.kind, e.text) for e in entries] == [("user", "hi"), ("reply", ANSWER)]  # deltas not stored
    await store.close()


async def test_a_stream_cut_in_the_middle_ends_with_the_apology_and_the_session_goes_on() -> None:
    with fake_openai([ANSWER, "Still here."]) as server:
        server.cut_after = 3
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="k", max_retries=0)
        runtime, channel = await started(acme_team(policy=TeamPolicy(stream=True)), model)
        await start_session(runtime, "s1")
        stream = channel.events("s1")
        await next_event(stream)
        await channel.answer("s1", "hi")
        cut = await until_reply(stream)
        assert [e for e in cut if isinstance(e, Delta)] == [
            Delta(agent="TriageAgent", text=ANSWER[i : i + 4], label=TRIAGE) for i in range(0, 12, 4)
        ]
        assert cut[-1] == Reply(agent="TriageAgent", text=MODEL_ERROR_REPLY, label=TRIAGE)
        assert isinstance(await next_event(stream), Question)
        await channel.answer("s1", "hello?")
        again = await until_reply(stream)
        assert again[-1] == Reply(agent="TriageAgent", text="Still here.", label=TRIAGE)
        await channel.leave("s1")
        await runtime.stop_when_idle()
        await model.close()


async def test_without_streaming_no_deltas_are_shown() -> None:
    with fake_openai([ANSWER]) as server:
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="k")
        runtime, channel = await started(acme_team(), model)
        await start_session(runtime, "s1")
        stream = channel.events("s1")
        await next_event(stream)
        await channel.answer("s1", "hi")
        whole = Reply(agent="TriageAgent", text=ANSWER, label=TRIAGE)
        assert await until_reply(stream) == [Said(text="hi"), whole]
        await channel.leave("s1")
        await runtime.stop_when_idle()
        await model.close()
    assert not server.requests[0].get("stream")


def test_event_channel_is_a_channel() -> None:
    from handoffs_runtime import Channel

    assert isinstance(EventChannel(), Channel)


async def test_a_local_model_streams_in_pieces_of_delta_chars() -> None:
    class Pieces(ScriptedModel):
        delta_chars = 4

    streamed = [chunk async for chunk in Pieces(["hello world"]).create_stream([])]
    assert streamed[:-1] == ["hell", "o wo", "rld"]
    assert [chunk async for chunk in ScriptedModel(["hello world"]).create_stream([])][:-1] == ["hello world"]
