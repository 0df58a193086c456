"""Issue 35: the host says which team it serves; a chat front end of another team says so in one line
(exit 2) instead of waiting and blaming the agents, and one started without ``--team`` takes the host's
team when it is built in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from handoffs_runtime import QueueChannel
from handoffs_runtime.distributed import FrontEnd, launch_host
from handoffs_runtime.errors import OtherTeamError
from handoffs_runtime.teams.orchestrator import orchestrator_team

from . import airline_team
from .cli_support import run_handoffs
from .distributed_support import Process

ROOT = Path(__file__).resolve().parent.parent
TEAM = "tests.airline_team:airline_team"


async def test_a_front_end_of_another_team_is_one_line_and_exit_2(processes: list[Process]) -> None:
    host, address = await launch_host("127.0.0.1:0", "--team", TEAM)
    processes.append(host)
    done = await asyncio.to_thread(
        run_handoffs, "chat", "--host", address, "--store", ":memory:", "--connect-timeout", "10", cwd=ROOT
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "serves the team 'airline', not 'acme'" in lines[0] and "--team" in lines[0]
    assert "ACME" not in done.stdout  # no banner of a team it does not talk to


async def test_the_library_front_end_refuses_another_team_by_name(processes: list[Process]) -> None:
    host, address = await launch_host("127.0.0.1:0", "--team", TEAM)
    processes.append(host)
    front = FrontEnd(orchestrator_team(), address, QueueChannel())
    with pytest.raises(OtherTeamError) as refused:
        await front.start()
    assert refused.value.served == airline_team.airline_team().name


async def test_without_team_the_front_end_takes_the_hosts_built_in_team(processes: list[Process]) -> None:
    host, address = await launch_host("127.0.0.1:0", "--team", "orchestrator")
    processes.append(host)
    done = await asyncio.to_thread(
        run_handoffs, "chat", "--host", address, "--store", ":memory:", "--connect-timeout", "10", cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    team = orchestrator_team()
    assert f"handoffs · {team.title or team.name} · distributed" in done.stdout
