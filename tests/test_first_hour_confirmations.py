"""Issue 35: a confirmation names each argument wherever the person reads it (the console, a gRPC front
end, the web page; in Chromium in ``test_first_hour_web``), one argument as much as several, worded in
one place, and a correction in the answer changes the argument."""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime import QueueChannel
from handoffs_runtime.confirmation import proposal
from handoffs_runtime.distributed import FrontEnd, launch_host, launch_worker

from . import airline_team
from .cli_support import run_handoffs
from .distributed_support import TIMEOUT, Process
from .web_support import customer, served

ROOT = Path(__file__).resolve().parent.parent
TEAM = "tests.airline_team:airline_team"
ASKED = "Could you move booking SKY456 to the 20th of December?"
FIRST = "I can change flight with booking ref “SKY456” and new date “20 December”. Shall I go ahead? (yes/no)"
CORRECTED = FIRST.replace("20 December", "21 December")
DONE = "Done: change flight → booking SKY456 now flies on 21 December."
ONE = "Please cancel booking SKY456"
ONE_ASKED = "I can cancel booking with booking ref “SKY456”. Shall I go ahead? (yes/no)"
"""A tool of one argument: the argument is named too, not just quoted."""
DECLINED = "All right, I won't. Is there anything else I can help with?"


def test_one_function_words_every_proposal_one_argument_or_several() -> None:
    assert proposal("cancel_booking", [("booking_ref", "SKY456")]) == ONE_ASKED
    assert proposal("change_flight", [("booking_ref", "SKY456"), ("new_date", "20 December")]) == FIRST
    assert (
        proposal("execute_refund", about="shoes")
        == "I can execute refund for “shoes”. Shall I go ahead? (yes/no)"
    )


def test_the_console_names_each_argument_and_takes_a_correction() -> None:
    said = f"{ASKED}\nno, the 21st\nyes\n{ONE}\nno\n"
    done = run_handoffs("chat", "--team", TEAM, stdin=said, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert FIRST in done.stdout and CORRECTED in done.stdout and DONE in done.stdout
    assert ONE_ASKED in done.stdout and DECLINED in done.stdout


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
        steps = (
            (ASKED, FIRST),
            ("no, the 21st", CORRECTED),
            ("yes", DONE),
            (ONE, ONE_ASKED),
            ("no", DECLINED),
        )
        for text, expected in steps:
            await channel.say("s1", text)
            assert (await channel.next_reply("s1", TIMEOUT)).text == expected
        await channel.leave("s1")
        await front.wait("s1")


async def test_the_web_page_reads_the_same_words_and_is_offered_yes_or_no(tmp_path: Path) -> None:
    async with served(tmp_path, team=airline_team.airline_team()) as server:
        page, _ = await customer(server)
        try:
            await page.until("question")
            for text, expected in ((ASKED, FIRST), (ONE, ONE_ASKED)):
                got = await page.say(text)
                assert [m["text"] for m in got if m["type"] == "reply"] == [expected]
                assert got[-1]["choices"] == ["yes", "no"]
                await page.say("no")
        finally:
            await page.socket.close()
