"""Your own team from a file: the examples build the built-in teams, mistakes are one line each, and a team
this project has never seen chats, serves and runs across a gRPC host from ``--team``."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest
from autogen_core.tools import Tool

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.team.build import build_team
from handoffs_runtime.team.files import TeamFileError, load_team, load_team_file
from handoffs_runtime.team.spec import AgentSpec, TeamSpec
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.tools.effects import is_irreversible

from .cli_support import run_handoffs
from .distributed_support import TIMEOUT, launch_host, launch_worker

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BOOKSHOP = EXAMPLES / "bookshop" / "team.yaml"


def shape(team: TeamSpec) -> dict[str, object]:
    """Everything a team is made of that two builds of it must share (tools by name, schema and marks)."""

    def tool(t: object) -> object:
        assert isinstance(t, Tool)
        return (t.name, t.description, json.dumps(t.schema, sort_keys=True), is_irreversible(t))

    def agent(a: AgentSpec) -> dict[str, object]:
        handoffs = [
            (h.target, h.tool_name, h.tool_description) if not isinstance(h, str) else h for h in a.handoffs
        ]
        return {
            "name": a.name,
            "label": a.label,
            "kind": a.kind,
            "description": a.description,
            "system": a.system_message,
            "tools": sorted(str(tool(t)) for t in build_team(team)[a.name].tools.values())
            if a.kind != "human"
            else [],
            "handoffs": handoffs,
            "agent_tools": list(a.agent_tools),
            "examples": list(a.examples),
        }

    return {
        "name": team.name,
        "title": team.title,
        "greeting": team.greeting,
        "suggestions": list(team.suggestions),
        "entry": team.entry,
        "policy": team.policy,
        "agents": [agent(a) for a in team.agents],
    }


@pytest.mark.parametrize(
    ("path", "built_in"), [("acme.yaml", acme_team), ("orchestrator.yaml", orchestrator_team)]
)
def test_the_example_files_build_the_built_in_teams(path: str, built_in: object) -> None:
    assert callable(built_in)
    assert shape(load_team_file(EXAMPLES / path)) == shape(built_in())


def write(tmp_path: Path, text: str, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


TOOLS_MODULE = '''
def refund(order_number: str) -> str:
    """Refund an order."""
    return "ok"

def track(order_id):
    return "somewhere"
'''

GOOD = """\
    name: shop
    agents:
    - name: Front
      handoffs: [Billing]
    - name: Billing
      tools: [shoptools:refund]
"""


@pytest.mark.parametrize(
    ("replace", "expected"),
    [
        (
            ("[Billing]", "[Biling]"),
            "team.yaml:4: agents[0].handoffs[0].target: unknown agent 'Biling'; did you mean 'Billing'?",
        ),
        (
            ("shoptools:refund", "shoptools:refnd"),
            "team.yaml:6: agents[1].tools[0].ref: cannot import 'shoptools:refnd'; did you mean 'refund'?",
        ),
        (
            ("shoptools:refund", "shoptool:refund"),
            "agents[1].tools[0].ref: cannot import 'shoptool:refund': "
            "no module 'shoptool'; did you mean 'shoptools'?",
        ),
        (
            ("- name: Billing\n", "- name: Billing\n      descripton: x\n"),
            "team.yaml:6: agents[1].descripton: unknown key 'descripton'; did you mean 'description'?",
        ),
        (
            (
                "name: shop\n",
                "name: shop\n    model: {provider: OpenAIChatCompletionClent, config: {model: m}}\n",
            ),
            "model.provider: cannot load model provider 'OpenAIChatCompletionClent'; "
            "did you mean 'OpenAIChatCompletionClient'?",
        ),
    ],
)
def test_a_mistake_is_one_line_with_its_place_and_a_suggestion(
    tmp_path: Path, replace: tuple[str, str], expected: str
) -> None:
    (tmp_path / "shoptools.py").write_text(TOOLS_MODULE)
    path = write(tmp_path, GOOD.replace(*replace))
    with pytest.raises(TeamFileError) as caught:
        load_team_file(path)
    [problem] = caught.value.problems
    assert problem.startswith(str(path)) and problem.endswith(expected.removeprefix("team.yaml")), problem
    # the CLI: one line per mistake, exit status 2, never a traceback
    done = run_handoffs("graph", "--team", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"handoffs: {caught.value.problems[0]}"]
    assert "Traceback" not in done.stderr


def test_the_policy_of_a_file_sets_the_model_deadline_and_trimming(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        name: t
        policy: {model_timeout: 120, trim_context: false}
        agents: [{name: Front}]
        """,
    )
    policy = load_team_file(path).policy
    assert (policy.model_timeout, policy.trim_context) == (120, False)
    assert load_team_file(write(tmp_path, "name: t\nagents: [{name: Front}]\n")).policy.trim_context


def test_a_misspelt_entry_agent_is_one_line_with_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "shoptools.py").write_text(TOOLS_MODULE)
    path = write(tmp_path, GOOD + "    entry: Frnt\n")
    with pytest.raises(TeamFileError) as caught:
        load_team_file(path)
    assert caught.value.problems == [f"{path}:7: entry: unknown agent 'Frnt'; did you mean 'Front'?"]


def test_the_acme_example_file_chats() -> None:
    done = run_handoffs(
        "chat",
        "--team",
        str(EXAMPLES / "acme.yaml"),
        "--no-colour",
        stdin="I want a refund for my skates\nyes\n",
    )
    assert done.returncode == 0, done.stderr
    assert "ACME Inc. customer service" in done.stdout.splitlines()[0]
    assert "execute refund" in done.stdout


def test_every_mistake_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "shoptools.py").write_text(TOOLS_MODULE)
    path = write(tmp_path, GOOD.replace("[Billing]", "[Biling, Biling]").replace("refund]", "refnd]"))
    with pytest.raises(TeamFileError) as caught:
        load_team_file(path)
    assert len(caught.value.problems) == 3  # two handoffs (two places) and the tool
    assert len(set(caught.value.problems)) == 3


def test_a_tool_without_type_hints_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "shoptools.py").write_text(TOOLS_MODULE)
    path = write(tmp_path, GOOD.replace("shoptools:refund", "shoptools:track"))
    with pytest.raises(TeamFileError, match=r"tool 'track' has no type hint for its parameter 'order_id'"):
        load_team_file(path)


def test_python_tools_without_hints_or_as_lambdas_are_refused_when_the_team_is_built() -> None:
    def track(order_id):  # type: ignore[no-untyped-def]
        return "somewhere"

    for tool, words in (
        (track, "tool 'track' has no type hint for its parameter 'order_id'"),
        (lambda order_id: order_id, "a lambda cannot be a tool"),
    ):
        team = TeamSpec("t", [AgentSpec("A", tools=[tool])], entry="A")
        with pytest.raises(TeamConfigError, match=words) as caught:
            build_team(team)
        assert "agent 'A'" in str(caught.value) and "type hint on every parameter" in str(caught.value)


def test_a_team_from_a_python_file_or_a_module_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "myteam.py").write_text(
        textwrap.dedent("""
        from handoffs_runtime.team.spec import AgentSpec, TeamSpec

        def shop_team() -> TeamSpec:
            desk = AgentSpec("Desk", description="The desk.")
            return TeamSpec("shop", [desk], entry="Desk", title="My shop")

        team = shop_team()
    """)
    )
    assert load_team(str(tmp_path / "myteam.py")).title == "My shop"
    assert load_team(f"{tmp_path / 'myteam.py'}:shop_team").name == "shop"
    monkeypatch.chdir(tmp_path)
    assert load_team("myteam:team").entry == "Desk"
    for reference in (f"{tmp_path / 'myteam.py'}", "myteam:team"):
        done = run_handoffs("chat", "--team", reference, stdin="hello\n", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "My shop" in done.stdout.splitlines()[0]
    with pytest.raises(TeamFileError, match="no 'tem' in myteam; did you mean 'team'"):
        load_team("myteam:tem")


def test_your_own_team_chats_from_a_team_file() -> None:
    done = run_handoffs(
        "chat", "--team", str(BOOKSHOP), "--no-colour", stdin="where is my order BK-1001?\nyes\n", cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert "Bookshop help desk" in first
    assert "shipped on Monday" in done.stdout


def test_your_own_team_serves_from_a_team_file(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time
    import urllib.request

    from .cli_support import cli_env

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "handoffs_runtime",
            "serve",
            "--team",
            str(BOOKSHOP),
            "--port",
            "0",
            "--store",
            str(tmp_path / "s.db"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=cli_env(),
        cwd=ROOT,
    )
    try:
        url = None
        deadline = time.monotonic() + TIMEOUT
        lines = []
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            lines.append(line)
            if "http://" in line and "operator" not in line:
                url = line[line.index("http://") :].split()[0]
        assert url is not None, "".join(lines)
        assert "Bookshop help desk" in "".join(lines)
        page = urllib.request.urlopen(url.split("#")[0], timeout=10).read().decode()
        assert "<html" in page.lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_your_own_team_runs_on_a_grpc_host_from_a_team_file() -> None:
    team = ("--team", str(BOOKSHOP))
    host, address = await launch_host("127.0.0.1:0", *team)
    worker = await launch_worker(address, options=team)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "handoffs_runtime",
            "chat",
            "--host",
            address,
            *team,
            "--session",
            "shop-1",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        out, err = await asyncio.wait_for(proc.communicate(b"where is my order BK-1001?\nyes\n"), TIMEOUT)
        assert proc.returncode == 0, err.decode()
        assert "shipped on Monday" in out.decode()
    finally:
        await worker.stop()
        await host.stop()
