"""Several chat front ends on one real host: who may serve which session, and what a refused one says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from handoffs_runtime import QueueChannel
from handoffs_runtime.distributed import FrontEnd, Host
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.teams.acme import acme_team

from .distributed_support import FAST, TIMEOUT, free_port


@pytest.fixture
async def address() -> AsyncIterator[str]:
    async with Host("127.0.0.1:0") as host:
        yield str(host.address)


def front_end(address: str, channel: QueueChannel, *, pinned: bool = True) -> FrontEnd:
    return FrontEnd(acme_team(), address, channel, pinned=pinned, backoff=FAST)


async def leave(front: FrontEnd, channel: QueueChannel, session: str) -> None:
    await channel.leave(session)
    await asyncio.wait_for(front.wait(session), TIMEOUT)


async def test_a_session_id_that_names_another_placement_is_refused_before_connecting() -> None:
    front = front_end("127.0.0.1:1", QueueChannel())
    with pytest.raises(DistributedError, match=r"contains '\.session-'.*pick an id without it"):
        await front.open("a.session-b")
    with pytest.raises(DistributedError, match=r"contains '\.shard-'"):
        await front.open("x.shard-0-of-2")


async def test_a_front_end_refused_a_session_says_why_and_can_open_it_later(address: str) -> None:
    first_channel, second_channel = QueueChannel(), QueueChannel()
    first = front_end(address, first_channel)
    await first.start()
    try:
        async with front_end(address, second_channel) as second:
            await first.open("s1")
            with pytest.raises(DistributedError, match="another front end holds it"):
                await second.open("s1")
            await second.open("s2")  # the refusal broke nothing
            await leave(second, second_channel, "s2")
            await leave(first, first_channel, "s1")
            await first.stop()  # the host forgets its session types when it leaves
            await second.open("s1")
            await leave(second, second_channel, "s1")
    finally:
        if first.runtime.running:
            await first.stop()


async def test_an_unpinned_front_end_is_refused_beside_pinned_ones(address: str) -> None:
    channel = QueueChannel()
    async with front_end(address, channel) as pinned:
        await pinned.open("s1")
        with pytest.raises(DistributedError, match="front ends already serve their own sessions"):
            await front_end(address, QueueChannel(), pinned=False).start()
        await leave(pinned, channel, "s1")


async def test_a_pinned_front_end_is_refused_beside_an_unpinned_one(address: str) -> None:
    async with front_end(address, QueueChannel(), pinned=False), front_end(address, QueueChannel()) as pinned:
        with pytest.raises(DistributedError, match="pinned=False already serves every session as User"):
            await pinned.open("s1")
        assert not pinned.ended("s1")


async def test_a_session_ended_on_one_front_end_can_be_opened_on_another(address: str) -> None:
    # The host forgets an ended session's type, so it keeps no entry per session ever held.
    first_channel, second_channel = QueueChannel(), QueueChannel()
    async with front_end(address, first_channel) as first, front_end(address, second_channel) as second:
        for session in ("s1", "s2"):
            await first.open(session)
            await leave(first, first_channel, session)
            await second.open(session)
            await leave(second, second_channel, session)


async def test_opening_a_session_while_the_host_is_away_fails_clearly_and_works_later() -> None:
    address = f"127.0.0.1:{free_port()}"
    channel = QueueChannel()
    async with Host(address):
        front = front_end(address, channel)
        await front.start()
    try:
        with pytest.raises(DistributedError, match="try again shortly"):
            await front.open("s1")
        async with Host(address):
            await asyncio.wait_for(front.runtime.wait_connections(2), TIMEOUT)
            await front.open("s1")
            await leave(front, channel, "s1")
            await front.stop()
    finally:
        if front.runtime.running:
            await front.stop()
