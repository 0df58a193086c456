"""The host's servicer: session placement and a clear word when nobody serves a topic."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc  # type: ignore[import-untyped]
from autogen_core import JSON_DATA_CONTENT_TYPE, TopicId, TypePrefixSubscription
from autogen_ext.runtimes.grpc import _constants as wire
from autogen_ext.runtimes.grpc._utils import subscription_from_proto, subscription_to_proto
from autogen_ext.runtimes.grpc._worker_runtime_host_servicer import (
    ChannelConnection,
    GrpcWorkerAgentRuntimeHostServicer,
)
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2, cloudevent_pb2

from handoffs_runtime.distributed.auth import caller_role
from handoffs_runtime.distributed.credentials import Role
from handoffs_runtime.distributed.options import (
    TEAM_METADATA,
    logger,
)
from handoffs_runtime.distributed.roles import RolePolicy
from handoffs_runtime.distributed.serializers import decode, protocol_serializers, type_name
from handoffs_runtime.distributed.session_subscriptions import IndexedSubscriptions
from handoffs_runtime.messages import Undeliverable, UserTask
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, accepts, base_agent_type, parse_shard

_USER_TASK = type_name(UserTask)
_UNDELIVERABLE = type_name(Undeliverable)
_NOTHING: frozenset[str] = frozenset()

DEFAULT_GRACE = 10.0


def _client_of(context: Any) -> str:
    """Who is calling: the connection the call came on (TLS-authenticated with credentials), which no
    other process can claim, unlike the ``client-id`` a client asserts in its metadata."""
    return str(context.peer())


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


class _Channel(ChannelConnection[agent_worker_pb2.Message, agent_worker_pb2.Message]):
    """One client's message stream; ``receive`` returns why a message is refused (which ends the stream)."""

    def __init__(
        self,
        request_iterator: AsyncIterator[agent_worker_pb2.Message],
        client_id: str,
        receive: Callable[[agent_worker_pb2.Message], Awaitable[str | None]],
    ) -> None:
        self.refusal: str | None = None
        self._receive = receive
        super().__init__(request_iterator, client_id)

    async def _handle_message(self, message: agent_worker_pb2.Message) -> None:
        if self.refusal is not None:
            return
        reason = await self._receive(message)
        if reason is not None:
            self.refusal = reason
            await self._send_queue.put(agent_worker_pb2.Message())  # wakes the stream, which then ends


class TeamHostServicer(GrpcWorkerAgentRuntimeHostServicer):
    """The stock servicer with session placement, undeliverable notices, identities the host gives and
    the role checks of ``security.RolePolicy`` (see the module docstring)."""

    def __init__(
        self,
        *,
        user_topic: str = USER,
        policy: RolePolicy | None = None,
        grace: float = DEFAULT_GRACE,
        team: str = "",
    ) -> None:
        super().__init__()
        self._team = team
        self._subscription_manager = IndexedSubscriptions()
        self._user_topic = user_topic
        self._policy = policy or RolePolicy(user_topic=user_topic)
        self._grace = grace
        self._serializers = protocol_serializers()
        # Every worker numbers its requests 1, 2, ...: the host renames each forwarded request with an id
        # of its own, so two callers of one target never file their replies under the same key.
        self._forwarded: dict[str, _Forwarded] = {}
        self._request_ids = itertools.count(1)
        self._types_of: dict[str, set[str]] = {}
        """The agent types each connection registered: what it may subscribe and send as."""
        self._awaiting_channel: dict[str, asyncio.Task[None]] = {}

    async def OpenChannel(
        self, request_iterator: AsyncIterator[agent_worker_pb2.Message], context: Any
    ) -> AsyncIterator[agent_worker_pb2.Message]:
        """The client's message stream. Its identity is its connection (``context.peer()``), never the
        ``client-id`` it asserts; a message its role may not send closes the stream with the reason."""
        client_id = _client_of(context)
        role = caller_role()
        if client_id in self._data_connections:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, "this connection already has a channel open")

        async def receive(message: agent_worker_pb2.Message) -> str | None:
            return await self._receive_checked(client_id, role, message)

        # The handshake, sent even when the team has no name: a client waits for it before anything else.
        await context.send_initial_metadata(((TEAM_METADATA, self._team),))
        connection = _Channel(request_iterator, client_id, receive)
        self._data_connections[client_id] = connection
        waiting = self._awaiting_channel.pop(client_id, None)
        if waiting is not None:
            waiting.cancel()
        logger.info("client %s connected (role %s)", client_id, role or "any: no credentials")
        try:
            async for message in connection:
                if connection.refusal is not None:
                    logger.warning("closed the channel of %s: %s", client_id, connection.refusal)
                    await context.abort(grpc.StatusCode.PERMISSION_DENIED, connection.refusal)
                yield message
        finally:
            connection._receiving_task.cancel()
            if self._data_connections.get(client_id) is connection:
                del self._data_connections[client_id]
            await self._on_client_disconnect(client_id)

    async def OpenControlChannel(
        self, request_iterator: AsyncIterator[agent_worker_pb2.ControlMessage], context: Any
    ) -> AsyncIterator[agent_worker_pb2.ControlMessage]:
        """Unused by handoffs; the stock one lets any client address any other by its id."""
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this host has no control channel")
        yield agent_worker_pb2.ControlMessage()  # pragma: no cover - abort raised

    async def _receive_checked(
        self, client_id: str, role: Role | None, message: agent_worker_pb2.Message
    ) -> str | None:
        """Refuse what the sender's role may not send, and a sender it may not claim; route the rest."""
        kind = message.WhichOneof("message")
        own = self._types_of.get(client_id, _NOTHING)
        refused = None
        if kind == "cloudEvent":
            event = message.cloudEvent
            attributes = event.attributes
            schema = (
                attributes[wire.DATA_SCHEMA_ATTR].ce_string if wire.DATA_SCHEMA_ATTR in attributes else ""
            )
            sender = (
                attributes[wire.AGENT_SENDER_TYPE_ATTR].ce_string
                if wire.AGENT_SENDER_TYPE_ATTR in attributes
                else ""
            )
            refused = self._policy.publish(role, event.type, event.source, schema, sender, own)
        elif kind == "request":
            request = message.request
            sender = request.source.type if request.HasField("source") else ""
            refused = self._policy.request(role, request.target.type, request.target.key, sender, own)
        if refused is None:
            await self._receive_message(client_id, message)
        return refused

    async def RegisterAgent(
        self, request: agent_worker_pb2.RegisterAgentTypeRequest, context: Any
    ) -> agent_worker_pb2.RegisterAgentTypeResponse:
        """Register for the calling connection, if its role may; an error never names another client."""
        client_id = _client_of(context)
        refused = self._policy.register(caller_role(), request.type)
        if refused is not None:
            logger.warning("refused to register %s for %s: %s", request.type, client_id, refused)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
        code = grpc.StatusCode.FAILED_PRECONDITION
        async with self._agent_type_to_client_id_lock:
            holder = self._agent_type_to_client_id.get(request.type)
            if holder is None:
                conflict = placement_conflict(request.type, list(self._agent_type_to_client_id))
            elif holder == client_id:
                conflict = None
            else:
                code = grpc.StatusCode.INVALID_ARGUMENT
                conflict = f"agent type {request.type} is already registered by another connection"
            if conflict is None:
                self._agent_type_to_client_id[request.type] = client_id
                self._types_of.setdefault(client_id, set()).add(request.type)
        if conflict is not None:
            logger.error("%s", conflict)
            await context.abort(code, conflict)
        self._expect_channel(client_id)
        return agent_worker_pb2.RegisterAgentTypeResponse()

    async def AddSubscription(
        self, request: agent_worker_pb2.AddSubscriptionRequest, context: Any
    ) -> agent_worker_pb2.AddSubscriptionResponse:
        """Subscribe one of the calling connection's own agent types, to what its role may receive."""
        client_id = _client_of(context)
        subscription = subscription_from_proto(request.subscription)
        prefix = isinstance(subscription, TypePrefixSubscription)
        topic = str(getattr(subscription, "topic_type_prefix" if prefix else "topic_type", ""))
        own = self._types_of.get(client_id, _NOTHING)
        refused = self._policy.subscribe(
            caller_role(), _agent_type_of(subscription) or "", topic, own, prefix=prefix
        )
        if refused is not None:
            logger.warning("refused a subscription of %s: %s", client_id, refused)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
        try:
            await self._subscription_manager.add_subscription(subscription)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        self._client_id_to_subscription_id_mapping.setdefault(client_id, set()).add(subscription.id)
        self._expect_channel(client_id)
        return agent_worker_pb2.AddSubscriptionResponse()

    async def RemoveSubscription(
        self, request: agent_worker_pb2.RemoveSubscriptionRequest, context: Any
    ) -> agent_worker_pb2.RemoveSubscriptionResponse:
        """Remove one of the caller's own subscriptions; when a front end's session type loses its last
        one (the session ended), forget that type too, so the host does not keep one entry per session."""
        client_id = _client_of(context)
        own = self._client_id_to_subscription_id_mapping.get(client_id, set())
        if request.id not in own:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"this connection has no subscription {request.id}"
            )
        types = {_agent_type_of(s) for s in self._subscription_manager.subscriptions if s.id == request.id}
        with contextlib.suppress(ValueError):
            await self._subscription_manager.remove_subscription(request.id)
        own.discard(request.id)
        for agent_type in types:
            if agent_type is not None and _is_session_type(agent_type):
                await self._forget_type_without_subscriptions(agent_type, client_id)
        return agent_worker_pb2.RemoveSubscriptionResponse()

    async def GetSubscriptions(
        self, request: agent_worker_pb2.GetSubscriptionsRequest, context: Any
    ) -> agent_worker_pb2.GetSubscriptionsResponse:
        """The caller's own subscriptions only: the others name other people's sessions."""
        own = self._client_id_to_subscription_id_mapping.get(_client_of(context), set())
        mine = [s for s in self._subscription_manager.subscriptions if s.id in own]
        return agent_worker_pb2.GetSubscriptionsResponse(
            subscriptions=[subscription_to_proto(s) for s in mine]
        )

    def _expect_channel(self, client_id: str) -> None:
        """What a connection registers without opening a channel is released after the grace period."""
        if client_id in self._data_connections or client_id in self._awaiting_channel:
            return
        task = asyncio.get_running_loop().create_task(self._release_unless_connected(client_id))
        self._awaiting_channel[client_id] = task

    async def _release_unless_connected(self, client_id: str) -> None:
        await asyncio.sleep(self._grace)
        self._awaiting_channel.pop(client_id, None)
        if client_id not in self._data_connections:
            logger.warning("released what %s registered: it opened no channel in %gs", client_id, self._grace)
            await self._on_client_disconnect(client_id)

    async def _forget_type_without_subscriptions(self, agent_type: str, client_id: str) -> None:
        if any(_agent_type_of(s) == agent_type for s in self._subscription_manager.subscriptions):
            return
        async with self._agent_type_to_client_id_lock:
            if self._agent_type_to_client_id.get(agent_type) == client_id:
                del self._agent_type_to_client_id[agent_type]
                self._types_of.get(client_id, set()).discard(agent_type)

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
        self._types_of.pop(client_id, None)
        self._client_id_to_subscription_id_mapping.pop(client_id, None)
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
