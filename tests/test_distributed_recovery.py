"""Nothing a person typed is lost to a restart: a host restarted under a message (or dying as it is
sent), a human agent's worker killed under the operator's answer, and a slow turn says which agent it
waits for. Real host, workers and front end on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from autogen_core import TopicId
from autogen_core.models import UserMessage
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2, cloudevent_pb2

from handoffs_runtime import Event, Notice, Question, QueueChannel, Reply
from handoffs_runtime.distributed import FrontEnd, WorkerRuntime, worker_runtime
from handoffs_runtime.distributed.host_connection import LimitedConnection
from handoffs_runtime.distributed.outbox import Outbox, SeenEvents
from handoffs_runtime.distributed.serializers import type_name
from handoffs_runtime.messages import UserTask
from handoffs_runtime.private.autogen_grpc import message_type_of
from handoffs_runtime.teams.acme import acme_team

from .distributed_support import FAST, TIMEOUT, Process, deploy, free_port, held, start_host, start_worker
from .test_distributed import PROPOSAL, REFUND, notice, reply


async def outputs_until_reply(channel: QueueChannel, session: str = "s1") -> list[Event]:
    """Everything shown up to and including the next agent reply."""
    shown: list[Event] = []
    while not shown or not isinstance(shown[-1], Reply):
        shown.append(await channel.next_output(session, TIMEOUT))
    return shown


class LateWriteReports(LimitedConnection):
    """gRPC tells that a person's message was written only after the host's answer to it was read, as it
    may under load: the writer still holds the message when the answer is heard."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._answered = asyncio.Event()

    async def recv(self) -> agent_worker_pb2.Message:
        message = await super().recv()
        self._answered.set()
        return message

    async def _write(self, stream: Any) -> None:
        while True:
            message = await self.outbox.get()
            self._answered.clear()
            await stream.write(message)
            if message_type_of(message.cloudEvent) == type_name(UserTask):
                await asyncio.wait_for(self._answered.wait(), TIMEOUT)


@pytest.mark.parametrize("late_write_reports", [False, True], ids=["prompt", "late-write-reports"])
async def test_a_message_typed_while_the_host_restarts_waits_for_its_worker(
    processes: list[Process], monkeypatch: pytest.MonkeyPatch, late_write_reports: bool
) -> None:
    """Only the message typed meanwhile goes out again: not the one answered before the restart, whose
    refusal by the restarted host would tell the person their agent is not available."""
    if late_write_reports:
        monkeypatch.setattr(worker_runtime, "LimitedConnection", LateWriteReports)
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


def turn(text: str) -> UserTask:
    return UserTask(context=[UserMessage(content=text, source="user")])


def kill_now(process: Process) -> None:
    """SIGKILL, and wait (blocking this event loop) until the process is gone: nothing here has noticed."""
    os.kill(process.pid, signal.SIGKILL)
    stat = Path(f"/proc/{process.pid}/stat")
    deadline = time.monotonic() + TIMEOUT
    while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the killed process did not exit"
        time.sleep(0.01)


async def test_a_message_published_as_the_host_dies_goes_out_after_reconnecting(
    processes: list[Process],
) -> None:
    """Its connection is dead but not yet noticed: gRPC writes the message into it, and it is lost unless
    sent again. The one delivered just before is sent again too (nobody can tell), and handled once."""
    address = f"127.0.0.1:{free_port()}"
    host, _ = await start_host(address)
    processes.append(host)
    runtime = WorkerRuntime(address, backoff=FAST)
    await runtime.start()
    received = await held(runtime, "Inbox")
    try:
        await runtime.publish_message(turn("before"), TopicId("Inbox", "s1"))
        assert await asyncio.wait_for(received.get(), TIMEOUT) == turn("before")
        kill_now(host)
        await runtime.publish_message(turn("as the host died"), TopicId("Inbox", "s1"))
        host, _ = await start_host(address)
        processes.append(host)
        await asyncio.wait_for(runtime.wait_connections(2), TIMEOUT)
        # Sent again in order: a second "before" would come first.
        assert await asyncio.wait_for(received.get(), TIMEOUT) == turn("as the host died")
    finally:
        await runtime.stop()


def event(event_id: str, session: str) -> agent_worker_pb2.Message:
    return agent_worker_pb2.Message(cloudEvent=cloudevent_pb2.CloudEvent(id=event_id, source=session))


async def test_a_lost_connection_gives_back_what_may_not_have_arrived_and_events_are_handled_once() -> None:
    outbox = Outbox(keep_for=60)
    for message in (event("answered", "s1"), event("unanswered", "s2"), event("held", "s1")):
        outbox.put_nowait(message)
    request = agent_worker_pb2.Message(request=agent_worker_pb2.RpcRequest(request_id="r"))
    outbox.put_nowait(request)
    outbox.put_nowait(event("queued", "s1"))
    for _ in range(3):  # gRPC wrote the first two and holds the third
        await outbox.get()
    outbox.heard(event("reply", "s1"))  # the host answered in session s1 after the first was written
    assert [m.cloudEvent.id for m in outbox.close()] == ["unanswered", "held", "queued"]
    with pytest.raises(StopAsyncIteration):  # gRPC's reading ends
        await outbox.get()
    seen = SeenEvents(size=2)
    assert [seen.first_time(event(i, "s1")) for i in ("a", "b", "a", "c", "a")] == [
        True,
        True,
        False,
        True,
        True,
    ]
    assert seen.first_time(request) and seen.first_time(request)


async def test_the_operators_answer_is_kept_when_the_human_agents_worker_dies(
    processes: list[Process],
) -> None:
    address = await deploy(processes, "TriageAgent")
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
