"""The team across real processes on loopback: a host, workers and a front end on the gRPC runtime."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from autogen_core import AgentId
from autogen_core.models import UserMessage
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2

from handoffs_runtime import HandoffLine, Notice, Question, QueueChannel, UserTask
from handoffs_runtime.channels.base import describe
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed import Backoff, FrontEnd, Host, RelayChannel, WorkerRuntime
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.topics import shard_of

from .distributed_support import TIMEOUT, Process, deploy, free_port, start_host, start_worker

REFUND = "I want a refund for my shoes"
PROPOSAL = "IssuesAndRepairsAgent", "I can execute refund for “shoes”. Shall I go ahead? (yes/no)"
DONE = "IssuesAndRepairsAgent", "Done: look up item → item_132612938; execute refund → success."


async def reply(channel: QueueChannel, session: str = "s1") -> tuple[str, str]:
    answer = await channel.next_reply(session, TIMEOUT)
    return answer.agent, answer.text


async def notice(channel: QueueChannel, pattern: str, session: str = "s1") -> str:
    """The next notice or handoff line matching ``pattern``, as the console prints it; skipping agent
    replies would be a bug: fail on one."""
    while True:
        output = await channel.next_output(session, TIMEOUT)
        assert isinstance(output, Notice | HandoffLine), f"expected a notice like {pattern!r}, got {output}"
        if re.search(pattern, text := describe(output)):
            return text


async def test_refund_path_across_two_workers(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent", "IssuesAndRepairsAgent,SalesAgent,HumanAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", REFUND)
        assert await notice(channel, "has joined") == "↪ ACME repairs has joined"
        assert await reply(channel) == PROPOSAL
        await channel.say("s1", "yes")
        assert await reply(channel) == DONE
        await channel.leave("s1")
        await front.wait("s1")
        assert front.ended("s1")


async def test_two_hundred_sessions_on_sharded_workers_each_stay_on_one_shard(
    processes: list[Process],
) -> None:
    host, address = await start_host()
    processes.append(host)
    shards = await asyncio.gather(
        *(start_worker(address, "TriageAgent", shard=f"{i}/2", echo=True) for i in range(2))
    )
    processes.extend(shards)
    sessions = [f"session-{n}" for n in range(200)]
    channel = ScriptedChannel.for_sessions({s: ["hello", "again", "and again"] for s in sessions})
    async with FrontEnd(acme_team(), address, channel, pinned=False) as front:
        for session in sessions:
            await front.open(session)
        await asyncio.wait_for(front.wait(), 90)
    served = {0: 0, 1: 0}
    for session in sessions:
        labels = {re.sub(r" turn \d+$", "", r.text) for r in channel.replies(session)}
        assert len(channel.replies(session)) == 3, channel.shown[session]
        [label] = labels  # every turn of a session reached the same process
        expected = shard_of(session, 2)
        assert label.startswith(f"TriageAgent shard {expected}/2 pid ")
        served[expected] += 1
    assert min(served.values()) > 50, served  # the load spreads


async def test_unserved_agent_is_reported_to_the_person(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", "I'd like to buy rocket skates")
        text = await notice(channel, "not available")
        assert text.startswith("⚠ ACME sales is not available right now (no worker serves it)")
        await channel.say("s1", "exit")
        await notice(channel, "ended")
        await front.wait("s1")


async def test_worker_killed_mid_session_and_restarted_the_session_goes_on(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent")
    issues = await start_worker(address, "IssuesAndRepairsAgent")
    processes.append(issues)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", REFUND)
        assert await reply(channel) == PROPOSAL
        await issues.kill()
        restarted = await start_worker(address, "IssuesAndRepairsAgent")
        processes.append(restarted)
        await channel.say("s1", "yes")  # the context travels in the message: the new worker carries on
        assert await reply(channel) == DONE
        await channel.leave("s1")
        await front.wait("s1")


async def test_host_restarted_workers_and_front_end_reconnect(processes: list[Process]) -> None:
    address = f"127.0.0.1:{free_port()}"
    host, _ = await start_host(address)
    processes.append(host)
    workers = [
        await start_worker(address, "TriageAgent"),
        await start_worker(address, "IssuesAndRepairsAgent"),
    ]
    processes.extend(workers)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", REFUND)
        assert await reply(channel) == PROPOSAL
        await host.kill()
        host, _ = await start_host(address)
        processes.append(host)
        for worker in workers:
            await worker.expect(r"^worker reconnected")
        await asyncio.wait_for(front.runtime.wait_connections(2), TIMEOUT)
        await channel.say("s1", "yes")
        assert await reply(channel) == DONE
        await channel.leave("s1")
        await front.wait("s1")
    for worker in workers:
        assert await worker.stop() == 0


async def test_a_context_over_four_mebibytes_crosses_the_wire(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent,IssuesAndRepairsAgent")
    channel = QueueChannel()
    big = "refund my shoes " + "x" * (5 * 1024 * 1024)
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", big)
        agent, text = await reply(channel)
        assert agent == "IssuesAndRepairsAgent"
        assert text.startswith("I can execute refund")
        await channel.say("s1", "yes")
        assert await reply(channel) == DONE
        await channel.leave("s1")
        await front.wait("s1")


async def test_shutdown_of_a_worker_is_clean(processes: list[Process]) -> None:
    host, address = await start_host()
    processes.append(host)
    worker = await start_worker(address, "TriageAgent")
    processes.append(worker)
    assert await worker.stop() == 0
    assert await host.stop() == 0


async def test_a_message_over_the_limit_is_refused_with_a_clear_notice(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel, max_message_mb=1) as front:
        await front.open("s1")
        await channel.say("s1", "hello " + "x" * (2 * 1024 * 1024))
        text = await notice(channel, "did not get")
        assert text.startswith(
            "⚠ ACME assistant did not get your last message: the conversation is 2.0 MiB, over the"
        )
        assert "--max-message-mb" in text
        await channel.say("s1", "hello")  # a message under the limit goes through
        agent, _ = await reply(channel)
        assert agent == "TriageAgent"
        await channel.leave("s1")
        await front.wait("s1")


async def test_a_tool_on_a_worker_asks_the_person_at_the_front_end(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent,SalesAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", "I'd like to buy rocket skates")
        agent, text = await reply(channel)
        assert agent == "SalesAgent" and "Shall I go ahead?" in text
        await channel.say("s1", "yes")
        await channel.say("s1", "y")  # execute_order's confirmation, asked from the worker
        agent, text = await reply(channel)
        assert (agent, text.endswith("execute order → Success.")) == ("SalesAgent", True), text
        await channel.leave("s1")
        await front.wait("s1")


async def test_the_human_agent_on_a_worker_reaches_the_operator_at_the_front_end(
    processes: list[Process],
) -> None:
    address = await deploy(processes, "TriageAgent,HumanAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        await channel.say("s1", "let me talk to a person")
        await channel.say("s1", "Hello, Bob from ACME here.", person="operator")
        await notice(channel, "ACME operator has joined")
        prompt = await channel.next_output("s1", TIMEOUT)
        assert isinstance(prompt, Question) and prompt.person == "operator"
        assert prompt.prompt.startswith("HumanAgent input (/handoff AGENT hands the conversation back")
        assert await reply(channel) == ("HumanAgent", "Hello, Bob from ACME here.")
        await channel.leave("s1")
        await front.wait("s1")


async def test_asking_the_person_of_a_session_nobody_serves_answers_none() -> None:
    async with Host("127.0.0.1:0") as host:
        runtime = WorkerRuntime(str(host.address))
        await runtime.start()
        try:
            relay = RelayChannel(runtime)
            assert await asyncio.wait_for(relay.ask("ghost", "Still there?"), TIMEOUT) is None
        finally:
            await runtime.stop()


async def test_a_worker_without_a_host_gives_up_with_what_to_do() -> None:
    runtime = WorkerRuntime(f"127.0.0.1:{free_port()}", backoff=Backoff(initial=0.01, give_up_after=0.2))
    with pytest.raises(DistributedError, match="start one with `handoffs host"):
        await runtime.start()


async def test_a_worker_killed_during_a_turn_the_person_is_told_and_says_it_again(
    processes: list[Process],
) -> None:
    host, address = await start_host()
    processes.append(host)
    slow = await start_worker(address, "TriageAgent", echo=True, latency=30)
    processes.append(slow)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel, turn_timeout=1) as front:
        await front.open("s1")
        await channel.say("s1", "hello")
        await slow.expect(r"^thinking s1$")  # the turn is in the worker's hands...
        await slow.kill()  # ...and dies with it
        text = await notice(channel, "did not get")
        assert text.startswith("⚠ ACME assistant did not get your last message: no answer for 1s")
        processes.append(await start_worker(address, "TriageAgent", echo=True))
        await channel.say("s1", "hello")
        agent, text = await reply(channel)
        assert agent == "TriageAgent" and text.endswith("turn 2")  # the lost message was not kept twice
        await channel.leave("s1")
        await front.wait("s1")


def test_a_turn_timeout_must_be_positive() -> None:
    with pytest.raises(DistributedError, match="positive"):
        FrontEnd(acme_team(), "127.0.0.1:1", QueueChannel(), turn_timeout=0)


async def test_a_request_to_a_sharded_type_reaches_the_shard_of_its_key(processes: list[Process]) -> None:
    host, address = await start_host()
    processes.append(host)
    shard = await start_worker(address, "TriageAgent", shard="0/2", echo=True, latency=0.01)
    processes.append(shard)
    on_shard_0 = next(f"k{n}" for n in range(100) if shard_of(f"k{n}", 2) == 0)
    on_shard_1 = next(f"k{n}" for n in range(100) if shard_of(f"k{n}", 2) == 1)
    runtime = WorkerRuntime(address)
    await runtime.start()
    task = UserTask(context=[UserMessage(content="hi", source="User")])
    # The agent's handler returns nothing, which autogen's gRPC worker cannot send back: watch it arrive.
    request = asyncio.ensure_future(runtime.send_message(task, AgentId("TriageAgent", on_shard_0)))
    try:
        await shard.expect(rf"^thinking {on_shard_0}$")
        with pytest.raises(Exception, match=f"nobody serves TriageAgent for session {on_shard_1}"):
            await asyncio.wait_for(runtime.send_message(task, AgentId("TriageAgent", on_shard_1)), TIMEOUT)
    finally:
        request.cancel()
        await runtime.stop()


async def test_an_ended_session_is_no_longer_routed_to_its_front_end(processes: list[Process]) -> None:
    address = await deploy(processes, "TriageAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:

        async def subscribers() -> set[str]:
            connection = front.runtime._host_connection
            assert connection is not None
            reply = await connection.stub.GetSubscriptions(
                agent_worker_pb2.GetSubscriptionsRequest(), metadata=connection.metadata
            )
            return {s.typeSubscription.agent_type for s in reply.subscriptions}

        for session in ("s1", "s2"):
            await front.open(session)
        assert {"User.session-s1", "User.session-s2"} <= await subscribers()
        await channel.leave("s1")
        await front.wait("s1")
        await asyncio.gather(*front._retiring)
        remaining = await subscribers()
        assert "User.session-s1" not in remaining and "User.session-s2" in remaining
        await channel.leave("s2")
        await front.wait("s2")


async def test_a_front_end_with_a_store_resumes_after_it_and_a_worker_were_killed(
    processes: list[Process], tmp_path: Path
) -> None:
    from handoffs_runtime import SQLiteSessionStore

    address = await deploy(processes, "TriageAgent")
    specialist = await start_worker(address, "IssuesAndRepairsAgent,SalesAgent,HumanAgent")
    processes.append(specialist)
    path = tmp_path / "sessions.sqlite3"
    store = SQLiteSessionStore(path)
    channel = QueueChannel()
    front = FrontEnd(acme_team(), address, channel, store=store)
    await front.start()
    await front.open("s1")
    await channel.say("s1", REFUND)
    assert await reply(channel) == PROPOSAL  # shown, so stored
    await front.stop()  # the front end goes away mid-session ...
    await store.close()
    await specialist.kill()  # ... and so does the worker that held the conversation
    processes.append(await start_worker(address, "IssuesAndRepairsAgent,SalesAgent,HumanAgent"))

    store = SQLiteSessionStore(path)
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel, store=store) as front:
        await front.open("s1")
        await notice(channel, "resuming session s1 with ACME repairs")
        await channel.say("s1", "yes")
        assert await reply(channel) == DONE  # the stored proposal was carried to the new worker
        await channel.leave("s1")
        await front.wait("s1")
    await store.close()
