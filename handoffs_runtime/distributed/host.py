"""The gRPC host: autogen-ext's host with placement, credentials and roles."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from types import TracebackType

import grpc  # type: ignore[import-untyped]
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2_grpc

from handoffs_runtime.distributed.auth import TokenCheck
from handoffs_runtime.distributed.credentials import HostCredentials
from handoffs_runtime.distributed.host_servicer import DEFAULT_GRACE, TeamHostServicer
from handoffs_runtime.distributed.options import (
    DEFAULT_MAX_MESSAGE_MB,
    Address,
    grpc_options,
    logger,
    max_message_bytes,
    server_keepalive,
)
from handoffs_runtime.distributed.roles import RolePolicy
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.topics import USER

"""Seconds an agent type registered by a connection without a channel is kept before it is released."""


def security_notice(address: Address, *, credentials: bool, insecure: bool = False) -> str | None:
    """What whoever starts a host must know about who can join it; raises if it would be unsafe."""
    if credentials:
        return None
    if address.is_loopback:
        return (
            f"no --credentials: {address} is reachable from this machine only, but every process and user "
            "on it can join the team and read every conversation (see `handoffs credentials create`)"
        )
    if not insecure:
        raise DistributedError(
            f"refusing to listen on {address} without credentials: anyone who reaches it could join the "
            "team. Create them with `handoffs credentials create DIR` and pass --credentials DIR, "
            "or pass --insecure to accept that"
        )
    return (
        f"--insecure: whoever reaches {address} can join the team, read every conversation and write to "
        "every person's screen, and nothing on the wire is encrypted"
    )


class Host:
    """The gRPC host of a distributed team; binds to loopback unless told otherwise (see the module).

    With ``credentials`` (a directory from ``handoffs credentials create``) the host speaks TLS only,
    refuses every call without a role's token and holds each role to ``security.RolePolicy``; the
    team's ``agent_types`` say what a worker may register (``None``: any agent type), and ``team`` (its
    name) is told to every client that opens a channel, so a front end of another team can say so.
    Without credentials it listens on loopback only, unless ``insecure``.
    """

    def __init__(
        self,
        address: str | Address = "127.0.0.1:0",
        *,
        max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
        user_topic: str = USER,
        credentials: str | os.PathLike[str] | HostCredentials | None = None,
        insecure: bool = False,
        agent_types: Iterable[str] | None = None,
        grace: float = DEFAULT_GRACE,
        team: str = "",
    ) -> None:
        self._requested = address if isinstance(address, Address) else Address.parse(address)
        self._limit = max_message_bytes(max_message_mb)
        self._user_topic = user_topic
        self._credentials = (
            credentials
            if credentials is None or isinstance(credentials, HostCredentials)
            else HostCredentials.load(credentials)
        )
        self._insecure = insecure
        self._policy = RolePolicy(
            agent_types=None if agent_types is None else frozenset(agent_types), user_topic=user_topic
        )
        self._grace = grace
        self._team = team
        self._server: grpc.aio.Server | None = None
        self._reminders: asyncio.Future[None] | None = None
        self.address: Address = self._requested
        self.notice = security_notice(self._requested, credentials=self.secured, insecure=insecure)
        """What to tell whoever started this host about who can join (``None`` with credentials)."""

    @property
    def secured(self) -> bool:
        return self._credentials is not None

    async def start(self) -> Address:
        """Listen; returns the address with the port actually bound (useful with port 0)."""
        if self._server is not None:
            raise DistributedError("this host is already started")
        credentials = self._credentials
        if credentials is not None:
            credentials.check_expiry()  # an expired certificate: one line, not a host nobody can reach
        # No SO_REUSEPORT: a second host on a port in use must fail, not split the workers between two hosts.
        server = grpc.aio.server(
            interceptors=None if credentials is None else [TokenCheck(credentials.tokens)],
            options=[*grpc_options(self._limit), *server_keepalive(), ("grpc.so_reuseport", 0)],
        )
        servicer = TeamHostServicer(
            user_topic=self._user_topic, policy=self._policy, grace=self._grace, team=self._team
        )
        agent_worker_pb2_grpc.add_AgentRpcServicer_to_server(servicer, server)
        try:
            if credentials is None:
                port = server.add_insecure_port(str(self._requested))
            else:
                port = server.add_secure_port(str(self._requested), credentials.server_credentials())
        except RuntimeError as exc:
            port = 0
            logger.debug("bind failed: %s", exc)
        if port == 0:
            raise DistributedError(
                f"cannot listen on {self._requested}: is the port in use? "
                "Pick another, or port 0 for any free one"
            )
        await server.start()
        self._server = server
        if credentials is not None:
            self._reminders = asyncio.ensure_future(credentials.remind_expiry())
        self.address = self._requested.with_port(port)
        if self.notice is not None:
            logger.warning("%s", self.notice)
        return self.address

    async def stop(self, grace: float = 1.0) -> None:
        """Stop listening; workers and front ends keep trying to reconnect until a host comes back."""
        if self._reminders is not None:
            self._reminders.cancel()
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop(grace)

    async def wait_closed(self) -> None:
        """Wait until the host is stopped (from another task or a signal)."""
        if self._server is not None:
            await self._server.wait_for_termination()

    async def __aenter__(self) -> Host:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


async def serve(host: Host) -> None:
    """Run ``host`` until cancelled (``handoffs host``); prints the bound address as its first line."""
    await host.start()
    secured = "TLS, tokens required" if host.secured else "no credentials"
    print(f"handoffs host listening on {host.address} ({secured})", flush=True)
    try:
        await host.wait_closed()
    finally:
        await asyncio.shield(host.stop())
