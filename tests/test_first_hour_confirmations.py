"""Issue 35: a confirmation names each argument wherever the person reads it (the console, a gRPC front
end; the web page in ``test_first_hour_web``), and a correction in the answer changes the argument."""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime import QueueChannel
from handoffs_runtime.distributed import FrontEnd, launch_host, launch_worker

from . import airline_team
from .cli_support import run_handoffs
from .distributed_support import TIMEOUT, Process

ROOT = Path(__file__).resolve().parent.parent
TEAM = "tests.airline_team:airline_team"
ASKED = "Could you move booking SKY456 to the 20th of December?"
FIRST = "I can change flight with booking ref “SKY456” and new date “20 December”. Shall I go ahead? (yes/no)"
CORRECTED = FIRST.replace("20 December", "21 December")
DONE = "Done: change flight → booking SKY456 now flies on 21 December."


def test_the_console_names_each_argument_and_takes_a_correction() -> None:
    done = run_handoffs("chat", "--team", TEAM, stdin=f"{ASKED}\nno, the 21st\nyes\n", cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert FIRST in done.stdout and CORRECTED in done.stdout and DONE in done.stdout


async def test_a_grpc_front_end_shows_each_argument_and_the_corrected_call_runs(
    processes: list[Process],
) -> None:
    host, address = await launch_host("127.0.0.1:0", "--team", TEAM)  # the host serves the airline
    processes.append(host)
    for agents in ("Desk", "Bookings,Baggage,Supervisor"):
        processes.append(await launch_worker(address, agents=agents.split(","), options=["--team", TEAM]))
    channel = QueueChannel()
    async with FrontEnd(airline_team.airline_team(), address, channel) as front:
        await front.open("s1")
        for text, expected in ((ASKED, FIRST), ("no, the 21st", CORRECTED), ("yes", DONE)):
            await channel.say("s1", text)
            assert (await channel.next_reply("s1", TIMEOUT)).text == expected
        await channel.leave("s1")
        await front.wait("s1")
