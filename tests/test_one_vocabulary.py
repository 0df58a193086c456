"""One vocabulary for what a person sees: the same event class reaches every destination."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from handoffs_runtime import (
    ConsoleChannel,
    Event,
    HandoffLine,
    OfflineModel,
    QueueChannel,
    register_team,
    start_session,
)
from handoffs_runtime.distributed import FrontEnd
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.teams.acme import acme_team

from .distributed_support import TIMEOUT, Process, deploy
from .event_support import REFUND_HANDOFF
from .web_support import customer, served

REFUND = "I want a refund for my shoes"
EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


class SeenConsole(ConsoleChannel):
    """The real console, keeping each event it was shown."""

    def __init__(self, lines: str) -> None:
        super().__init__(stdin=io.StringIO(lines), stdout=io.StringIO(), colour=False)
        self.seen: list[Event] = []

    async def show(self, session_id: str, event: Event) -> None:
        self.seen.append(event)
        await super().show(session_id, event)


async def on_the_console() -> Event:
    console = SeenConsole(f"{REFUND}\n")
    runtime = HandoffsRuntime()
    await register_team(runtime, acme_team(), model=OfflineModel(), channel=console)
    runtime.start()
    await start_session(runtime, "s1")
    await runtime.stop_when_idle()
    [line] = [e for e in console.seen if e.type == "handoff"]
    return line


async def on_a_web_page(tmp_path: Path) -> Event:
    async with served(tmp_path) as server:
        page, _ = await customer(server)
        await page.until("question")
        await page.send({"type": "say", "text": REFUND})
        [data] = [m for m in await page.until("reply") if m["type"] == "handoff"]
        await page.socket.close()
    fields: dict[str, Any] = {k: v for k, v in data.items() if k != "session"}  # the page's routing
    return EVENTS.validate_python(fields)


async def at_a_grpc_front_end(processes: list[Process]) -> Event:
    address = await deploy(processes, "TriageAgent,IssuesAndRepairsAgent,SalesAgent,HumanAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", REFUND)
        while (shown := await channel.next_output("s1", TIMEOUT)).type != "handoff":
            pass
        await channel.leave("s1")
        await front.wait("s1")
    return shown


async def test_a_handoff_line_reaches_the_console_a_web_page_and_a_grpc_front_end_as_one_class(
    tmp_path: Path, processes: list[Process]
) -> None:
    console = await on_the_console()
    page = await on_a_web_page(tmp_path)
    front_end = await at_a_grpc_front_end(processes)
    assert type(console) is type(page) is type(front_end) is HandoffLine
    assert console == front_end == REFUND_HANDOFF  # with the display names, from a gRPC front end too
    assert page == replace(REFUND_HANDOFF, tool="", hop=0)  # a customer's page is not told the tool
