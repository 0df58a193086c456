"""Bounded memory: release a session's agent instances when it ends or sits idle.

autogen-core's ``SingleThreadedAgentRuntime`` creates one agent instance per (agent type, session) on
first use and keeps it for ever, along with the routes it caches per topic (microsoft/autogen issue
5374), so a long-running process grows with every session it has served. Our agents hold no state
between messages (the conversation travels in the message, the session state lives in the store), so
forgetting them is always safe: the next message for that session simply creates fresh instances.

Example::

    activity = SessionActivity()
    runtime = SingleThreadedAgentRuntime(intervention_handlers=[activity])
    await register_team(runtime, team, model=model, channel=channel,
                        on_session_end=lambda s: release_session(runtime, s))
    ...
    release_idle(runtime, activity, idle_for=600)   # e.g. from a periodic task
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Collection
from typing import Any

from autogen_core import (
    AgentId,
    AgentRuntime,
    DefaultInterventionHandler,
    DropMessage,
    MessageContext,
    SingleThreadedAgentRuntime,
    TopicId,
    TypeSubscription,
)

from handoffs_runtime.private import cached_routes, runtime_state
from handoffs_runtime.runtime.subscriptions import TypeIndexedSubscriptions
from handoffs_runtime.topics import known_agent_id, session_of_key, worker_key

SessionEndHook = Callable[[str], None]
"""Called with a session's id when the session ends; defined here, below the agents that call it, so
that ending a session is the runtime's concept and the runtime needs nothing of the agents."""


def _internals(runtime: SingleThreadedAgentRuntime) -> tuple[dict[AgentId, Any], Any, set[str]]:
    try:
        return runtime_state(runtime)
    except AttributeError as exc:  # a future autogen-core that reorganised its runtime
        raise RuntimeError(
            "release_session does not know this autogen-core runtime's internals; pin autogen-core==0.7.5 "
            "or update handoffs_runtime.runtime.release"
        ) from exc


def release_session(
    runtime: SingleThreadedAgentRuntime, session_id: str, *, worker_types: Collection[str] | None = None
) -> int:
    """Forget ``session_id``'s agent instances and cached topic routes; returns how many agents went.

    The workers the session created go too: of ``worker_types`` when given (``register_team`` knows them),
    else of every agent type.
    """
    agents, subscriptions, agent_types = _internals(runtime)
    released = 0
    for agent_type in list(agent_types):
        released += agents.pop(known_agent_id(agent_type, session_id), None) is not None  # a lookup only
        if worker_types is None or agent_type in worker_types:
            released += _release_workers(agents, agent_type, session_id)
    if isinstance(subscriptions, TypeIndexedSubscriptions):  # it caches nothing per session
        return released
    seen, routes = cached_routes(subscriptions)
    topics: set[TopicId] = set()
    if all(isinstance(s, TypeSubscription) for s in subscriptions.subscriptions):
        topics = {TopicId(s.topic_type, session_id) for s in subscriptions.subscriptions}
    else:  # a prefix subscription may have routed topic types we cannot list
        topics = {t for t in seen if t.source == session_id}
    for topic in topics:
        seen.discard(topic)
        routes.pop(topic, None)
    return released


def _release_workers(agents: dict[AgentId, Any], agent_type: str, session_id: str) -> int:
    """Pop the session's worker instances of ``agent_type``: slots count from 1 at each nesting level."""
    released = 0
    for depth in itertools.count(1):
        slot = 1
        while agents.pop(known_agent_id(agent_type, worker_key(session_id, depth, slot)), None) is not None:
            slot += 1
        released += slot - 1
        if slot == 1:
            return released
    return released


def live_sessions(runtime: SingleThreadedAgentRuntime) -> set[str]:
    """The sessions that have agent instances in ``runtime`` right now."""
    agents, _, _ = _internals(runtime)
    return {session_of_key(agent_id.key) for agent_id in agents}


class SessionActivity(DefaultInterventionHandler):
    """Remembers when each session last had a message, so that idle sessions can be released.

    Pass it to ``SingleThreadedAgentRuntime(intervention_handlers=[...])``. ``clock`` is for tests.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, float] = {}

    async def on_publish(self, message: Any, *, message_context: MessageContext) -> Any | type[DropMessage]:
        topic = message_context.topic_id
        if topic is not None:
            self._last[topic.source] = self._clock()
        return message

    async def on_send(
        self, message: Any, *, message_context: MessageContext, recipient: AgentId
    ) -> Any | type[DropMessage]:
        self._last[session_of_key(recipient.key)] = self._clock()
        return message

    def idle(self, longer_than: float) -> list[str]:
        """Sessions without a message for more than ``longer_than`` seconds."""
        cutoff = self._clock() - longer_than
        return [session for session, at in self._last.items() if at < cutoff]

    def forget(self, session_id: str) -> None:
        self._last.pop(session_id, None)


def release_idle(
    runtime: SingleThreadedAgentRuntime, activity: SessionActivity, *, idle_for: float
) -> list[str]:
    """Release every session idle for more than ``idle_for`` seconds; returns their ids.

    A session waiting on a person stays correct: its pending handler keeps its own instance, and the
    person's answer is routed to fresh instances.
    """
    sessions = activity.idle(idle_for)
    for session in sessions:
        release_session(runtime, session)
        activity.forget(session)
    return sessions


def release_on_end(
    runtime: AgentRuntime, hook: SessionEndHook | None, *, worker_types: Collection[str] | None = None
) -> SessionEndHook | None:
    """``hook``, followed by :func:`release_session`, when ``runtime`` is a single-threaded runtime.

    Other runtimes (the gRPC worker) manage their own instances; for them ``hook`` is returned as is.
    """
    if not isinstance(runtime, SingleThreadedAgentRuntime):
        return hook

    def ended(session_id: str) -> None:
        if hook is not None:
            hook(session_id)
        release_session(runtime, session_id, worker_types=worker_types)

    return ended
