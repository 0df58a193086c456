"""``HandoffsRuntime``: autogen-core's single-threaded runtime without the costs nobody observes.

The stock ``SingleThreadedAgentRuntime`` does, on every publish and delivery, work whose result is thrown
away unless someone is listening: it opens OpenTelemetry spans, serializes the whole message to JSON for
the event log, formats the message (context included) into an f-string for an INFO log line, and looks
up the sender agent just to name it. It also inspects each agent factory's signature every time it
builds an agent, and a handoffs runtime builds one per agent type per session.

This subclass skips that work **only while nobody can observe it**: no tracer provider (neither passed in
nor set globally) and the ``autogen_core`` and ``autogen_core.events`` loggers not enabled for INFO.
Then it takes a short path with the same semantics: the same queue (ordering, ``stop_when_idle``), the
same intervention handlers (they run when a message is taken off the queue, as before), the same
subscriptions, a ``MessageContext`` per delivery, exceptions logged and raised. A message published to a
running runtime whose queue is empty, with no intervention handler, skips the trip through the queue's
loop: its delivery task starts as the loop would have started it, in publish order, and
``stop_when_idle`` still waits for it. As soon as an observer is there, every call goes to the stock
implementation.

Example::

    runtime = HandoffsRuntime()
    await register_team(runtime, team, model=model, channel=channel)
    runtime.start()
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from autogen_core import (
    Agent,
    AgentId,
    AgentType,
    CancellationToken,
    InterventionHandler,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
)
from autogen_core.logging import AgentConstructionExceptionEvent, MessageHandlerExceptionEvent
from opentelemetry import trace as otel_trace
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, TracerProvider, get_tracer_provider

from handoffs_runtime.private import AGENT_INSTANTIATION_CONTEXT as _INSTANTIATING
from handoffs_runtime.private import MESSAGE_HANDLER_CONTEXT as _HANDLING
from handoffs_runtime.private import HandlerParts, PublishMessageEnvelope, handler_parts
from handoffs_runtime.runtime.collector import freeze_start_up
from handoffs_runtime.runtime.subscriptions import TypeIndexedSubscriptions

T = TypeVar("T", bound=Agent)
_UNKNOWN = object()

logger = logging.getLogger("autogen_core")
event_logger = logging.getLogger("autogen_core.events")

_SILENT_PROVIDERS = (NoOpTracerProvider, ProxyTracerProvider)
INFO = logging.INFO
_LOG_CACHE: dict[int, bool] = getattr(logger, "_cache", {})
_EVENT_LOG_CACHE: dict[int, bool] = getattr(event_logger, "_cache", {})
"""``isEnabledFor``'s answers by level, which ``logging`` keeps per logger (none: always asked)."""


_NODE_MASK = (1 << 48) - 1


def _uuid_prefix() -> str:
    """The first 24 characters of a random version-4 UUID string; a 12-digit hex counter completes it, so
    every message id parses as a UUID (``uuid.UUID(id).version == 4``) and is unique per runtime."""
    text = str(uuid.uuid4())
    return text[:-12]


_QUEUE_INTERNALS = ("_queue", "_is_shutdown", "_unfinished_tasks", "_finished")
"""What :func:`_admitted_past` reads of the runtime's queue: autogen-core's copy of ``asyncio.Queue`` before
Python 3.13, ``asyncio.Queue`` itself after; a queue without them is always used."""


_ROUTED = RoutedAgent.on_message_impl
_ROUTES: dict[type[Any], Callable[..., Any] | None] = {}
"""Each agent class's ``on_message_impl``: the stock ``RoutedAgent`` one is done inline (see ``_handler``)."""
_PARTS: dict[Callable[..., Any], HandlerParts | None] = {}
"""Each handler's parts (``private.handler_parts``): autogen's wrapper's checks are done inline too."""


def _admitted_past(queue: Any) -> bool:
    """Whether a message may skip ``queue``: nothing waits in it (the message would be next) and it is
    open. If so the message counts as one of its unfinished tasks, as if put and taken at once: ``join``
    (``stop_when_idle``) waits for its delivery, which marks it done."""
    if queue._queue or queue._is_shutdown:
        return False
    if queue._unfinished_tasks == 0:  # else clear already: the queue sets it only when none is unfinished
        queue._finished.clear()
    queue._unfinished_tasks += 1
    return True


class HandoffsRuntime(SingleThreadedAgentRuntime):
    """A ``SingleThreadedAgentRuntime`` that is fast when unobserved. See the module docstring."""

    def __init__(
        self,
        *,
        intervention_handlers: Sequence[InterventionHandler] | None = None,
        tracer_provider: TracerProvider | None = None,
        ignore_unhandled_exceptions: bool = True,
    ) -> None:
        if intervention_handlers is not None and not isinstance(intervention_handlers, list):
            intervention_handlers = list(intervention_handlers)
        super().__init__(  # the caller's own list, as the stock runtime keeps it: later appends count
            intervention_handlers=intervention_handlers,
            tracer_provider=tracer_provider,
            ignore_unhandled_exceptions=ignore_unhandled_exceptions,
        )
        self._always_observed = (
            tracer_provider is not None and not isinstance(tracer_provider, NoOpTracerProvider)
        ) or OTEL_PYTHON_TRACER_PROVIDER in os.environ
        self._subscription_manager = TypeIndexedSubscriptions()
        self._factory_arity: dict[Callable[..., Any], int] = {}
        self._unwrapped: dict[Callable[..., Any], tuple[Callable[[], Any], type[Any] | None]] = {}
        """Each factory ``register_factory`` registered, and its expected class, by the wrapper it stored."""
        # Message ids are UUID strings, as the stock runtime's, built from a random prefix and a counter:
        # a tenth of the cost of uuid4() per message.
        self._id_prefix = _uuid_prefix()
        self._message_ids = itertools.count(1)
        self._queue_known = all(hasattr(self._message_queue, name) for name in _QUEUE_INTERNALS)

    def start(self) -> None:
        """Start processing messages; the first start in a process freezes what start-up built out of the
        garbage collector's scans and makes its young collections rarer (see
        :mod:`~handoffs_runtime.runtime.collector`)."""
        freeze_start_up()
        super().start()

    def observed(self) -> bool:
        """Whether anyone could see the spans or log records that the short path leaves out."""
        if self._always_observed:
            return True
        # What ``isEnabledFor(INFO)`` answers, read from the answers each logger caches by level (emptied
        # whenever a level changes; asked when not cached yet), without its call per logger. A disabled
        # logger's answer is not cached: an earlier True sends its messages the stock way, which logs
        # nothing to it, as this way does.
        enabled = _LOG_CACHE.get(INFO)
        if enabled if enabled is not None else logger.isEnabledFor(INFO):
            return True
        enabled = _EVENT_LOG_CACHE.get(INFO)
        if enabled if enabled is not None else event_logger.isEnabledFor(INFO):
            return True
        # Whether OpenTelemetry has a real global tracer provider: ``get_tracer_provider`` reads the
        # environment on every call while none is set; the module global says the same without that cost.
        provider = getattr(otel_trace, "_TRACER_PROVIDER", _UNKNOWN)
        if provider is _UNKNOWN:  # a future opentelemetry without the global: ask the public way
            provider = get_tracer_provider()
        return provider is not None and not isinstance(provider, _SILENT_PROVIDERS)

    async def publish_message(
        self,
        message: Any,
        topic_id: TopicId,
        *,
        sender: AgentId | None = None,
        cancellation_token: CancellationToken | None = None,
        message_id: str | None = None,
    ) -> None:
        if self.observed():
            await super().publish_message(
                message, topic_id, sender=sender, cancellation_token=cancellation_token, message_id=message_id
            )
            return
        if cancellation_token is None:
            cancellation_token = CancellationToken()
        if not message_id:
            # printf-style: a quarter cheaper than the format specification's parser, on every publish
            message_id = "%s%012x" % (self._id_prefix, next(self._message_ids) & _NODE_MASK)  # noqa: UP031
        if (
            self._intervention_handlers  # they run as the message is taken off the queue
            or self._run_context is None  # not started (or stepped by hand with process_next)
            or self._background_exception is not None  # the queue's loop raises it on its next message
            or not self._queue_known
            or not _admitted_past(self._message_queue)
        ):
            envelope = PublishMessageEnvelope(
                message=message,
                cancellation_token=cancellation_token,
                sender=sender,
                topic_id=topic_id,
                message_id=message_id,
            )  # no telemetry metadata: nobody observes it on this path
            self._message_queue.put_nowait(envelope)
            return
        # What the queue's loop would do at once with it, without the round trip through the loop: its
        # delivery gets a background task of its own, in publish order, which leaves the background tasks
        # as it ends (a done callback would cost a trip through the event loop). The task is built as
        # ``asyncio.create_task`` builds it when the loop has no task factory, without its two calls.
        own: list[asyncio.Task[Any]] = []  # the task, for the delivery to leave the background tasks with
        delivery = self._deliver_publish(message, topic_id, sender, cancellation_token, message_id, own)
        loop = asyncio.get_running_loop()
        if loop.get_task_factory() is None:
            task: asyncio.Task[None] = asyncio.Task(delivery, loop=loop)
        else:
            task = loop.create_task(delivery)
        own.append(task)  # before the delivery's first step: it starts on the loop's next round
        self._background_tasks.add(task)

    async def _process_publish(self, message_envelope: PublishMessageEnvelope) -> None:
        if self.observed():
            await super()._process_publish(message_envelope)
            return
        e = message_envelope
        await self._deliver_publish(e.message, e.topic_id, e.sender, e.cancellation_token, e.message_id)

    async def _deliver_publish(
        self,
        message: Any,
        topic_id: TopicId,
        sender: AgentId | None,
        cancellation_token: CancellationToken,
        message_id: str,
        own_task: list[asyncio.Task[Any]] | None = None,
        to: tuple[Agent, MessageContext] | None = None,
    ) -> None:
        """Deliver a published message to its recipients, unobserved (see the module docstring);
        ``own_task``: holds the background task ``publish_message`` made for it (``current_task()`` would
        cost a call of Python code per message).

        One recipient (the usual case) is handled in this task, without a coroutine of its own. Several
        each get a task of their own, as on the stock runtime: this coroutine again, ``to`` one of them,
        which logs its handler's failure and raises it to the first; only the first marks the message
        done."""
        try:
            targets: list[tuple[Agent, MessageContext]] = []
            if to is not None:
                targets.append(to)
            else:
                subscriptions = self._subscription_manager
                if type(subscriptions) is TypeIndexedSubscriptions:
                    recipients = subscriptions.recipients(topic_id)
                else:
                    recipients = await subscriptions.get_subscribed_recipients(topic_id)
                sender_checked = sender is None
                agents = self._instantiated_agents
                for agent_id in recipients:
                    if sender is not None and agent_id == sender:  # never back to the sender
                        continue
                    if not sender_checked:  # as the stock runtime: an unknown sender type fails the
                        if sender not in agents:  # publish, a known one is built
                            await self._get_agent(sender)  # type: ignore[arg-type]
                        sender_checked = True
                    # sender, topic_id, is_rpc, cancellation_token, message_id
                    context = MessageContext(sender, topic_id, False, cancellation_token, message_id)
                    agent = agents.get(agent_id)
                    if agent is None:
                        agent = await self._instantiate(agent_id)
                    targets.append((agent, context))
            if len(targets) > 1:  # a loop, not a generator: its closure would give every call six cells
                copies = []
                for target in targets:
                    copies.append(
                        self._deliver_publish(
                            message, topic_id, sender, cancellation_token, message_id, to=target
                        )
                    )
                await asyncio.gather(*copies)
            elif targets:
                agent, context = targets[0]
                # What MessageHandlerContext.populate_context does, without a generator-based context manager.
                handling = _HANDLING.set(agent.id)
                try:
                    handled, returns = self._handler(agent, message, context)
                    value = await handled
                    if returns is not None and type(value) not in returns:  # message_handler's check
                        raise ValueError(f"Return type {type(value)} not in return types {returns}")
                except asyncio.CancelledError:  # stopped: not a failure of the handler
                    raise
                except BaseException as e:
                    logger.error(f"Error processing publish message for {agent.id}", exc_info=True)
                    event_logger.info(
                        MessageHandlerExceptionEvent(
                            payload=self._try_serialize(message), handling_agent=agent.id, exception=e
                        )
                    )
                    raise
                finally:
                    _HANDLING.reset(handling)
        except BaseException as e:
            if to is not None:  # one of several recipients: the first records it
                raise
            if not self._ignore_unhandled_handler_exceptions:
                self._background_exception = e
        finally:
            if to is None:  # task_done(), inline when the queue is the known kind
                queue: Any = self._message_queue
                if self._queue_known and queue._unfinished_tasks > 0:
                    queue._unfinished_tasks -= 1
                    if queue._unfinished_tasks == 0:
                        queue._finished.set()
                else:
                    queue.task_done()
                if own_task:
                    self._background_tasks.discard(own_task[0])

    async def stop(self) -> None:
        """Stop processing messages and cancel the handlers still running. The stock runtime leaves them
        running: a turn waiting for the person would wait forever, and be reported as "Task was destroyed
        but it is pending!" once collected."""
        stopped = self._message_queue
        await super().stop()
        running = [task for task in self._background_tasks if task is not asyncio.current_task()]
        for task in running:
            task.cancel()
        # Each marks its message done as it ends: in the queue it came from, not the fresh one stop() made.
        fresh, self._message_queue = self._message_queue, stopped
        try:
            await asyncio.gather(*running, return_exceptions=True)
        finally:
            self._message_queue = fresh
            self._background_tasks.difference_update(running)  # those cancelled before they began

    def _handler(
        self, agent: Agent, message: Any, context: MessageContext
    ) -> tuple[Awaitable[Any], tuple[type[Any], ...] | None]:
        """What handles ``message`` for ``agent``, and the types its value must be of (``None``: any)."""
        on_message_impl = _ROUTES.get(type(agent))
        if on_message_impl is None:
            on_message_impl = _ROUTES[type(agent)] = getattr(type(agent), "on_message_impl", None)
        if on_message_impl is not _ROUTED or "on_message_impl" in agent.__dict__:
            return agent.on_message(message, ctx=context), None
        # What BaseAgent.on_message, RoutedAgent.on_message_impl and message_handler's wrapper do, without
        # their three coroutines: the handler's own is awaited, and its value checked, by the caller.
        handlers = agent._handlers.get(type(message))  # type: ignore[attr-defined]
        if handlers is not None:
            for handler in handlers:
                try:
                    parts = _PARTS[handler]
                except KeyError:
                    parts = _PARTS[handler] = handler_parts(handler)
                if parts is None:  # not message_handler's strict wrapper: called as it is
                    if handler.router(message, context):
                        return handler(agent, message, context), None
                    continue
                function, targets, returns, router = parts
                if router is not None and not router(message, context):
                    continue
                if type(message) not in targets:  # the wrapper raises CantHandleException
                    return handler(agent, message, context), None
                return function(agent, message, context), returns
        return agent.on_unhandled_message(message, context), None  # type: ignore[attr-defined]

    async def register_factory(
        self,
        type: str | AgentType,
        agent_factory: Callable[[], T | Awaitable[T]],
        *,
        expected_class: type[T] | None = None,
    ) -> AgentType:
        agent_type = await super().register_factory(type, agent_factory, expected_class=expected_class)
        self._unwrapped[self._agent_factories[agent_type.type]] = (agent_factory, expected_class)
        return agent_type

    async def _get_agent(self, agent_id: AgentId) -> Agent:
        """The stock version, with one lookup of the instances where it makes two (an agent id's hash is
        Python code)."""
        agent = self._instantiated_agents.get(agent_id)
        if agent is not None:
            return agent
        return await self._instantiate(agent_id)

    async def _instantiate(self, agent_id: AgentId) -> Agent:
        """Build and keep the agent ``agent_id``, which has no instance yet (as the stock ``_get_agent``)."""
        agent_factory = self._agent_factories.get(agent_id.type)
        if agent_factory is None:
            raise LookupError(f"Agent with name {agent_id.type} not found.")
        agent = await self._invoke_agent_factory(agent_factory, agent_id)
        self._instantiated_agents[agent_id] = agent
        return agent

    async def _invoke_agent_factory(
        self,
        agent_factory: Callable[[], T | Awaitable[T]] | Callable[[Any, AgentId], T | Awaitable[T]],
        agent_id: AgentId,
    ) -> T:
        """The stock version, minus two ``inspect.signature`` calls per agent built (arity is cached) and
        the coroutine ``register_factory`` wraps each factory in: that factory is called here, checked
        as the wrapper checks it."""
        expected: type[Any] | None = None
        unwrapped = self._unwrapped.get(agent_factory)
        if unwrapped is not None:
            agent_factory, expected = unwrapped
        else:
            arity = self._factory_arity.get(agent_factory)
            if arity is None:
                arity = self._factory_arity[agent_factory] = len(inspect.signature(agent_factory).parameters)
            if arity != 0:  # the deprecated two-argument form, or an invalid one: as the stock runtime does
                return await super()._invoke_agent_factory(agent_factory, agent_id)
        # What AgentInstantiationContext.populate_context does, without a generator-based context manager.
        instantiating = _INSTANTIATING.set((self, agent_id))
        try:
            agent = agent_factory()  # type: ignore[call-arg]
            if type(agent) is not expected and inspect.isawaitable(agent):
                agent = await agent
            if expected is not None and type(agent) is not expected and not issubclass(type(agent), expected):
                raise ValueError(
                    f"Factory registered using the wrong type: expected {expected.__name__}, "
                    f"got {type(agent).__name__}"
                )
            return agent  # type: ignore[return-value]
        except BaseException as e:
            event_logger.info(AgentConstructionExceptionEvent(agent_id=agent_id, exception=e))
            logger.error(f"Error constructing agent {agent_id}", exc_info=True)
            raise
        finally:
            _INSTANTIATING.reset(instantiating)
