"""Tools from MCP servers: a real server (tests/mcp_server.py, written with the SDK) as a subprocess, over
stdio and streamable HTTP, given to an agent by a team file; the real runtime, a scripted model."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from autogen_core import CancellationToken

from handoffs_runtime import tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.team.files import TeamFileError, load_team_file
from handoffs_runtime.team.graph import team_mermaid
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.tools.approval import ApprovalTool
from handoffs_runtime.tools.effects import is_irreversible
from handoffs_runtime.tools.mcp import McpServer, McpServerDown, McpTool, close_all, mcp_tools

from .support import notices, questions, results, run_sessions, texts

SERVER = Path(__file__).with_name("mcp_server.py")


@pytest.fixture(autouse=True)
def fresh_servers() -> Iterator[None]:
    """Each test starts its own servers (a process keeps one per server), and stops them after."""
    close_all()
    yield
    close_all()


@pytest.fixture
def notes_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "deleted.log"
    monkeypatch.setenv("TEST_NOTES_LOG", str(log))
    return log


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteSessionStore]:
    opened = await asyncio.to_thread(SQLiteSessionStore, tmp_path / "s.sqlite3")
    yield opened
    await opened.close()


def clerk_team(tmp_path: Path, server: str, extra: str = "") -> Path:
    """A team file whose one agent, Clerk, has the tools of one MCP server (``server``: its keys)."""
    first, *rest = textwrap.dedent(server).strip().splitlines()
    entry = "\n".join([f"      - {first}", *(f"        {line}" for line in rest)])
    path = tmp_path / "team.yaml"
    head = "name: notes\nagents:\n  - name: Clerk\n    description: Keeps the notes.\n    mcp:\n"
    path.write_text(f"{head}{entry}\n{extra}")
    return path


def stdio_team(tmp_path: Path, extra: str = "") -> Path:
    server = f"""
        server: notes
        command: {sys.executable}
        args: [{SERVER}, stdio]
        env: {{NOTES_LOG: "${{TEST_NOTES_LOG}}"}}
        prefix: notes_
    """
    return clerk_team(tmp_path, server, extra)


def clerk_tools(team: TeamSpec) -> dict[str, object]:
    return {t.name: t for t in team.agent("Clerk").tools}  # type: ignore[union-attr]


async def test_a_team_file_gives_the_agent_the_servers_tools_marked_by_their_annotations(
    tmp_path: Path, notes_log: Path
) -> None:
    team = load_team_file(stdio_team(tmp_path))
    tools = clerk_tools(team)
    assert set(tools) == {
        "notes_read_note",
        "notes_delete_note",
        "notes_server_pid",
        "notes_crash",
        "notes_token_seen",
        "notes_tag_note",
    }
    assert isinstance(tools["notes_read_note"], McpTool) and not is_irreversible(tools["notes_read_note"])
    for asking in ("notes_delete_note", "notes_tag_note"):  # destructive; unannotated: the default asks
        assert isinstance(tools[asking], ApprovalTool) and is_irreversible(tools[asking])
    assert "notes_read_note" in team_mermaid(team) and "notes_delete_note" in team_mermaid(team)


async def test_a_read_only_tool_runs_without_asking(tmp_path: Path, notes_log: Path) -> None:
    team = load_team_file(stdio_team(tmp_path))
    model = ScriptedModel([[tool_call("notes_read_note", {"name": "todo"})], "Your todo: call the plumber."])
    channel = ScriptedChannel.for_sessions({"s1": ["what is on my todo note?"]})
    await run_sessions(team, channel, model=model)
    assert results(model, 1) == ["call the plumber"]
    assert questions(channel) == []
    assert texts(channel) == [("Clerk", "Your todo: call the plumber.")]


async def test_a_destructive_tool_asks_the_person_and_is_recorded_once(
    tmp_path: Path, notes_log: Path, store: SQLiteSessionStore
) -> None:
    team = load_team_file(stdio_team(tmp_path))
    delete = tool_call("notes_delete_note", {"name": "todo"})
    model = ScriptedModel([[delete], [delete], "Deleted."])  # a model that asks twice
    channel = ScriptedChannel.for_sessions({"s1": ["delete my todo note", "yes"]})
    await run_sessions(team, channel, model=model, store=store)
    assert notes_log.read_text() == "deleted todo\n"  # the server did it once
    assert questions(channel) == ['Allow notes_delete_note(name="todo")? y/n']
    assert results(model, 1) == ["Deleted the note todo."]
    assert results(model, 2)[0].startswith("Not run again: notes_delete_note already ran")
    [effect] = await store.effects("s1")
    assert (effect.key.tool, effect.status, effect.result) == (
        "notes_delete_note",
        "done",
        "Deleted the note todo.",
    )


async def test_a_destructive_tool_the_person_declines_does_not_run(tmp_path: Path, notes_log: Path) -> None:
    team = load_team_file(stdio_team(tmp_path))
    model = ScriptedModel([[tool_call("notes_delete_note", {"name": "todo"})], "Kept it."])
    channel = ScriptedChannel.for_sessions({"s1": ["delete my todo note", "no"]})
    await run_sessions(team, channel, model=model)
    assert not notes_log.exists()
    assert results(model, 1)[0].startswith("Refused: ")


async def test_a_server_killed_mid_call_is_a_named_failure_and_is_restarted(
    tmp_path: Path, notes_log: Path
) -> None:
    """The server's process dies by SIGKILL inside a call: that call's result names the failure, the
    person is told in one sentence, and the next call runs on a new server process."""
    team = load_team_file(stdio_team(tmp_path))
    steps = [
        [tool_call("notes_server_pid", {})],
        [tool_call("notes_crash", {})],
        [tool_call("notes_server_pid", {})],
        "Done.",
    ]
    model = ScriptedModel(steps)  # type: ignore[arg-type]
    channel = ScriptedChannel.for_sessions({"s1": ["check the server"]})
    await run_sessions(team, channel, model=model)
    [first] = results(model, 1)
    [failure] = results(model, 2)
    [second] = results(model, 3)
    assert failure.startswith(
        "Error: tool notes_crash failed: McpServerDown: the tool server 'notes' stopped"
    )
    assert "started again" in failure
    assert second.isdigit() and second != first
    with pytest.raises(ProcessLookupError):
        os.kill(int(first), 0)
    assert notices(channel)[0] == (
        "⚠ A service I rely on stopped while handling your request: it may or may not have been done, "
        "and it is being restarted. Please ask again in a moment."
    )
    assert "McpServerDown" not in " ".join(notices(channel))  # the person reads words, not names


async def test_a_server_killed_between_calls_is_restarted_for_the_next_and_the_restarts_are_bounded(
    notes_log: Path,
) -> None:
    server = McpServer(
        "bounded", command=sys.executable, args=(str(SERVER), "stdio"), max_restarts=1, start_timeout=20
    )
    tools = {t.name: t for t in mcp_tools(server)}
    token = CancellationToken()
    pid = int(await tools["server_pid"].run_json({}, token))
    os.kill(pid, signal.SIGKILL)  # kill -9 from outside, while the session is idle
    with pytest.raises(McpServerDown, match="'bounded' stopped while server_pid ran"):
        for _ in range(50):  # the first call after the kill may find the pipe still open
            await tools["server_pid"].run_json({}, token)
            await asyncio.sleep(0.1)
    again = int(await tools["server_pid"].run_json({}, token))
    assert again != pid
    with pytest.raises(McpServerDown):
        await tools["crash"].run_json({}, token)  # the second failure in the window: not restarted
    with pytest.raises(McpServerDown, match="'bounded' is down: it failed 2 times within 60 s"):
        await tools["server_pid"].run_json({}, token)


async def test_a_streamable_http_server_gives_its_tools_with_a_credential_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**os.environ, "NOTES_TOKEN": "t0ken", "NOTES_LOG": str(tmp_path / "log")}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)  # type: ignore[union-attr]
        port = int(line.split()[1])
        server = f"""
            server: web-notes
            url: http://127.0.0.1:{port}/mcp
            headers: {{Authorization: "Bearer ${{WEB_NOTES_TOKEN}}"}}
            allow: [read_note, token_seen]
        """
        path = clerk_team(tmp_path, server)
        monkeypatch.delenv("WEB_NOTES_TOKEN", raising=False)
        with pytest.raises(TeamFileError, match=r"refers to \$\{WEB_NOTES_TOKEN\}, which is not set"):
            load_team_file(path)
        monkeypatch.setenv("WEB_NOTES_TOKEN", "t0ken")
        team = load_team_file(path)
        assert set(clerk_tools(team)) == {"read_note", "token_seen"}
        model = ScriptedModel([[tool_call("read_note", {"name": "groceries"})], "Milk and eggs."])
        channel = ScriptedChannel.for_sessions({"s1": ["what do I need to buy?"]})
        await run_sessions(team, channel, model=model)
        assert results(model, 1) == ["milk, eggs"]
        monkeypatch.setenv("WEB_NOTES_TOKEN", "wrong")
        close_all()
        with pytest.raises(TeamFileError, match=r"'web-notes' .*did not start"):
            load_team_file(path)  # the server refuses another token: the header is what is sent
    finally:
        process.kill()
        process.wait(10)


def test_a_credential_written_into_the_team_file_is_refused(tmp_path: Path) -> None:
    path = stdio_team(tmp_path).read_text().replace('"${TEST_NOTES_LOG}"', "s3cret-value")
    (tmp_path / "bad.yaml").write_text(path)
    with pytest.raises(TeamFileError) as caught:
        load_team_file(tmp_path / "bad.yaml")
    [problem] = caught.value.problems
    assert "agents[0].mcp[0]" in problem and "never put a credential in a team file" in problem
    assert "s3cret-value" not in problem


def test_an_unknown_tool_in_the_allow_list_is_named_with_a_suggestion(
    tmp_path: Path, notes_log: Path
) -> None:
    path = stdio_team(tmp_path)
    path.write_text(path.read_text().replace("prefix: notes_", "allow: [read_notes]"))
    with pytest.raises(TeamFileError, match="has no tool 'read_notes'; did you mean 'read_note'"):
        load_team_file(path)


def test_unannotated_tools_run_without_asking_when_the_team_says_so(tmp_path: Path, notes_log: Path) -> None:
    path = stdio_team(tmp_path)
    path.write_text(path.read_text().replace("prefix: notes_", "unannotated: run"))
    tools = clerk_tools(load_team_file(path))
    assert isinstance(tools["tag_note"], McpTool) and isinstance(tools["delete_note"], ApprovalTool)


def test_the_server_process_is_stopped_when_the_process_exits(tmp_path: Path, notes_log: Path) -> None:
    script = (
        "import asyncio, sys\n"
        "from autogen_core import CancellationToken\n"
        "from handoffs_runtime.team.files import load_team_file\n"
        "team = load_team_file(__import__('pathlib').Path(sys.argv[1]))\n"
        "[pid] = [t for t in team.agent('Clerk').tools if t.name == 'notes_server_pid']\n"
        "print(asyncio.run(pid.run_json({}, CancellationToken())), flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(stdio_team(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
