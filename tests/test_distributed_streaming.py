"""Streaming across a gRPC host: a worker process whose model streams slowly (the real OpenAI client
against a local server), a real host process, and a front end in this process whose channel shows
progress. The deltas reach the front end as they are written; only the final reply is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoffs_runtime import QueueChannel, Reply, SQLiteSessionStore
from handoffs_runtime.distributed import FrontEnd, launch_host, launch_worker
from handoffs_runtime.distributed.serializers import protocol_serializers, type_name
from handoffs_runtime.messages import Delta, Event, PersonEvent, ToolFinished, ToolStarted
from handoffs_runtime.teams.acme import acme_team

from .chat_process import Chat
from .distributed_support import TIMEOUT, Process
from .fake_openai import fake_openai

ANSWER = "Hello! I am the ACME triage bot; how can I help?"


async def team_on_a_worker(processes: list[Process], url: str, *options: str) -> str:
    """A host and one worker process serving the whole ACME team on the model at ``url``."""
    host, address = await launch_host()
    processes.append(host)
    model = ["--model", "gpt-4o-mini", "--base-url", url, *options]
    processes.append(await launch_worker(address, options=model))
    return address


async def until_reply(channel: QueueChannel, session: str) -> list[object]:
    """What the session shows up to and including the next agent reply."""
    seen: list[object] = []
    while not seen or not isinstance(seen[-1], Reply):
        seen.append(await channel.next_output(session, TIMEOUT))
    return seen


async def test_deltas_cross_the_host_before_the_model_has_finished(
    processes: list[Process], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the worker's client wants one; the local server ignores it
    store = SQLiteSessionStore(str(tmp_path / "front.sqlite3"))
    with fake_openai([ANSWER]) as server:
        server.pause_after = 2  # the rest waits until the front end has shown the first words
        address = await team_on_a_worker(processes, server.url)
        channel = QueueChannel(progress=True)
        async with FrontEnd(acme_team(), address, channel, store=store) as front:
            await front.open("s1")
            await channel.say("s1", "hi")
            first = await channel.next_output("s1", TIMEOUT)
            assert first == Delta(
                agent="TriageAgent", text=ANSWER[:4], label="ACME assistant"
            )  # from the worker
            assert server.deltas_sent <= 2  # the model is still "writing"
            server.resume.set()
            rest = await until_reply(channel, "s1")
            deltas = [first, *rest[:-1]]
            assert all(isinstance(d, Delta) for d in deltas), deltas
            assert "".join(d.text for d in deltas if isinstance(d, Delta)) == ANSWER
            assert rest[-1] == Reply(agent="TriageAgent", text=ANSWER, label="ACME assistant")
            await channel.leave("s1")
            await front.wait("s1")
    entries = await store.entries("s1")
    assert [(e.kind, e.text) for e in entries] == [("user", "hi"), ("reply", ANSWER)]  # no delta stored
    await store.close()


async def test_chat_host_prints_the_first_words_before_the_model_has_finished(
    processes: list[Process], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with fake_openai([ANSWER]) as server:
        server.pause_after = 2
        address = await team_on_a_worker(processes, server.url)
        chat = await Chat.start(tmp_path / "chat.sqlite3", "s1", tmp_path, "--host", address)
        await chat.wait_for("you › ")
        await chat.say("hi")
        await chat.wait_for(f"you › hi\nACME assistant › {ANSWER[:4]}")  # a real console, reading a pipe
        assert server.deltas_sent <= 2
        server.resume.set()
        await chat.wait_for(ANSWER)
        output = await chat.finish()
        assert output.count(ANSWER[4:12]) == 1  # streamed in place, not printed again whole


async def test_tool_activity_crosses_the_host_too(
    processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    answers: list[object] = [
        [("transfer_to_issues_and_repairs", {})],
        [("look_up_item", {"search_query": "shoes"})],
        "Found your shoes.",
    ]
    with fake_openai(answers) as server:  # type: ignore[arg-type]
        address = await team_on_a_worker(processes, server.url)
        channel = QueueChannel(progress=True)
        async with FrontEnd(acme_team(), address, channel) as front:
            await front.open("s1")
            await channel.say("s1", "my shoes")
            shown = await until_reply(channel, "s1")
            tools = [o for o in shown if isinstance(o, ToolStarted | ToolFinished)]
            assert [(t.agent, t.tool, type(t)) for t in tools] == [
                ("IssuesAndRepairsAgent", "look_up_item", ToolStarted),
                ("IssuesAndRepairsAgent", "look_up_item", ToolFinished),
            ]
            finished = tools[1]
            assert isinstance(finished, ToolFinished)
            assert finished.result == "item_132612938" and not finished.is_error
            assert shown[-1] == Reply(
                agent="IssuesAndRepairsAgent", text="Found your shoes.", label="ACME repairs"
            )
            await channel.leave("s1")
            await front.wait("s1")


async def test_a_worker_started_with_no_stream_sends_no_progress(
    processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with fake_openai([ANSWER]) as server:
        address = await team_on_a_worker(processes, server.url, "--no-stream")
        channel = QueueChannel(progress=True)
        async with FrontEnd(acme_team(), address, channel) as front:
            await front.open("s1")
            await channel.say("s1", "hi")
            assert await until_reply(channel, "s1") == [
                Reply(agent="TriageAgent", text=ANSWER, label="ACME assistant")
            ]
            assert not server.requests[0].get("stream")
            await channel.leave("s1")
            await front.wait("s1")


@pytest.mark.parametrize(
    "event",
    [
        Delta(agent="TriageAgent", text="Hel"),
        ToolStarted(agent="SalesAgent", tool="execute_order", call_id="call_1", arguments='{"product": "x"}'),
        ToolFinished(
            agent="SalesAgent", tool="execute_order", call_id="call_1", result="boom", is_error=True
        ),
    ],
)
def test_an_event_crosses_the_wire_whole_and_as_its_own_class(event: Event) -> None:
    serializers = protocol_serializers()
    name = type_name(PersonEvent)
    payload = serializers.serialize(
        PersonEvent(event=event), type_name=name, data_content_type="application/json"
    )
    received = serializers.deserialize(payload, type_name=name, data_content_type="application/json")
    assert isinstance(received, PersonEvent) and type(received.event) is type(event)
    assert received.event == event
