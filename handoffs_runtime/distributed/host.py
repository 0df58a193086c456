"""The gRPC host: autogen-ext's host, plus session placement and a clear word when nobody serves a topic.

Three things the stock host does not do (or not safely):

- **Placement** (see ``topics.accepts``): a message on ``SalesAgent``/``s1`` goes only to the agent
  types that accept session ``s1`` - one shard of a sharded type, the front end of that session - so
  one agent type can be served by N workers (the stock host takes each type from one worker only), and
  any number of chat front ends can be connected at once. Shard counts must agree, or the worker that
  disagrees is refused when it registers; front ends pinned to their sessions (``User.session-<id>``)
  and one serving every session (plain ``User``) are never mixed. A session type whose last
  subscription is removed (its session ended) is forgotten, so the host does not grow per session.
- **Undeliverable**: a ``UserTask`` published to a topic nobody serves (a worker is down, a shard is
  missing) is answered with an ``Undeliverable`` message to the session's ``User`` topic, so the person
  reads "SalesAgent is not available right now" instead of waiting in silence.
- **Calls (RPC)** are forwarded under an id of the host's own and answered under the caller's, since
  every worker numbers its requests from 1; when the process that should answer leaves, each waiting
  caller gets an error reply instead of waiting for ever.

Example::

    async with Host("127.0.0.1:0") as host:
        print(host.address)            # the port the system chose
        await host.wait_closed()
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc  # type: ignore[import-untyped]
from autogen_core import JSON_DATA_CONTENT_TYPE, TopicId
from autogen_ext.runtimes.grpc import _constants as wire
from autogen_ext.runtimes.grpc._worker_runtime_host_servicer import (
    GrpcWorkerAgentRuntimeHostServicer,
    get_client_id_or_abort,
)
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2, agent_worker_pb2_grpc, cloudevent_pb2

from ..errors import DistributedError
from ..messages import Undeliverable, UserTask
from ..topics import HANDOFF_EVENTS, USER, accepts, base_agent_type, parse_shard
from .options import (
    DEFAULT_MAX_MESSAGE_MB,
    Address,
    grpc_options,
    logger,
    max_message_bytes,
    server_keepalive,
)
from .serializers import decode, protocol_serializers, type_name
from .subscriptions import IndexedSubscriptions

_USER_TASK = type_name(UserTask)
_UNDELIVERABLE = type_name(Undeliverable)


def placement_conflict(new_type: str, registered: list[str]) -> str | None:
    """Why ``new_type`` cannot join the agent types already registered, or ``None`` if it can.

    A team member is served either by one worker (its plain name) or by N shards that agree on N.
    """
    name = base_agent_type(new_type)
    new_shard = parse_shard(new_type)
    pinned = [o for o in registered if o != name and base_agent_type(o) == name and parse_shard(o) is None]
    if _is_session_type(new_type):  # a front end's own session type
        if name in registered:
            return (
                f"cannot register {new_type}: a front end started with pinned=False already serves every "
                f"session as {name}; connect either that one front end or only pinned ones"
            )
        return None
    if new_type == name and pinned:
        return (
            f"cannot register {name} for every session: front ends already serve their own sessions "
            f"(e.g. {pinned[0]}); connect either one front end with pinned=False or only pinned ones"
        )
    for other in registered:
        other_shard = parse_shard(other)
        if other == new_type or base_agent_type(other) != name or (other != name and other_shard is None):
            continue
        if new_shard is None or other_shard is None:
            return (
                f"cannot register {new_type}: {other} is already registered; {name} is sharded on every "
                "worker that serves it or on none, so start all its workers with --shard i/N, or none"
            )
        if new_shard[2] != other_shard[2]:
            return (
                f"cannot register {new_type}: {other} is already registered with {other_shard[2]} shards; "
                f"start every worker of {name} with the same N in --shard i/N"
            )
    return None


@dataclass(frozen=True, slots=True)
class _Forwarded:
    """An RPC request the host forwarded and has not seen answered: who asked, under which id, and whom."""

    caller: str
    request_id: str
    target: str
    target_type: str


def exposure_warning(address: Address) -> str | None:
    """What to tell whoever binds a host beyond loopback: the channel has no TLS."""
    if address.is_loopback:
        return None
    return (
        f"{address} is not loopback and the channel has no TLS: whoever reaches this port can join the team "
        "and read every conversation; keep it on a private network"
    )


class TeamHostServicer(GrpcWorkerAgentRuntimeHostServicer):
    """The stock servicer with session placement and undeliverable notices (see the module docstring)."""

    def __init__(self, *, user_topic: str = USER) -> None:
        super().__init__()
        self._subscription_manager = IndexedSubscriptions()
        self._user_topic = user_topic
        self._serializers = protocol_serializers()
        # Every worker numbers its requests 1, 2, ...: the host renames each forwarded request with an id
        # of its own, so two callers of one target never file their replies under the same key.
        self._forwarded: dict[str, _Forwarded] = {}
        self._request_ids = itertools.count(1)

    async def RegisterAgent(  # type: ignore[override]
        self, request: agent_worker_pb2.RegisterAgentTypeRequest, context: Any
    ) -> agent_worker_pb2.RegisterAgentTypeResponse:
        async with self._agent_type_to_client_id_lock:
            conflict = placement_conflict(request.type, list(self._agent_type_to_client_id))
        if conflict is not None:
            logger.error("%s", conflict)
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, conflict)
        return await super().RegisterAgent(request, context)  # type: ignore[no-any-return]

    async def RemoveSubscription(  # type: ignore[override]
        self, request: agent_worker_pb2.RemoveSubscriptionRequest, context: Any
    ) -> agent_worker_pb2.RemoveSubscriptionResponse:
        """Remove as usual; when a front end's session type loses its last subscription (the session
        ended), forget that agent type too, so the host does not keep one entry per session ever held."""
        client_id = await get_client_id_or_abort(context)
        types = {_agent_type_of(s) for s in self._subscription_manager.subscriptions if s.id == request.id}
        response = await super().RemoveSubscription(request, context)
        self._client_id_to_subscription_id_mapping.get(client_id, set()).discard(request.id)
        for agent_type in types:
            if agent_type is not None and _is_session_type(agent_type):
                await self._forget_type_without_subscriptions(agent_type, client_id)
        return response  # type: ignore[no-any-return]

    async def _forget_type_without_subscriptions(self, agent_type: str, client_id: str) -> None:
        if any(_agent_type_of(s) == agent_type for s in self._subscription_manager.subscriptions):
            return
        async with self._agent_type_to_client_id_lock:
            if self._agent_type_to_client_id.get(agent_type) == client_id:
                del self._agent_type_to_client_id[agent_type]

    async def _process_request(self, request: agent_worker_pb2.RpcRequest, client_id: str) -> None:
        """An RPC to ``X``/``key`` goes to the type that serves ``key`` for ``X`` (``X`` itself, the shard of
        ``key``, the front end of session ``key``) under a host-unique id; with none, the caller gets an
        error reply at once."""
        target = request.target
        async with self._agent_type_to_client_id_lock:
            known = dict(self._agent_type_to_client_id)
        if target.type not in known:
            placed = [t for t in known if base_agent_type(t) == target.type and accepts(t, target.key)]
            if not placed:
                error = f"nobody serves {target.type} for session {target.key}"
                logger.warning("%s: the request was refused", error)
                await self._reply_error(client_id, request.request_id, error)
                return
            target.type = placed[0]
        target_client = known[target.type]
        connection = self._data_connections.get(target_client)
        if connection is None:
            await self._reply_error(client_id, request.request_id, f"{target.type} has just disconnected")
            return
        forwarded_id = str(next(self._request_ids))
        self._forwarded[forwarded_id] = _Forwarded(client_id, request.request_id, target_client, target.type)
        forwarded = agent_worker_pb2.RpcRequest()
        forwarded.CopyFrom(request)
        forwarded.request_id = forwarded_id
        await connection.send(agent_worker_pb2.Message(request=forwarded))

    async def _process_response(self, response: agent_worker_pb2.RpcResponse, client_id: str) -> None:
        """Send a reply back to its caller under the caller's own request id."""
        forwarded = self._forwarded.get(response.request_id)
        if forwarded is None or forwarded.target != client_id:
            logger.warning(
                "dropped a reply from %s to a request it was not asked (%s)", client_id, response.request_id
            )
            return
        del self._forwarded[response.request_id]
        response.request_id = forwarded.request_id
        connection = self._data_connections.get(forwarded.caller)
        if connection is None:
            logger.info("the caller of a %s request left before its reply", forwarded.target_type)
            return
        await connection.send(agent_worker_pb2.Message(response=response))

    async def _reply_error(self, caller: str, request_id: str, error: str) -> None:
        connection = self._data_connections.get(caller)
        if connection is not None:
            response = agent_worker_pb2.RpcResponse(request_id=request_id, error=error)
            await connection.send(agent_worker_pb2.Message(response=response))

    async def _on_client_disconnect(self, client_id: str) -> None:
        """Answer with an error the requests the leaving client still had to answer; forget its own."""
        await super()._on_client_disconnect(client_id)
        for forwarded_id, forwarded in list(self._forwarded.items()):
            if client_id not in (forwarded.caller, forwarded.target):
                continue
            del self._forwarded[forwarded_id]
            if forwarded.target == client_id and forwarded.caller != client_id:
                await self._reply_error(
                    forwarded.caller,
                    forwarded.request_id,
                    f"the process serving {forwarded.target_type} went away before answering",
                )

    async def _process_event(self, event: cloudevent_pb2.CloudEvent) -> None:
        if not await self._deliver(event):
            await self._undeliverable(event)

    async def _deliver(self, event: cloudevent_pb2.CloudEvent) -> bool:
        """Send ``event`` to every worker with a subscribed agent type that accepts its session."""
        topic_id = TopicId(event.type, event.source)
        recipients = await self._subscription_manager.get_subscribed_recipients(topic_id)
        async with self._agent_type_to_client_id_lock:
            client_ids = {
                self._agent_type_to_client_id[r.type]
                for r in recipients
                if r.type in self._agent_type_to_client_id and accepts(r.type, topic_id.source)
            }
        delivered = False
        for client_id in client_ids:
            connection = self._data_connections.get(client_id)
            if connection is not None:
                await connection.send(agent_worker_pb2.Message(cloudEvent=event))
                delivered = True
        return delivered

    async def _undeliverable(self, event: cloudevent_pb2.CloudEvent) -> None:
        kind = (
            event.attributes[wire.DATA_SCHEMA_ATTR].ce_string
            if wire.DATA_SCHEMA_ATTR in event.attributes
            else "?"
        )
        if event.type == HANDOFF_EVENTS:
            return  # observers are optional
        if kind != _USER_TASK:
            logger.error(
                "no worker serves %s for session %s: a %s was dropped", event.type, event.source, kind
            )
            return
        logger.warning("no worker serves %s for session %s: telling the person", event.type, event.source)
        try:
            task = decode(self._serializers, event.binary_data, kind)
            context = task.context if isinstance(task, UserTask) else []
        except Exception:  # a payload we cannot read still deserves the notice
            logger.exception("could not read the undelivered UserTask")
            context = []
        notice = Undeliverable(topic_type=event.type, context=context)
        if not await self._deliver(self._event(notice, TopicId(self._user_topic, event.source))):
            logger.error("no front end serves session %s either: the notice was dropped", event.source)

    def _event(self, message: Undeliverable, topic_id: TopicId) -> cloudevent_pb2.CloudEvent:
        def text(value: str) -> cloudevent_pb2.CloudEvent.CloudEventAttributeValue:
            return cloudevent_pb2.CloudEvent.CloudEventAttributeValue(ce_string=value)

        payload = self._serializers.serialize(
            message, type_name=_UNDELIVERABLE, data_content_type=JSON_DATA_CONTENT_TYPE
        )
        return cloudevent_pb2.CloudEvent(
            id=str(uuid.uuid4()),
            spec_version="1.0",
            type=topic_id.type,
            source=topic_id.source,
            attributes={
                wire.DATA_CONTENT_TYPE_ATTR: text(JSON_DATA_CONTENT_TYPE),
                wire.DATA_SCHEMA_ATTR: text(_UNDELIVERABLE),
                wire.AGENT_SENDER_TYPE_ATTR: text("host"),
                wire.AGENT_SENDER_KEY_ATTR: text("host"),
                wire.MESSAGE_KIND_ATTR: text(wire.MESSAGE_KIND_VALUE_PUBLISH),
            },
            binary_data=payload,
        )


def _agent_type_of(subscription: object) -> str | None:
    return getattr(subscription, "agent_type", None)


def _is_session_type(agent_type: str) -> bool:
    """``User.session-s1``: one front end's type for one session."""
    return base_agent_type(agent_type) != agent_type and parse_shard(agent_type) is None


class Host:
    """The gRPC host of a distributed team; binds to loopback unless told otherwise (see the module)."""

    def __init__(
        self,
        address: str | Address = "127.0.0.1:0",
        *,
        max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
        user_topic: str = USER,
    ) -> None:
        self._requested = address if isinstance(address, Address) else Address.parse(address)
        self._limit = max_message_bytes(max_message_mb)
        self._user_topic = user_topic
        self._server: grpc.aio.Server | None = None
        self.address: Address = self._requested

    async def start(self) -> Address:
        """Listen; returns the address with the port actually bound (useful with port 0)."""
        if self._server is not None:
            raise DistributedError("this host is already started")
        # No SO_REUSEPORT: a second host on a port in use must fail, not split the workers between two hosts.
        server = grpc.aio.server(
            options=[*grpc_options(self._limit), *server_keepalive(), ("grpc.so_reuseport", 0)]
        )
        agent_worker_pb2_grpc.add_AgentRpcServicer_to_server(
            TeamHostServicer(user_topic=self._user_topic), server
        )
        try:
            port = server.add_insecure_port(str(self._requested))
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
        self.address = self._requested.with_port(port)
        warning = exposure_warning(self.address)
        if warning is not None:
            logger.warning("%s", warning)
        return self.address

    async def stop(self, grace: float = 1.0) -> None:
        """Stop listening; workers and front ends keep trying to reconnect until a host comes back."""
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


async def serve(address: str | Address, *, max_message_mb: float = DEFAULT_MAX_MESSAGE_MB) -> None:
    """Run a host until cancelled (``handoffs host``); prints the bound address as its first line."""
    host = Host(address, max_message_mb=max_message_mb)
    await host.start()
    print(f"handoffs host listening on {host.address}", flush=True)
    try:
        await host.wait_closed()
    finally:
        await asyncio.shield(host.stop())
