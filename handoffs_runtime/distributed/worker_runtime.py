"""``WorkerRuntime``: autogen-ext's gRPC worker runtime, made to survive its host.

What it adds to ``GrpcWorkerAgentRuntime``:

- the serializer of every protocol message, and gRPC size limits raised (``max_message_mb``);
- keepalive pings (``keepalive`` seconds), so a host that vanished without closing the connection (a
  machine that lost power, a cable pulled) is noticed within twice that and reconnected to;
- **reconnection**: the stock worker never notices that its host went away (its read loop just ends).
  This one watches the stream; when it ends it reconnects with exponential backoff, registers its agent
  types and subscriptions again, and sends what was published meanwhile, and what the lost connection
  may not have delivered (``outbox``: each event is handled once). Agents keep running;
  ``on_lost`` and ``on_connected`` hooks hear of each loss and each connection (a console tells its
  person);
- **placement on the worker side**: a subscription only delivers the sessions its agent type accepts
  (``topics.accepts``), so one process can hold several front-end sessions;
- a clear error, not a broken stream, when a message is over the size limit: a published message is
  dropped (the person is told if it was theirs), a request fails at once, a reply becomes an error reply;
- calls that cannot be answered fail instead of waiting forever: requests in flight when the host
  connection drops fail with ``DistributedError``; a cancelled call forgets its request (a late reply is
  dropped; the agent called on the other process is not stopped).

Example::

    runtime = WorkerRuntime("127.0.0.1:50051")
    await runtime.start()                       # waits, with backoff, until the host answers
    await register_team(runtime, team, model=model, channel=channel, only=["SalesAgent"], with_user=False)
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, Unpack

import grpc  # type: ignore[import-untyped]
from autogen_core import (
    JSON_DATA_CONTENT_TYPE,
    Agent,
    AgentId,
    CancellationToken,
    MessageContext,
    Subscription,
    TopicId,
    try_get_known_serializers_for_type,
)
from autogen_ext.runtimes.grpc import GrpcWorkerAgentRuntime
from autogen_ext.runtimes.grpc._utils import subscription_to_proto
from autogen_ext.runtimes.grpc._worker_runtime import HostConnection
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2, agent_worker_pb2_grpc, cloudevent_pb2

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.distributed.auth import misconfiguration
from handoffs_runtime.distributed.credentials import ClientCredentials
from handoffs_runtime.distributed.host_connection import RAISE_LIMIT, LimitedConnection, mib
from handoffs_runtime.distributed.options import (
    DEFAULT_KEEPALIVE,
    DEFAULT_MAX_MESSAGE_MB,
    client_keepalive,
    grpc_options,
    logger,
    max_message_bytes,
)
from handoffs_runtime.distributed.outbox import SeenEvents
from handoffs_runtime.distributed.serializers import type_name
from handoffs_runtime.distributed.session_subscriptions import IndexedSubscriptions, SessionSubscription
from handoffs_runtime.errors import AlreadyRunningError, DistributedError
from handoffs_runtime.messages import MESSAGE_TYPES, Undeliverable, UserTask
from handoffs_runtime.private.autogen_grpc import message_type_of
from handoffs_runtime.topics import USER

_USER_TASK = type_name(UserTask)
RESEND_WINDOW = 5.0
"""Seconds: events written this long before a connection was lost are sent again on the next one."""


class Delivery(TypedDict, total=False):
    """The keyword arguments of a runtime's ``send_message`` and ``publish_message``, for an override
    that passes them on."""

    sender: AgentId | None
    cancellation_token: CancellationToken | None
    message_id: str | None


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter between connection attempts.

    ``give_up_after`` bounds the first connection only (None: wait for the host forever); once connected,
    a runtime keeps reconnecting until it is stopped.
    """

    initial: float = 0.1
    maximum: float = 5.0
    factor: float = 2.0
    connect_timeout: float = 5.0
    give_up_after: float | None = None

    def delays(self) -> Iterator[float]:
        delay = self.initial
        while True:
            yield delay * random.uniform(0.5, 1.0)
            delay = min(delay * self.factor, self.maximum)


ConnectionHook = Callable[[int], Awaitable[None] | None]


class WorkerRuntime(GrpcWorkerAgentRuntime):
    """A gRPC worker runtime that reconnects to its host. See the module docstring."""

    def __init__(
        self,
        host_address: str,
        *,
        max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
        backoff: Backoff | None = None,
        on_connected: ConnectionHook | None = None,
        on_lost: ConnectionHook | None = None,
        user_topic: str = USER,
        keepalive: float = DEFAULT_KEEPALIVE,
        credentials: ClientCredentials | None = None,
    ) -> None:
        self._limit = max_message_bytes(max_message_mb)
        self._credentials = credentials
        options = [*grpc_options(self._limit), *client_keepalive(keepalive)]
        super().__init__(host_address, extra_grpc_config=options)
        self._subscription_manager = IndexedSubscriptions()
        for message_type in MESSAGE_TYPES:
            self.add_message_serializer(try_get_known_serializers_for_type(message_type))
        self._backoff = backoff or Backoff()
        self._on_connected = on_connected
        self._on_lost = on_lost
        self._user_topic = user_topic
        self._connected = asyncio.Event()
        self.host_team = ""
        """The team the host said it serves when last connected (empty: it did not say)."""
        self._supervisor: asyncio.Task[None] | None = None
        self._subscriptions: list[Subscription] = []
        self._unsent: list[agent_worker_pb2.Message] = []
        """Events a lost connection may not have delivered: sent first on the next one (see ``outbox``)."""
        self._seen = SeenEvents()
        self._resend_window = RESEND_WINDOW
        self.connections = 0
        """How many times this runtime has connected (1 after ``start``; +1 per reconnection)."""
        self._connection_changed = asyncio.Condition()

    async def _get_agent(self, agent_id: AgentId) -> Agent:
        """The agent, routed so that it knows it is the one handling a message (this runtime does not
        set ``MessageHandlerContext`` itself; see ``SessionAgent.on_message_in_context``)."""
        agent = await super()._get_agent(agent_id)
        if isinstance(agent, SessionAgent) and "on_message_impl" not in vars(agent):
            agent.on_message_impl = agent.on_message_in_context  # type: ignore[method-assign]
        return agent

    # --- receiving ---------------------------------------------------------------------------------

    def admits(self, event: cloudevent_pb2.CloudEvent) -> bool:
        """Whether an event from the host goes on to this process's agents: here all do; a front end's
        runtime drops some (``watch.WatchedRuntime``)."""
        return True

    async def _process_event(self, event: cloudevent_pb2.CloudEvent) -> None:
        if self.admits(event):
            await super()._process_event(event)

    def decode(self, event: cloudevent_pb2.CloudEvent, message_type: str) -> Any:
        """The message ``event`` carries, whose type is named ``message_type`` (``message_type_of``)."""
        return self._serialization_registry.deserialize(
            event.binary_data, type_name=message_type, data_content_type=JSON_DATA_CONTENT_TYPE
        )

    async def deliver_here(self, message: Any, topic_id: TopicId) -> None:
        """Hand ``message`` to this process's agents subscribed to ``topic_id``, without the host."""
        for agent_id in await self._subscription_manager.get_subscribed_recipients(topic_id):
            agent = await self._get_agent(agent_id)
            context = MessageContext(
                sender=None,
                topic_id=topic_id,
                is_rpc=False,
                cancellation_token=CancellationToken(),
                message_id=str(uuid.uuid4()),
            )
            await agent.on_message(message, ctx=context)

    # --- connecting --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (retrying with backoff until the host answers) and keep reconnecting until ``stop``."""
        if self._running:
            raise AlreadyRunningError("this worker runtime is already running")
        await self._connect_with_backoff(self._backoff.give_up_after)
        self._running = True
        self._supervisor = asyncio.create_task(self._supervise(), name="handoffs-reconnect")

    async def _connect_with_backoff(self, give_up_after: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if give_up_after is None else loop.time() + give_up_after
        for delay in self._backoff.delays():
            if self._supervisor is not None and (not self._running or _cancelled()):
                # stop() was called, or the loop is shutting down; its cancel may have been swallowed
                # while a dead channel was closed
                raise asyncio.CancelledError()
            try:
                await self._connect_once()
                return
            except Exception as exc:  # any failure to connect is retried; none kills the runtime
                reason = exc.details() if isinstance(exc, grpc.aio.AioRpcError) else type(exc).__name__
                if not isinstance(exc, (TimeoutError, grpc.aio.AioRpcError, OSError)):
                    logger.exception("unexpected error while connecting to %s", self._host_address)
                if (
                    isinstance(exc, grpc.aio.AioRpcError)
                    and exc.code() == grpc.StatusCode.FAILED_PRECONDITION
                ):
                    raise DistributedError(
                        f"the host at {self._host_address} refused this worker: {reason}"
                    ) from exc
                misconfigured = await misconfiguration(exc, self._host_address, self._credentials)
                if misconfigured is not None:
                    raise DistributedError(misconfigured) from exc
                if deadline is not None and loop.time() + delay > deadline:
                    raise DistributedError(
                        f"cannot reach a handoffs host at {self._host_address} ({reason}); start one with "
                        "`handoffs host --address HOST:PORT`, or check --host"
                    ) from exc
                logger.info("host at %s not ready (%s); retrying in %.2fs", self._host_address, reason, delay)
                await asyncio.sleep(delay)

    async def _connect_once(self) -> None:
        """Open a channel, then register every agent type and subscription again (a new client id)."""
        # Not autogen's default retry policy: it can silently reopen the stream at a restarted host under
        # the old client id, with none of our agent types registered there. Our backoff does the retrying.
        # A connection of its own, never shared with another runtime of this process: the host knows a
        # client by its connection.
        options = [*self._extra_grpc_config, ("grpc.use_local_subchannel_pool", 1)]
        if self._credentials is None:
            channel = grpc.aio.insecure_channel(self._host_address, options=options)
        else:
            secure = self._credentials.channel_credentials()
            channel = grpc.aio.secure_channel(self._host_address, secure, options=options)
        stub = agent_worker_pb2_grpc.AgentRpcStub(channel)
        connection = LimitedConnection(channel, stub, self._limit, self._seen, self._resend_window)
        try:
            await connection.open(self._backoff.connect_timeout)
            if self._credentials is not None:  # the stream may look open before the host refused it
                await connection.stub.GetSubscriptions(
                    agent_worker_pb2.GetSubscriptionsRequest(), metadata=connection.metadata
                )
            # Copies: a session may open or end (adding or retiring a type) while we await the host.
            for agent_type in list(self._agent_factories):
                if agent_type not in self._agent_factories:
                    continue  # retired meanwhile
                await connection.stub.RegisterAgent(
                    agent_worker_pb2.RegisterAgentTypeRequest(type=agent_type), metadata=connection.metadata
                )
            for subscription in list(self._subscriptions):
                await connection.stub.AddSubscription(
                    agent_worker_pb2.AddSubscriptionRequest(subscription=subscription_to_proto(subscription)),
                    metadata=connection.metadata,
                )
        except BaseException:
            await connection.close()
            raise
        unsent, self._unsent = self._unsent, []
        if unsent:
            logger.info("sending again %d event(s) the lost connection may not have delivered", len(unsent))
        for message in unsent:  # before anything published later, which waits for _connected
            await connection.send(message)
        self._host_connection = connection
        self.host_team = connection.host_team
        if self._read_task is not None:
            self._read_task.cancel()
        self._read_task = asyncio.create_task(self._run_read_loop(), name="handoffs-read")
        self.connections += 1
        self._connected.set()
        async with self._connection_changed:
            self._connection_changed.notify_all()
        if self.connections > 1:
            logger.warning("reconnected to the host at %s", self._host_address)
        await self._call_hook(self._on_connected, "on_connected")

    async def _call_hook(self, hook: ConnectionHook | None, name: str) -> None:
        """Call ``hook`` with the number of the connection; a hook's bug must not stop the reconnecting."""
        if hook is not None:
            try:
                result = hook(self.connections)
                if result is not None:
                    await result
            except Exception:
                logger.exception("the %s hook failed", name)

    async def _supervise(self) -> None:
        while self._running:
            connection = self._host_connection
            assert isinstance(connection, LimitedConnection) and connection.reading is not None
            try:
                await asyncio.shield(connection.reading)
            except BaseException:  # the connection ended, however: reconnect, unless we are cancelled
                if _cancelled():  # stop(), or the event loop shutting down without stop()
                    raise
            if not self._running:
                return
            self._connected.clear()
            logger.warning("lost the host at %s; reconnecting", self._host_address)
            await connection.close()
            self._unsent.extend(connection.unsent())
            await self._call_hook(self._on_lost, "on_lost")
            self._fail_pending(f"lost the host at {self._host_address} before the reply came")
            if not self._running or _cancelled():
                return
            try:
                await self._connect_with_backoff()
            except DistributedError:
                logger.exception("giving up on the host at %s", self._host_address)
                self._running = False
                raise

    @property
    def running(self) -> bool:
        return bool(self._running)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_closed(self) -> None:
        """Wait until the runtime stops; raises ``DistributedError`` if it gave up on its host."""
        if self._supervisor is not None:
            await asyncio.shield(self._supervisor)

    async def wait_connections(self, count: int) -> None:
        """Wait until this runtime has connected ``count`` times in all (e.g. 2: after one reconnection)."""
        async with self._connection_changed:
            await self._connection_changed.wait_for(lambda: self.connections >= count)

    # --- sending -----------------------------------------------------------------------------------

    def _fail_pending(self, reason: str) -> None:
        """Fail every call still waiting for a reply (its reply can no longer come)."""
        pending, self._pending_requests = self._pending_requests, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(DistributedError(reason))

    async def send_message(self, message: Any, recipient: AgentId, **options: Unpack[Delivery]) -> Any:
        """As autogen's, but a cancelled call forgets its request (the remote agent is not stopped)."""
        try:
            return await super().send_message(message, recipient, **options)
        finally:
            for request_id, future in list(self._pending_requests.items()):
                if future.done():
                    del self._pending_requests[request_id]

    async def _process_response(self, response: agent_worker_pb2.RpcResponse) -> None:
        """Deliver a reply; one to a call that was cancelled or failed meanwhile is dropped."""
        future = self._pending_requests.get(response.request_id)
        if future is None or future.done():
            self._pending_requests.pop(response.request_id, None)
            logger.info("dropped a late reply to request %s", response.request_id)
            return
        if response.error:
            del self._pending_requests[response.request_id]
            future.set_exception(DistributedError(response.error))
            return
        await super()._process_response(response)

    async def _send_message(
        self,
        runtime_message: agent_worker_pb2.Message,
        send_type: Literal["send", "publish"],
        recipient: AgentId | TopicId,
        telemetry_metadata: Mapping[str, str],
    ) -> None:
        size = runtime_message.ByteSize()
        if size > self._limit:
            await self._too_large(runtime_message, size, recipient)
            return
        await self._connected.wait()  # published while the host was away: sent after reconnecting
        await super()._send_message(runtime_message, send_type, recipient, telemetry_metadata)

    async def _too_large(
        self, runtime_message: agent_worker_pb2.Message, size: int, recipient: AgentId | TopicId
    ) -> None:
        """Drop a message over the limit (gRPC would break the stream); tell the person if it was theirs."""
        reason = f"the conversation is {mib(size)}, over the {mib(self._limit)} limit ({RAISE_LIMIT})"
        logger.error("not sending a message to %s: %s", recipient, reason)
        if runtime_message.WhichOneof("message") == "request":
            future = self._pending_requests.pop(runtime_message.request.request_id, None)
            if future is not None and not future.done():
                future.set_exception(
                    DistributedError(
                        f"not sent: the request is {mib(size)}, over the "
                        f"{mib(self._limit)} limit ({RAISE_LIMIT})"
                    )
                )
            return
        event = runtime_message.cloudEvent if runtime_message.WhichOneof("message") == "cloudEvent" else None
        if event is not None and message_type_of(event) == _USER_TASK:
            notice = Undeliverable(topic_type=event.type, reason=reason)
            await self.publish_message(notice, TopicId(self._user_topic, event.source))

    def _require_connection(self) -> HostConnection:
        """Registering meanwhile would go to a closed channel; the reconnection registers what exists."""
        if self._host_connection is None:
            raise DistributedError("start the worker runtime before registering agents or subscriptions")
        if not self.connected:
            raise self._away()
        return self._host_connection

    def _away(self) -> DistributedError:
        return DistributedError(
            f"not connected to the host at {self._host_address} (reconnecting); try again shortly"
        )

    async def _register_agent_type(self, type: str) -> None:
        self._require_connection()
        try:
            await super()._register_agent_type(type)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            raise self._away() from None  # the channel was closed under the call: the host just went

    async def add_subscription(self, subscription: Subscription) -> None:
        """Subscribe at the host as usual; deliver locally only the sessions the agent type accepts."""
        connection = self._require_connection()
        await connection.stub.AddSubscription(
            agent_worker_pb2.AddSubscriptionRequest(subscription=subscription_to_proto(subscription)),
            metadata=connection.metadata,
        )
        self._subscriptions.append(subscription)
        await self._subscription_manager.add_subscription(SessionSubscription(subscription))

    async def retire_agent_type(self, agent_type: str) -> None:
        """Stop serving ``agent_type``: drop its subscriptions here and at the host, and its instances.

        The gRPC protocol cannot unregister a type; our host forgets a front end's session type once its
        last subscription is removed (other types stay registered until this process leaves, though
        nothing reaches them). A front end retires each session's type when the session ends.
        """
        for subscription in [s for s in self._subscriptions if _agent_type_of(s) == agent_type]:
            if self._host_connection is not None and self.connected:
                await self._host_connection.stub.RemoveSubscription(
                    agent_worker_pb2.RemoveSubscriptionRequest(id=subscription.id),
                    metadata=self._host_connection.metadata,
                )
            self._subscriptions.remove(subscription)
            await self._subscription_manager.remove_subscription(subscription.id)
        self._agent_factories.pop(agent_type, None)
        for agent_id in [a for a in self._instantiated_agents if a.type == agent_type]:
            del self._instantiated_agents[agent_id]

    # --- stopping ----------------------------------------------------------------------------------

    async def stop(self, grace: float = 2.0) -> None:
        """Stop: give handlers in flight ``grace`` seconds, then cancel them, and close the connection."""
        if not self._running:
            raise DistributedError("this worker runtime is not running")
        self._running = False
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(BaseException):
                await self._supervisor
        pending = [t for t in self._background_tasks if not t.done()]
        if pending:
            _, late = await asyncio.wait(pending, timeout=grace)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if self._read_task is not None:
            self._read_task.cancel()
            with contextlib.suppress(BaseException):
                await self._read_task
        if self._host_connection is not None:
            await self._host_connection.close()


def _cancelled() -> bool:
    """Whether the running task has been asked to stop (a cancel that a suppressing ``await`` swallowed
    still counts: ``asyncio.run`` cancels leftover tasks at shutdown and waits for them to end)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _agent_type_of(subscription: Subscription) -> str | None:
    return getattr(subscription, "agent_type", None)
