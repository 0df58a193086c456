"""Workers: processes that serve some of a team's agents for a host.

A worker registers some of the team's agents (all when ``agents`` is None), optionally as shard ``i``
of ``N`` of each (``topics.shard_agent_type``), and reaches people through the sessions' front ends.
Given the session store the front ends use, its agents keep their irreversible calls in its effect
ledger, so a worker killed inside a tool and restarted does not run the tool again on a resent turn.

Example::

    runtime, names = await start_worker(acme_team(), "127.0.0.1:50051", model=OfflineModel(),
                                        agents=["SalesAgent"], shard=(0, 2))
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping

import grpc  # type: ignore[import-untyped]
from autogen_core.models import ChatCompletionClient

from handoffs_runtime.agents.person import PersonChannel
from handoffs_runtime.channels.base import Channel, OnRecord
from handoffs_runtime.distributed.credentials import ClientCredentials
from handoffs_runtime.distributed.options import DEFAULT_MAX_MESSAGE_MB, logger
from handoffs_runtime.distributed.relay import relay_channel
from handoffs_runtime.distributed.worker_runtime import Backoff, WorkerRuntime
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.messages import Person
from handoffs_runtime.sessions.effects import ledger_of
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.build import build_team
from handoffs_runtime.team.register import register_agents
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.topics import shard_agent_type


def parse_shard_option(text: str | None) -> tuple[int, int] | None:
    """``"i/N"`` (0-based ``i``) as ``(i, N)``; a clear error for anything else."""
    if text is None:
        return None
    index, sep, count = text.partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise DistributedError(f"--shard {text!r} is not i/N, e.g. --shard 0/2 for the first of two shards")
    i, n = int(index), int(count)
    if n < 1 or not 0 <= i < n:
        raise DistributedError(f"--shard {text!r}: i must be in 0..N-1 (shards are numbered from 0)")
    return i, n


async def start_worker(
    team: TeamSpec,
    host: str,
    *,
    model: ChatCompletionClient | None = None,
    channel: Channel | None = None,
    agents: Iterable[str] | None = None,
    shard: tuple[int, int] | None = None,
    models: Mapping[str, ChatCompletionClient] | None = None,
    max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
    backoff: Backoff | None = None,
    on_connected: Callable[[int], Awaitable[None] | None] | None = None,
    takeover_timeout: float = 10.0,
    credentials: str | os.PathLike[str] | None = None,
    store: SessionStore | None = None,
) -> tuple[WorkerRuntime, list[str]]:
    """Connect to ``host`` and register ``agents`` of ``team`` (all when None); returns the runtime and names.

    ``model`` (or ``models``, or each ``AgentSpec.model``) is needed only by the AI and worker agents
    among ``agents``. ``channel`` reaches the people; by default a ``RelayChannel`` to each session's
    front end, which relays text deltas and tool activity too when ``team.policy.stream`` is on.
    A type still held by another worker is retried for ``takeover_timeout`` seconds: a worker restarted
    right after a crash often reaches the host before the host has noticed the crash.
    ``credentials``: the directory with ``ca.pem`` and ``worker.token``, for a host started with them.
    ``store``: the session store of the front ends, for the effect ledger only (the front ends still
    keep the conversation); it must keep a ledger.
    """
    build_team(team)  # every misconfiguration is raised before connecting
    secure = None if credentials is None else ClientCredentials.load(credentials, "worker")
    wanted = list(agents) if agents is not None else list(team.names)
    unknown = sorted(set(wanted) - set(team.names))
    if unknown or not wanted:
        missing = f"has no {', '.join(unknown)}" if unknown else "needs at least one agent"
        raise DistributedError(f"--agents: team {team.name!r} {missing}; it has {', '.join(team.names)}")
    agent_type = None if shard is None else (lambda name: shard_agent_type(name, shard[0], shard[1]))
    if store is not None and ledger_of(store) is None:
        raise DistributedError(
            f"--store: {type(store).__name__} keeps no effect ledger; use SQLite or PostgreSQL"
        )
    delays = (backoff or Backoff()).delays()
    deadline = asyncio.get_running_loop().time() + takeover_timeout
    while True:
        runtime = WorkerRuntime(
            host,
            max_message_mb=max_message_mb,
            backoff=backoff,
            on_connected=on_connected,
            user_topic=team.user_topic,
            credentials=secure,
        )
        await runtime.start()
        relay = channel or relay_channel(runtime, user_topic=team.user_topic, stream=team.policy.stream)
        try:
            await register_agents(
                runtime,
                team,
                channel=relay if store is None else LedgerChannel(relay, store),
                only=wanted,
                model=model,
                models=models,
                agent_type=agent_type,
            )
            return runtime, wanted
        except grpc.aio.AioRpcError as exc:
            await runtime.stop()
            taken = exc.code() == grpc.StatusCode.INVALID_ARGUMENT and "already registered" in (
                exc.details() or ""
            )
            delay = next(delays)
            if taken and asyncio.get_running_loop().time() + delay < deadline:
                # Most often our own predecessor, killed a moment ago: the host drops it when it notices.
                logger.info("the host still has %s; retrying in %.2fs", exc.details(), delay)
                await asyncio.sleep(delay)
                continue
            hint = "; to serve one agent from several workers, start each with --shard i/N" if taken else ""
            raise DistributedError(f"the host refused this worker: {exc.details()}{hint}") from exc
        except BaseException:  # an agent without a model, a cancellation: the connection goes too
            await runtime.stop()
            raise


class LedgerChannel(PersonChannel):
    """A worker's channel that lends its agents the session store for the effect ledger and nothing else.

    A question on record still goes to the session's front end, which keeps it in the transcript: the
    worker writes no conversation of its own, so nothing is stored twice.
    """

    async def ask_on_record(
        self, session_id: str, prompt: str, *, person: Person = "customer", asker: str = ""
    ) -> str | None:
        inner = self.inner
        if isinstance(inner, OnRecord):
            return await inner.ask_on_record(session_id, prompt, person=person, asker=asker)
        return await inner.ask(session_id, prompt, person=person)
