"""Nothing a person typed is lost to a restart: a host restarted under a message, a human agent's worker
killed under the operator's answer, and a slow turn says which agent it waits for. Real host, workers
and front end on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from handoffs_runtime import Event, Notice, Question, QueueChannel, Reply
from handoffs_runtime.distributed import Backoff, FrontEnd
from handoffs_runtime.teams.acme import acme_team

from .distributed_support import TIMEOUT, Process, free_port, start_host, start_worker
from .test_distributed import PROPOSAL, REFUND, notice, reply

FAST = Backoff(initial=0.01, maximum=0.05)


@pytest.fixture
async def processes() -> AsyncIterator[list[Process]]:
    started: list[Process] = []
    yield started
    await asyncio.gather(*(p.kill() for p in started))


async def outputs_until_reply(channel: QueueChannel, session: str = "s1") -> list[Event]:
    """Everything shown up to and including the next agent reply."""
    shown: list[Event] = []
    while not shown or not isinstance(shown[-1], Reply):
        shown.append(await channel.next_output(session, TIMEOUT))
    return shown


async def test_a_message_typed_while_the_host_restarts_waits_for_its_worker(processes: list[Process]) -> None:
    address = f"127.0.0.1:{free_port()}"
    host, _ = await start_host(address)
    processes.append(host)
    worker = await start_worker(address, "TriageAgent,IssuesAndRepairsAgent")
    processes.append(worker)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel, backoff=FAST, redeliver_for=2 * TIMEOUT) as front:
        await front.open("s1")
        await channel.say("s1", "hello")
        assert (await reply(channel))[0] == "TriageAgent"
        await asyncio.gather(host.kill(), worker.kill())
        await channel.say("s1", REFUND)  # typed while the host is down
        host, _ = await start_host(address)
        processes.append(host)
        # The front end is back before any worker: the host has nobody to give the message to yet.
        await asyncio.wait_for(front.runtime.wait_connections(2), TIMEOUT)
        assert "not available yet" in await notice(channel, "not available")
        processes.append(await start_worker(address, "TriageAgent,IssuesAndRepairsAgent"))
        shown = await outputs_until_reply(channel)
        assert (shown[-1].agent, shown[-1].text) == PROPOSAL  # type: ignore[union-attr]
        assert not [o for o in shown if isinstance(o, Notice) and "not available" in o.text]
        await channel.leave("s1")
        await front.wait("s1")


async def test_the_operators_answer_is_kept_when_the_human_agents_worker_dies(
    processes: list[Process],
) -> None:
    host, address = await start_host()
    processes.append(host)
    processes.append(await start_worker(address, "TriageAgent"))
    human = await start_worker(address, "HumanAgent")
    processes.append(human)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel, turn_timeout=2) as front:
        await front.open("s1")
        await channel.say("s1", "let me talk to a person")
        await notice(channel, "ACME operator has joined")
        asked = await channel.next_output("s1", TIMEOUT)
        assert isinstance(asked, Question) and asked.person == "operator"
        await human.kill()
        await channel.say("s1", "Hello, Sam here.", person="operator")  # sent as the worker died
        text = await notice(channel, "did not get")
        assert text.startswith("⚠ ACME operator did not get your last message")  # the agent that missed it
        assert "the operator's answer did not arrive either and is kept for them" in text
        processes.append(await start_worker(address, "HumanAgent"))
        await channel.say("s1", "hello? are you there?")
        asked = await channel.next_output("s1", TIMEOUT)
        kept = "your answer “Hello, Sam here.” did not arrive; press Enter to send it again"
        assert asked == Question(prompt=f"HumanAgent input ({kept})", person="operator")
        await channel.say("s1", "", person="operator")  # Enter: the kept answer goes out
        assert await reply(channel) == ("HumanAgent", "Hello, Sam here.")
        await channel.leave("s1")
        await front.wait("s1")


async def test_a_slow_turn_says_which_agent_it_is_still_waiting_for(processes: list[Process]) -> None:
    host, address = await start_host()
    processes.append(host)
    slow = await start_worker(address, "TriageAgent", echo=True, latency=2 * TIMEOUT)
    processes.append(slow)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel, turn_timeout=2 * TIMEOUT, notice_after=0.5) as front:
        await front.open("s1")
        await channel.say("s1", "hello")
        assert await notice(channel, "still waiting") == "… still waiting for TriageAgent"
