"""Web customers are strangers: code and irreversible tools run only after the operator approves them.

Over a real server's WebSockets with the orchestrator team: the customer is told the request waits for
a member of staff, cannot approve it, and nothing runs until the operator console says yes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from handoffs_runtime import (
    AgentSpec,
    OfflineModel,
    SQLiteSessionStore,
    TeamConfigError,
    TeamSpec,
    irreversible,
    requires_approval,
    runs_code,
)
from handoffs_runtime.distributed import launch_worker
from handoffs_runtime.team.files import load_team_file
from handoffs_runtime.team.oversight import UnapprovedCodeError, operator_oversight, remote_oversight
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.teams.orchestrator import code_tool, orchestrator_team
from handoffs_runtime.tools.approval import ApprovalTool
from handoffs_runtime.tools.effects import is_code_runner
from handoffs_runtime.web.backends import RemoteTeam
from handoffs_runtime.web.frames import frame_json
from handoffs_runtime.web.hub import SessionHub
from handoffs_runtime.web.operators import APPROVED, NOT_APPROVED
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL

from .distributed_support import Process, start_host
from .web_support import approve, customer, customer_back, operator, served, waiting_list

ROOT = Path(__file__).resolve().parents[1]


async def test_a_web_customers_code_runs_only_after_the_operator_approves_it(tmp_path: Path) -> None:
    secret = tmp_path / "token.txt"
    secret.write_text("the-operator-token-0123456789")
    stolen = tmp_path / "stolen.txt"
    code = f"open({str(stolen)!r}, 'w').write(open({str(secret)!r}).read())"
    async with served(tmp_path, team=orchestrator_team(), approve_code=True) as server:
        page, session = await customer(server)
        sid = session["session"]
        await page.until("question")
        await page.send({"type": "say", "text": f"run this python: {code}"})
        await page.until("notice", text=WAITING_FOR_APPROVAL)
        await page.send({"type": "say", "text": "yes", **page.answering()})  # the customer cannot approve it
        assert (await page.until("error"))[-1]["message"] == "please wait for the answer before writing again"
        assert not stolen.exists()
        asked = await approve(server, sid, "no")
        assert asked["kind"] == "approval" and code in asked["prompt"]  # the operator reads the code
        refused = await page.until("question")
        assert "did not approve" in refused[-2]["text"]
        assert [m["text"] for m in refused if m["type"] == "notice"] == [NOT_APPROVED]
        assert not stolen.exists()
        assert not any(m["type"] == "question" and m["choices"] for m in page.seen)

        await page.send({"type": "say", "text": "run this python: print(6*7)"})
        await page.until("notice", text=WAITING_FOR_APPROVAL)
        await approve(server, sid, "yes")
        reply = (await page.until("reply"))[-1]
        assert "42" in reply["text"]
        assert "the-operator-token" not in json.dumps(page.seen)
        await page.socket.close()


async def test_an_approval_in_a_session_the_operator_holds_still_tells_the_customer(tmp_path: Path) -> None:
    async with served(tmp_path, team=orchestrator_team(), approve_code=True) as server:
        page, session = await customer(server)
        sid = session["session"]
        console = await operator(server)
        await page.until("question")
        await page.send({"type": "say", "text": "run this python: print(6*7)"})
        [waiting] = await waiting_list(console, (sid, "approval"))
        assert waiting["prompt"] == _prompt()
        await console.send({"type": "take", "session": sid})
        await console.until("taken", session=sid)
        await console.send({"type": "say", "session": sid, "text": "yes", **console.answering()})
        await console.until("released", session=sid)
        got = await page.until("reply")
        assert [m["text"] for m in got if m["type"] == "notice"] == [WAITING_FOR_APPROVAL, APPROVED]
        await page.socket.close()
        await console.socket.close()


def _prompt() -> str:
    return 'Allow execute_python_code(code="print(6*7)")? y/n'


async def test_a_team_whose_code_nobody_approves_is_refused(tmp_path: Path) -> None:
    store = SQLiteSessionStore(":memory:")
    try:
        with pytest.raises(UnapprovedCodeError) as refused:
            SessionHub(orchestrator_team(), OfflineModel(), store)
        assert str(refused.value) == (
            "the team runs code (Worker: execute_python_code) that any web customer could start: give "
            "--approve-code so that an operator approves each run in the operator console, or mark the "
            "tool requires_approval: operator in the team file"
        )
        SessionHub(orchestrator_team(), OfflineModel(), store, approve_code=True)
        # A team that asks already (the customer, in a console) is asked of the operator on the web.
        SessionHub(orchestrator_team(approve_code=True), OfflineModel(), store)
    finally:
        await store.close()


def orchestrator_file(tmp_path: Path, approval: str) -> Path:
    text = (ROOT / "examples" / "orchestrator.yaml").read_text()
    assert "    call: {timeout: 5.0}\n" in text
    path = tmp_path / "team.yaml"
    path.write_text(text.replace("    call: {timeout: 5.0}\n", f"    call: {{timeout: 5.0}}\n{approval}"))
    return path


@pytest.mark.parametrize("approval", ["operator", "true"])
def test_a_team_file_that_asks_before_code_runs_is_served_and_asks_the_operator(
    tmp_path: Path, approval: str
) -> None:
    team = load_team_file(orchestrator_file(tmp_path, f"    requires_approval: {approval}\n"))
    served_team = operator_oversight(team)
    tool = served_team.agent("Worker").tools[0]
    assert isinstance(tool, ApprovalTool) and tool.person == "operator" and is_code_runner(tool)


def test_every_approval_and_irreversible_tool_is_the_operators_on_the_web() -> None:
    def look(order: str) -> str:
        """Look an order up."""
        return order

    def refund(order: str) -> str:
        """Refund an order."""
        return order

    plain, marked, asked = look, irreversible(refund), requires_approval(refund, person="customer")
    team = TeamSpec("shop", entry="A", agents=[AgentSpec("A", tools=[plain, marked, asked])])
    tools = operator_oversight(team).agent("A").tools
    assert tools[0] is plain
    assert isinstance(tools[1], ApprovalTool) and tools[1].person == "operator" and tools[1].inner is marked
    assert isinstance(tools[2], ApprovalTool) and tools[2].person == "operator"
    assert team.agent("A").tools[2] is asked and asked.person == "customer"  # the team is not changed


def test_requires_approval_of_an_approval_tool_changes_who_is_asked() -> None:
    asked = requires_approval(code_tool(), person="customer")
    assert requires_approval(asked) is asked
    assert requires_approval(asked, person="operator").person == "operator"


def test_a_tool_marked_as_running_code_counts_as_code_wrapped_or_not() -> None:
    def shell(command: str) -> str:
        """Run a shell command."""
        return command

    marked = runs_code(shell)
    assert is_code_runner(marked) and is_code_runner(requires_approval(marked))
    team = TeamSpec("lab", entry="A", agents=[AgentSpec("A", tools=[marked])])
    with pytest.raises(UnapprovedCodeError, match=r"\(A: shell\)"):
        operator_oversight(team)


async def test_a_front_end_of_a_host_refuses_code_its_workers_would_run_unapproved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SQLiteSessionStore(":memory:")
    try:
        for team in [orchestrator_team(), orchestrator_team(approve_code=True)]:  # a customer's yes: no
            with pytest.raises(UnapprovedCodeError, match="mark the tool requires_approval: operator"):
                SessionHub(team, None, store, backend=RemoteTeam(team, "127.0.0.1:1", store))
        team = operator_oversight(orchestrator_team(), approve_code=True)
        assert remote_oversight(team) == ""
        SessionHub(team, None, store, backend=RemoteTeam(team, "127.0.0.1:1", store))
        acme = acme_team()
        with caplog.at_level(logging.WARNING, logger="handoffs_runtime.web"):
            SessionHub(acme, None, store, backend=RemoteTeam(acme, "127.0.0.1:1", store))
        assert "irreversible tools (SalesAgent: execute_order, IssuesAndRepairsAgent: execute_refund)" in (
            caplog.text
        )
        with pytest.raises(TeamConfigError, match="cannot change the tools a gRPC host's workers run"):
            SessionHub(team, None, store, backend=RemoteTeam(team, "127.0.0.1:1", store), approve_code=True)
    finally:
        await store.close()


def test_a_team_file_marks_its_own_code_tool(tmp_path: Path) -> None:
    (tmp_path / "lab_tools.py").write_text(
        'def shell(command: str) -> str:\n    """Run a shell command."""\n    return command\n'
    )
    path = tmp_path / "lab.yaml"
    path.write_text("name: lab\nagents:\n- name: A\n  tools:\n  - {ref: lab_tools:shell, runs_code: true}\n")
    with pytest.raises(UnapprovedCodeError, match=r"\(A: shell\)"):
        operator_oversight(load_team_file(path))


@pytest.mark.parametrize("remote", [False, True], ids=["in process", "via a host"])
async def test_an_order_the_operator_approves_is_confirmed_by_the_customer_and_kept(
    remote: bool, tmp_path: Path, processes: list[Process]
) -> None:
    """The operator approves the irreversible order; the tool's own question is then the customer's; both
    questions are stored with their answers, and a page resuming the session reads only the customer's.
    Behind a gRPC host the same, with workers started with ``--operator-approves``."""
    address = None
    if remote:
        host, address = await start_host()
        processes.append(host)
        processes.append(await launch_worker(address, options=["--operator-approves"]))
    async with served(tmp_path, host=address) as server:
        page, session = await customer(server)
        sid, key = session["session"], session["key"]
        await page.until("question")
        await page.send({"type": "say", "text": "buy an anvil for 30 dollars"})
        await page.until("question")
        await page.send({"type": "say", "text": "yes", **page.answering()})
        await page.until("notice", text=WAITING_FOR_APPROVAL)
        asked = await approve(server, sid, "yes")
        assert asked["prompt"] == 'Allow execute_order(product="anvil", price=30)? y/n'
        confirm = (await page.until("question"))[-1]
        assert confirm["prompt"] == CONFIRM and confirm["choices"] == ["yes", "no"] and not confirm["turn"]
        await page.send({"type": "say", "text": "yes", **page.answering()})
        assert (await page.until("reply"))[-1]["text"] == "Done: execute order → Success."
        await page.socket.close()

        kinds = [e.kind for e in await server.hub.store.entries(sid)]
        assert kinds[-5:] == ["question", "question", "tool_calls", "tool_results", "reply"]  # answered first
        said = [
            (i["type"], i.get("prompt") or i.get("text"))
            for i in map(frame_json, await server.hub.history(sid))
        ]
        exchange = [
            ("question", asked["prompt"]),
            ("said", "yes"),
            ("question", CONFIRM),
            ("said", "yes"),
            ("reply", "Done: execute order → Success."),
        ]
        assert said[-5:] == exchange  # the operator console and the stored sessions view
        again, _ = await customer(server, {"type": "hello", "session": sid, "key": key})
        history = (await again.until("history"))[-1]["items"]
        assert [(i["type"], i.get("prompt") or i.get("text")) for i in history][-3:] == exchange[2:]
        assert "execute_order" not in json.dumps(history)  # the approval is the staff's business
        await again.socket.close()


async def test_a_page_that_comes_back_during_an_approval_is_told_it_waits(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page, session = await customer(server)
        await page.until("question")
        await page.say("buy an anvil for 30 dollars")
        await page.say("yes", until="notice", text=WAITING_FOR_APPROVAL)
        await page.socket.close()  # a reload
        again, _ = await customer_back(server, session)
        await again.until("notice", text=WAITING_FOR_APPROVAL)
        await approve(server, session["session"], "yes")
        assert (await again.until("question"))[-1]["prompt"] == CONFIRM
        await again.socket.close()


CONFIRM = "Order summary: anvil for $30. Confirm order? y/n"
