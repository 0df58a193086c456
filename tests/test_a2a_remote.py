"""A remote A2A agent as a member of a team: handed the conversation, talked to, and handing it back by
rule when its task completes; down or slow, the person is told in one sentence and the conversation stays."""

from __future__ import annotations

import asyncio
import socket
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage

from handoffs_runtime import tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.handoffs.returns import HAND_BACK_TOOL
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.team.files import load_team_file
from handoffs_runtime.team.spec import TeamSpec

from .a2a_support import A2AServer, a2a_serve
from .cli_support import cli_env, run_handoffs
from .support import run_sessions, texts


def front_team(folder: Path, url: str, *, timeout: float = 60.0) -> Path:
    """Team A: a front desk whose refunds are another team's agent, reached over A2A."""
    path = folder / "front.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: front
            title: Front desk
            model: {{provider: offline}}
            agents:
            - name: Desk
              display_name: Front desk
              description: The front desk.
              handoffs: [Refunds]
            - name: Refunds
              display_name: ACME refunds
              description: Refunds and repairs of ACME products.
              examples: [I want a refund for my shoes, my rocket skates broke]
              a2a: {{url: "{url}", token_env: ACME_A2A_TOKEN, timeout: {timeout}}}
            """
        )
    )
    return path


@contextmanager
def team_b(tmp_path: Path) -> Iterator[A2AServer]:
    """Team B (ACME) served over A2A from a folder of its own."""
    folder = tmp_path / "b"
    folder.mkdir()
    with a2a_serve(folder) as b:
        yield b


@contextmanager
def front_with_b(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TeamSpec]:
    """Team A, loaded while team B is served, with B's token where A's team file says to find it."""
    with team_b(tmp_path) as b:
        monkeypatch.setenv("ACME_A2A_TOKEN", b.token)
        yield load_team_file(front_team(tmp_path, b.url))


def test_a_conversation_goes_to_another_teams_agent_and_comes_back(tmp_path: Path) -> None:
    """Two processes of this project: team B (ACME) served over A2A; team A on the console hands the
    person to B's agent, the person confirms B's refund, B's task completes, and A has the conversation
    back with B's result in its context."""
    with team_b(tmp_path) as b:
        team = front_team(tmp_path, b.url)
        store = tmp_path / "a.sqlite3"
        said = "I want a refund for my shoes\nyes\nthanks\nexit\n"
        env = cli_env({"ACME_A2A_TOKEN": b.token})
        done = run_handoffs(
            "chat",
            "--team",
            str(team),
            "--store",
            str(store),
            "--session",
            "s1",
            stdin=said,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    assert "Shall I go ahead? (yes/no)" in done.stdout
    assert "execute refund → success" in done.stdout

    async def check() -> None:
        a = SQLiteSessionStore(store)
        entries = await a.entries("s1")
        events = [(e.source, e.target, e.tool) for x in entries if (e := x.event()) is not None]
        assert events == [("Desk", "Refunds", "transfer_to_refunds"), ("Refunds", "Desk", HAND_BACK_TOOL)]
        users = [(x.agent, x.text) for x in entries if x.kind == "user"]
        assert users == [("Desk", "I want a refund for my shoes"), ("Refunds", "yes"), ("Desk", "thanks")]
        state = await a.get_session("s1")
        remote = [
            m.content for m in state.context if isinstance(m, AssistantMessage) and m.source == "Refunds"
        ]
        assert any("execute refund → success" in str(text) for text in remote)
        await a.close()

    asyncio.run(check())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """An HTTP server that takes connections and never answers: a remote agent that is stuck."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()


async def _talk(team: Path) -> ScriptedChannel:
    channel = ScriptedChannel.for_sessions({"s1": ["I want a refund for my shoes", "hello again"]})
    desk = ScriptedModel([[tool_call("transfer_to_refunds")], "Front desk here: how can I help?"])
    await run_sessions(load_team_file(team), channel, models={"Desk": desk})
    return channel


async def test_a_remote_agent_that_is_down_is_one_sentence_and_the_conversation_stays(tmp_path: Path) -> None:
    channel = await _talk(front_team(tmp_path, f"http://127.0.0.1:{_closed_port()}"))
    replies = texts(channel)
    assert replies[0][0] == "Refunds"
    sentence = (
        "ACME refunds cannot be reached right now, so your conversation stays with us; "
        "please try again later."
    )
    assert replies[0][1] == sentence
    assert replies[1] == ("Desk", "Front desk here: how can I help?")  # the next message went to the desk
    assert [h.tool for h in channel.handoffs("s1")] == ["transfer_to_refunds", HAND_BACK_TOOL]


async def test_a_remote_agent_that_is_slow_is_one_sentence_and_the_conversation_stays(tmp_path: Path) -> None:
    async with silent_server() as url:
        channel = await _talk(front_team(tmp_path, url, timeout=1.0))
    replies = texts(channel)
    assert "ACME refunds is not answering in time" in replies[0][1]
    assert replies[1] == ("Desk", "Front desk here: how can I help?")


def test_an_a2a_agent_in_a_team_file_returns_by_default(tmp_path: Path) -> None:
    team = load_team_file(front_team(tmp_path, f"http://127.0.0.1:{_closed_port()}", timeout=1.0))
    (handoff,) = team.agent("Desk").handoffs
    assert not isinstance(handoff, str) and handoff.returns


def test_the_trace_context_goes_with_the_message(tmp_path: Path) -> None:
    from autogen_core.models import UserMessage
    from opentelemetry.sdk.trace import TracerProvider

    from handoffs_runtime.protocols.a2a.remote import RemoteA2AAgent

    remote = RemoteA2AAgent(f"http://127.0.0.1:{_closed_port()}", timeout=1.0)
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("turn") as span:
        message = remote._message("s1", [UserMessage(content="hi", source="User")])
    traceparent = message.metadata.fields["traceparent"].string_value
    assert format(span.get_span_context().trace_id, "032x") in traceparent
    assert [p.text for p in message.parts] == ["hi"]


def test_the_runnable_example_loads() -> None:
    team = load_team_file(Path(__file__).resolve().parents[1] / "examples" / "a2a" / "front_desk.yaml")
    (handoff,) = team.agent("Desk").handoffs
    assert not isinstance(handoff, str) and handoff.target == "AcmeRefunds" and handoff.returns


def test_the_remote_agent_called_as_a_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same remote agent offered as a tool (``agent_tools``): the desk asks, keeps the conversation,
    and reads the remote agent's answer as the tool's result."""
    with team_b(tmp_path) as b:
        path = front_team(tmp_path, b.url)
        path.write_text(path.read_text().replace("handoffs: [Refunds]", "agent_tools: [Refunds]"))
        team = load_team_file(path)
        desk = ScriptedModel(
            [[tool_call("ask_refunds", {"request": "I want a refund for my shoes"})], "Noted."]
        )
        channel = ScriptedChannel.for_sessions({"s1": ["can ACME refund my shoes?"]})
        monkeypatch.setenv("ACME_A2A_TOKEN", b.token)
        asyncio.run(run_sessions(team, channel, models={"Desk": desk}))
    assert texts(channel) == [("Desk", "Noted.")]
    results = [
        r.content
        for m in desk.calls[-1][0]
        if isinstance(m, FunctionExecutionResultMessage)
        for r in m.content
    ]
    assert any("Shall I go ahead? (yes/no)" in r for r in results), results


async def test_through_the_web_chat_the_person_talks_to_the_remote_agent_and_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handoffs_runtime.models.offline import OfflineModel

    from .web_support import customer, served

    with front_with_b(tmp_path, monkeypatch) as team:
        async with served(tmp_path, team=team, model=OfflineModel()) as server:
            page, _ = await customer(server)
            await page.until("question", turn=True)  # the customer's turn: the page may write
            first = await page.say("I want a refund for my shoes", until="question", turn=True)
            second = await page.say("yes", until="question", turn=True)
            third = await page.say("thanks", until="question", turn=True)
            await page.socket.close()

    def replies(frames: list[dict[str, object]]) -> list[tuple[object, object]]:
        return [(f["agent"], f["text"]) for f in frames if f["type"] == "reply"]

    assert replies(first)[-1][0] == "Refunds"
    assert "Shall I go ahead? (yes/no)" in str(replies(first)[-1][1])
    assert replies(second)[-1][0] == "Refunds" and "execute refund → success" in str(replies(second)[-1][1])
    assert [(f["source"], f["target"]) for f in second if f["type"] == "handoff"] == [("Refunds", "Desk")]
    assert replies(third)[-1][0] == "Desk"


def test_a_traced_remote_agent_still_says_when_its_part_is_done() -> None:
    """With telemetry on, the agent's model is the traced wrapper: the remote's task state gets through."""
    from handoffs_runtime.handoffs.returns import KnowsWhenDone
    from handoffs_runtime.protocols.a2a.remote import RemoteA2AAgent
    from handoffs_runtime.telemetry.core import Telemetry
    from handoffs_runtime.telemetry.model import TracedModel

    remote = RemoteA2AAgent(f"http://127.0.0.1:{_closed_port()}", timeout=1.0)
    traced = TracedModel(remote, Telemetry())
    assert isinstance(traced, KnowsWhenDone)
    assert not isinstance(TracedModel(ScriptedModel([]), Telemetry()), KnowsWhenDone)


def test_a_task_the_remote_agent_rejects_comes_back_with_its_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with front_with_b(tmp_path, monkeypatch) as team:
        channel = ScriptedChannel.for_sessions({"s1": ["refund " * 700, "hello again"]})
        desk = ScriptedModel([[tool_call("transfer_to_refunds")], "Front desk here: how can I help?"])
        asyncio.run(run_sessions(team, channel, models={"Desk": desk}))
    assert texts(channel) == [
        ("Refunds", "Your message is too long: at most 4,000 characters, please."),
        ("Desk", "Front desk here: how can I help?"),
    ]
