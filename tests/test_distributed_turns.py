"""The turn watch of a front end, against an agent on another runtime that answers only when told to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from autogen_core import AgentId
from autogen_core.models import AssistantMessage

from handoffs_runtime import HandoffLine, Notice, QueueChannel
from handoffs_runtime.distributed import FrontEnd, Host, WorkerRuntime
from handoffs_runtime.messages import AgentResponse, UserTask
from handoffs_runtime.teams.acme import TRIAGE_AGENT, acme_team
from handoffs_runtime.topics import USER, session_topic

from .distributed_support import FAST, TIMEOUT, held


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    async with Host("127.0.0.1:0") as running:
        yield running


async def held_triage(address: str) -> tuple[WorkerRuntime, asyncio.Queue[UserTask]]:
    worker = WorkerRuntime(address, backoff=FAST)
    await worker.start()
    return worker, await held(worker, TRIAGE_AGENT)


async def answer(worker: WorkerRuntime, task: UserTask, text: str) -> None:
    context = [*task.context, AssistantMessage(content=text, source=TRIAGE_AGENT)]
    response = AgentResponse(reply_to_topic_type=TRIAGE_AGENT, context=context)
    # As TriageAgent: the person's side accepts replies only from the team's agents.
    await worker.publish_message(response, session_topic(USER, "s1"), sender=AgentId(TRIAGE_AGENT, "s1"))


async def timeout_notice(channel: QueueChannel) -> str:
    while True:
        output = await channel.next_output("s1", TIMEOUT)
        if isinstance(output, Notice) and "did not get your last message" in output.text:
            return output.text
        assert not isinstance(output, Notice) or isinstance(output, HandoffLine), output


async def test_a_reply_after_the_turn_was_given_up_is_dropped(host: Host) -> None:
    worker, received = await held_triage(str(host.address))
    channel = QueueChannel()
    try:
        async with FrontEnd(acme_team(), str(host.address), channel, turn_timeout=0.2, backoff=FAST) as front:
            await front.open("s1")
            await channel.say("s1", "first")
            late = await asyncio.wait_for(received.get(), TIMEOUT)
            await timeout_notice(channel)  # the person is asked again
            await answer(worker, late, "late answer to first")
            await channel.say("s1", "second")
            turn = await asyncio.wait_for(received.get(), TIMEOUT)
            await answer(worker, turn, "answer to second")
            reply = await channel.next_reply("s1", TIMEOUT)
            assert reply.text == "answer to second"  # the late one never reached the person
            await channel.leave("s1")
            await asyncio.wait_for(front.wait("s1"), TIMEOUT)
    finally:
        await worker.stop(grace=0.1)


async def test_the_turn_timeout_notice_shows_while_the_host_is_down() -> None:
    host = Host("127.0.0.1:0")
    await host.start()
    worker, received = await held_triage(str(host.address))
    channel = QueueChannel()
    front = FrontEnd(acme_team(), str(host.address), channel, turn_timeout=0.2, backoff=FAST)
    try:
        await front.start()
        await front.open("s1")
        await channel.say("s1", "hello")
        await asyncio.wait_for(received.get(), TIMEOUT)
        await host.stop(grace=0)
        text = await timeout_notice(channel)
        assert "no answer for 0.2s" in text
        await channel.leave("s1")
        await asyncio.wait_for(front.wait("s1"), TIMEOUT)
    finally:
        await worker.stop(grace=0.1)
        await front.stop()
        await host.stop()
