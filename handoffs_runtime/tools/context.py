"""What a running tool can know about its session, and how it reaches the person.

While an agent runs a tool, :func:`current_tool_context` tells the tool its session, agent and channel;
:func:`ask_person` asks the customer (or operator) a question through the session's channel. Only async
tools see it: autogen runs plain functions on a thread without the caller's context.

Example::

    async def execute_order(product: str, price: int) -> str:
        answer = await ask_person(f"Confirm order of {product} for ${price}? y/n")
        return "Success" if answer and answer.strip().lower() in ("y", "yes") else "User cancelled order."
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from autogen_core import AgentId, AgentRuntime

from handoffs_runtime.channels.base import Channel, OnRecord
from handoffs_runtime.messages import Person
from handoffs_runtime.usage import Usage


@dataclass(slots=True)
class TurnTally:
    """What one turn of one agent has counted so far: the tool loop and the tools it runs add to it.

    ``workers`` is how many workers its tools started (``create_worker``'s per-turn limit); ``usage`` is
    the tokens the turn spent: its model calls, and the workers its tools created. It is there while
    the turn runs, so a turn cut short (a worker's timeout, a failure) still counts what it spent.
    ``waited`` is the seconds its tools waited for a person (:func:`ask_person`): not the turn's time
    (``TeamPolicy.turn_deadline``), since a person who reads a confirmation slowly slows no model.
    """

    workers: int = 0
    usage: Usage = Usage.EMPTY
    waited: float = 0.0


_FIELDS = ("session_id", "agent", "channel", "runtime", "agent_id", "depth", "tally")
"""``ToolContext``'s fields, in the order of its ``__init__``'s parameters (a test checks both)."""


@dataclass(frozen=True)
class ToolContext:
    """The session, agent and channel of the running tool.

    ``runtime`` and ``agent_id`` let a tool send messages as its agent (``create_worker`` does);
    ``depth`` is 0 for a team's agents and grows by one for each level of workers; ``tally`` is what
    the tools of this turn count together.
    """

    session_id: str
    agent: str
    channel: Channel | None
    runtime: AgentRuntime | None = None
    agent_id: AgentId | None = None
    depth: int = 0
    tally: TurnTally = field(default_factory=TurnTally, compare=False)

    def __init__(
        self,
        session_id: str,
        agent: str,
        channel: Channel | None,
        runtime: AgentRuntime | None = None,
        agent_id: AgentId | None = None,
        depth: int = 0,
        tally: TurnTally | None = None,
    ) -> None:
        """What the dataclass's ``__init__`` does, the fields written at once: it would set each with
        ``object.__setattr__`` (frozen), at three times the cost, and one is built for every turn."""
        fresh = TurnTally() if tally is None else tally
        values = (session_id, agent, channel, runtime, agent_id, depth, fresh)
        self.__dict__.update(zip(_FIELDS, values, strict=True))

    @property
    def idempotency_key(self) -> str | None:
        """The key of the irreversible effect the running tool call is (see :func:`effect_key`)."""
        return _effect_key.get()


_current: ContextVar[ToolContext | None] = ContextVar("handoffs_tool_context", default=None)


def current_tool_context() -> ToolContext | None:
    return _current.get()


def set_tool_context(ctx: ToolContext) -> None:
    """Set for the current task (each message handler runs in its own task)."""
    _current.set(ctx)


_call_trace: ContextVar[dict[str, str] | None] = ContextVar("handoffs_call_trace", default=None)


def call_trace() -> dict[str, str] | None:
    """The W3C trace context of the running tool call, for a message the tool sends (``WorkerTask``).

    A traced tool sets it (telemetry is on); otherwise it is ``None`` and costs one context read.
    """
    return _call_trace.get()


@contextmanager
def tracing_call(carrier: dict[str, str] | None) -> Iterator[None]:
    """Make ``carrier`` the :func:`call_trace` of the tool call running inside the ``with`` block."""
    token = _call_trace.set(carrier)
    try:
        yield
    finally:
        _call_trace.reset(token)


_effect_key: ContextVar[str | None] = ContextVar("handoffs_effect_key", default=None)


def effect_key() -> str | None:
    """The idempotency key of the running call of an irreversible tool, when the session's store keeps
    the effect ledger: the same for every retry, redelivery or resumption of that call, and different for
    another order of the same item. A tool that calls a payment or order API forwards it, so the API
    itself refuses a duplicate; otherwise ``None``.
    """
    return _effect_key.get()


@contextmanager
def running_effect(key: str) -> Iterator[None]:
    """Make ``key`` the :func:`effect_key` of the tool call running inside the ``with`` block."""
    token = _effect_key.set(key)
    try:
        yield
    finally:
        _effect_key.reset(token)


TurnCheck = Callable[[], Awaitable[str | None]]
"""Why the running call's turn is over (the person has written since), or ``None`` while it is not."""

_turn_check: ContextVar[TurnCheck | None] = ContextVar("handoffs_turn_check", default=None)


@contextmanager
def checking_turn(check: TurnCheck) -> Iterator[None]:
    """Inside the block, :func:`turn_over` asks ``check``: an approval that arrives once its turn is over
    is void (the tool loop's effect ledger knows the turn; see ``agents.ledgered``)."""
    token = _turn_check.set(check)
    try:
        yield
    finally:
        _turn_check.reset(token)


async def turn_over() -> str | None:
    """Why the running call's turn is over, or ``None`` (also when nothing can tell)."""
    check = _turn_check.get()
    return None if check is None else await check()


_asking: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
"""One lock per session while a question is pending (weak: it goes away when nobody waits on it)."""

Asked = list[tuple[str, str | None]]
"""The questions a tool call put to the person, each with its answer (``None``: nobody answered)."""

_asked: ContextVar[Asked | None] = ContextVar("handoffs_asked", default=None)


@contextmanager
def recording_questions() -> Iterator[Asked]:
    """Record what the tool call running inside the ``with`` block asks the person (:func:`ask_person`,
    approvals): the tool loop reads it to tell a call the person declined."""
    asked: Asked = []
    token = _asked.set(asked)
    try:
        yield asked
    finally:
        _asked.reset(token)


async def ask_person(prompt: str, *, person: Person = "customer") -> str | None:
    """Ask the session's person a question; ``None`` if there is no channel or they left.

    Tools of one response run at once, so two of them may want to ask; the questions of one session
    are asked one at a time, each answer going to the question it belongs to. A channel that keeps
    questions on record (:class:`~handoffs_runtime.channels.base.OnRecord`) stores the question and its
    answer in the session's transcript: it may be what authorised the tool.
    """
    ctx = _current.get()
    answer: str | None = None
    if ctx is not None and ctx.channel is not None:
        asked_at = time.monotonic()
        lock = _asking.get(ctx.session_id)
        if lock is None:
            lock = _asking[ctx.session_id] = asyncio.Lock()
        async with lock:
            if isinstance(ctx.channel, OnRecord):
                answer = await ctx.channel.ask_on_record(
                    ctx.session_id, prompt, person=person, asker=ctx.agent
                )
            else:
                answer = await ctx.channel.ask(ctx.session_id, prompt, person=person)
        ctx.tally.waited += time.monotonic() - asked_at
    asked = _asked.get()
    if asked is not None:
        asked.append((prompt, answer))
    return answer
