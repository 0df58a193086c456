"""Chat front ends: the person's side of a distributed team.

A front end hosts the ``UserAgent`` of its own sessions (agent type ``User.session-<id>``, so any
number of front ends can be connected at once) and knows when each session is done: the ``UserAgent``'s
``on_session_end`` hook fires when the person leaves. That replaces ``stop_when_idle``, which the gRPC
worker runtime does not have (and which could never tell a quiet session from a finished one).

Example::

    async with FrontEnd(acme_team(), "127.0.0.1:50051", QueueChannel()) as front:
        await front.open("s1")
        await front.wait("s1")
"""

from __future__ import annotations

import asyncio
import os
from types import TracebackType

import grpc  # type: ignore[import-untyped]

from handoffs_runtime.channels.base import Channel
from handoffs_runtime.distributed.credentials import ClientCredentials, Role
from handoffs_runtime.distributed.options import DEFAULT_MAX_MESSAGE_MB
from handoffs_runtime.distributed.redelivery import Redelivery
from handoffs_runtime.distributed.watch import TurnWatch, WatchedChannel, WatchedRuntime
from handoffs_runtime.distributed.worker_runtime import Backoff
from handoffs_runtime.errors import DistributedError, OtherTeamError
from handoffs_runtime.messages import Notice
from handoffs_runtime.runtime.release import SessionEndHook
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.register import register_customer_side, start_session
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.topics import check_session_id, session_agent_type

DEFAULT_NOTICE_AFTER = 10.0
"""Seconds of silence in a turn before the person reads which agent it is still waiting for."""
DEFAULT_REDELIVER_FOR = 20.0
"""Seconds a person's message is sent again while its agent is not served (workers re-registering)."""


class FrontEnd:
    """One process's customer side of a distributed team. See the module docstring.

    ``pinned=False`` registers a single ``User`` agent type that serves every session (one such front end
    per host, e.g. a load driver); the default pins each session to this front end. With
    ``turn_timeout`` seconds, a turn that hears nothing back is reported to the person (see ``watch``),
    after a "still waiting for <agent>" notice at ``notice_after`` seconds. A person's message that finds
    its agent unserved (a host restarted before the workers came back) is sent again for
    ``redeliver_for`` seconds before the person reads that the agent is not available (see ``redelivery``).
    ``credentials``: the directory with ``ca.pem`` and ``frontend.token`` (``worker.token`` when not
    pinned), for a host started with credentials. ``on_session_end`` is called with each session that
    ends; an ended session can be opened again (it resumes from the ``store``). ``greet`` opens each new
    session with the team's greeting (see ``register_customer_side``).
    """

    def __init__(
        self,
        team: TeamSpec,
        host: str,
        channel: Channel,
        *,
        pinned: bool = True,
        max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
        backoff: Backoff | None = None,
        turn_timeout: float | None = None,
        notice_after: float | None = DEFAULT_NOTICE_AFTER,
        redeliver_for: float = DEFAULT_REDELIVER_FOR,
        store: SessionStore | None = None,
        credentials: str | os.PathLike[str] | None = None,
        on_session_end: SessionEndHook | None = None,
        greet: bool = False,
        connection_notices: bool = False,
    ) -> None:
        self.team = team
        self._greet = greet
        self._on_session_end = on_session_end
        self.store = store
        # A front end pinned to its sessions is a ``frontend``; one that serves every session sees what a
        # worker sees, so it needs the worker's token.
        role: Role = "frontend" if pinned else "worker"
        self.runtime = WatchedRuntime(
            host,
            max_message_mb=max_message_mb,
            backoff=backoff,
            user_topic=team.user_topic,
            credentials=None if credentials is None else ClientCredentials.load(credentials, role),
            on_lost=self._lost if connection_notices else None,
            on_connected=self._connected if connection_notices else None,
        )
        self._host = host
        self._team_name = team.name
        self._person = channel  # notices about the connection are not the turn's progress
        self.channel = channel
        self._watch: TurnWatch | None = None
        if turn_timeout is not None:
            if turn_timeout <= 0:
                raise DistributedError(
                    f"turn_timeout must be a positive number of seconds, got {turn_timeout}"
                )
            self._watch = TurnWatch(
                self.runtime,
                user_topic=team.user_topic,
                timeout=turn_timeout,
                channel=channel,
                notice_after=notice_after,
            )
            self.runtime.watch = self._watch
            self.channel = WatchedChannel(channel, self._watch)
        self._redelivery: Redelivery | None = None
        if redeliver_for > 0:
            self._redelivery = Redelivery(self.runtime.publish_message, self.channel, window=redeliver_for)
            self.runtime.redelivery = self._redelivery
        self._pinned = pinned
        self._ended: dict[str, asyncio.Event] = {}
        self._retiring: dict[str, asyncio.Task[None]] = {}

    async def start(self) -> None:
        await self.runtime.start()
        served = self.runtime.host_team
        if served and served != self._team_name:  # the host said which team it serves: not ours
            await self.runtime.stop()
            raise OtherTeamError(
                f"the host at {self._host} serves the team {served!r}, not {self._team_name!r}: "
                "give this front end the host's team",
                served=served,
            )
        if not self._pinned:
            try:
                await self._register_user(None)
            except BaseException:
                await self.runtime.stop()
                raise

    async def _lost(self, connection: int) -> None:
        await self._tell_open_sessions(f"⚠ lost the host at {self._host}; reconnecting (what you type waits)")

    async def _connected(self, connection: int) -> None:
        if connection > 1:
            await self._tell_open_sessions(f"reconnected to the host at {self._host}")

    async def _tell_open_sessions(self, text: str) -> None:
        for session_id in [s for s, ended in self._ended.items() if not ended.is_set()]:
            await self._person.show(session_id, Notice(text=text))

    async def _register_user(self, session_id: str | None) -> None:
        """Register this front end's ``UserAgent`` (for one session, or all); if the host refuses, forget
        it again and say why, so the front end keeps working for its other sessions."""
        agent_type = (
            self.team.user_topic
            if session_id is None
            else session_agent_type(self.team.user_topic, session_id)
        )
        try:
            await self._register_customer_side(session_id)
        except ValueError as exc:  # registered here already: nothing of ours to undo
            raise DistributedError(str(exc)) from exc
        except (grpc.aio.AioRpcError, DistributedError) as exc:
            await self.runtime.retire_agent_type(agent_type)
            which = "every session" if session_id is None else f"session {session_id!r}"
            if isinstance(exc, DistributedError):
                raise DistributedError(f"could not open {which}: {exc}") from exc
            reason = (exc.details() or str(exc.code())).rstrip(".")
            refused = (
                grpc.StatusCode.INVALID_ARGUMENT,
                grpc.StatusCode.FAILED_PRECONDITION,
                grpc.StatusCode.PERMISSION_DENIED,
            )
            if exc.code() not in refused:
                raise DistributedError(
                    f"could not open {which} at the host ({reason}); it may be restarting: try again shortly"
                ) from exc
            held = "already registered" in reason
            hint = (
                "; another front end holds it: end the session there, or pick another session id"
                if held
                else ""
            )
            raise DistributedError(f"the host refused this front end for {which}: {reason}{hint}") from exc

    async def _register_customer_side(self, session_id: str | None) -> None:
        """The person's side only: the agents, and their models, live in the workers."""
        await register_customer_side(
            self.runtime,
            self.team,
            channel=self.channel,
            on_session_end=self._session_ended,
            store=self.store,
            agent_type=None if session_id is None else (lambda name: session_agent_type(name, session_id)),
            greet=self._greet,
        )

    def _session_ended(self, session_id: str) -> None:
        self._ended.setdefault(session_id, asyncio.Event()).set()
        if self._watch is not None:
            self._watch.forget(session_id)
        if self._redelivery is not None:
            self._redelivery.forget(session_id)
        # Retiring drops the session's subscriptions, and with the last of them the host forgets the type;
        # here only the small ended flag stays (for ``ended``).
        if self._pinned:
            task = asyncio.get_running_loop().create_task(
                self.runtime.retire_agent_type(session_agent_type(self.team.user_topic, session_id))
            )
            self._retiring[session_id] = task
            task.add_done_callback(lambda done: self._retired(session_id, done))
        if self._on_session_end is not None:
            self._on_session_end(session_id)

    def _retired(self, session_id: str, task: asyncio.Task[None]) -> None:
        if self._retiring.get(session_id) is task:
            del self._retiring[session_id]

    async def open(self, session_id: str) -> None:
        """Start a session: its ``UserAgent`` asks the person for their first message."""
        try:
            check_session_id(session_id)
        except ValueError as exc:
            raise DistributedError(str(exc)) from exc
        if session_id in self._ended and not self._ended[session_id].is_set():
            raise DistributedError(f"session {session_id!r} is already open on this front end")
        self._ended[session_id] = asyncio.Event()
        retiring = self._retiring.get(session_id)
        if retiring is not None:  # ended a moment ago: the host must forget its type before it comes back
            await asyncio.gather(retiring, return_exceptions=True)
        if self._pinned:
            try:
                await self._register_user(session_id)
            except BaseException:
                del self._ended[session_id]
                raise
        await start_session(self.runtime, session_id, user_topic=self.team.user_topic)

    async def wait(self, session_id: str | None = None) -> None:
        """Wait until ``session_id`` (or every open session) has ended, and the host has let it go."""
        ids = [session_id] if session_id is not None else list(self._ended)
        await asyncio.gather(*(self._ended[s].wait() for s in ids))
        await asyncio.gather(*self._retiring.values(), return_exceptions=True)

    def ended(self, session_id: str) -> bool:
        return session_id in self._ended and self._ended[session_id].is_set()

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.close()
        if self._redelivery is not None:
            self._redelivery.close()
        await asyncio.gather(*self._retiring.values(), return_exceptions=True)
        if self.runtime.running:
            await self.runtime.stop()

    async def __aenter__(self) -> FrontEnd:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


async def chat_remote(
    team: TeamSpec,
    host: str,
    channel: Channel,
    *,
    session_id: str,
    banner: str = "",
    max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
    turn_timeout: float | None = None,
    connect_timeout: float | None = 30.0,
    store: SessionStore | None = None,
    credentials: str | os.PathLike[str] | None = None,
) -> str:
    """One conversation through a host, until the person leaves (``handoffs chat --host``).

    Gives up after ``connect_timeout`` seconds if no host answers at first; later, it reconnects forever.
    """
    front = FrontEnd(
        team,
        host,
        channel,
        max_message_mb=max_message_mb,
        turn_timeout=turn_timeout,
        backoff=Backoff(give_up_after=connect_timeout),
        store=store,
        credentials=credentials,
        greet=True,
        connection_notices=True,
    )
    async with front:
        if banner:
            await channel.show(session_id, Notice(text=banner))
        await channel.show(session_id, Notice(text=f"session {session_id} via {host} · type 'exit' to leave"))
        await front.open(session_id)
        await front.wait(session_id)
    return session_id
