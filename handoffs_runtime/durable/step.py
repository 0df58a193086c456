"""One agent step, engine-neutral: the session read from the store, one agent's turn, its end stored.

A durable engine (Temporal, or any other) carries only small state: who holds the conversation, the
store's sequence number it expects, the turn's path. It asks :class:`AgentSteps` to run one agent's
turn and gets a :class:`StepOutcome`: the agent replied, handed the conversation on, or needs a person
mid-turn (a tool's confirmation, the human agent). Why the registered agents and not the tool loop
alone: ``register_agents`` runs the very ``AIAgent`` (handoff checks, filters, loop guard, the apology
for a failed model) that the in-process and gRPC engines run, so the engines cannot drift apart.

Each agent type served here gets a runtime of its own with that one agent registered; everything the
agent publishes (its reply to the person, the conversation handed to another agent, handoff events) is
caught by :class:`_Outbox` instead of being delivered, so a step is exactly one agent's turn.

A person is never waited on inside a step (see :mod:`.asking`): the question ends the step; the engine
waits for the answer and runs the step again with the answers so far. Irreversible calls go through the
store's effect ledger, so no try of a step repeats one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from autogen_core import MessageContext, TypeSubscription, message_handler
from autogen_core.models import ChatCompletionClient

from handoffs_runtime.agents.ai import MODEL_ERROR_REPLY
from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.durable.asking import Answer, StepChannel, StepPerson, Turn, quiet_questions
from handoffs_runtime.durable.fenced import (
    FenceError,
    StepRef,
    StoredStep,
    describe_entries,
    read_conversation,
    write_step,
)
from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.messages import (
    AgentResponse,
    HandoffEvent,
    Person,
    UserTask,
    user_task,
)
from handoffs_runtime.models.failures import SLOW_MODEL_REPLY
from handoffs_runtime.runtime.release import live_sessions, release_session
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.effects import ledger_of
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.sessions.transcript import stored_usage
from handoffs_runtime.team.register import register_agents
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.topics import HANDOFF_EVENTS, session_topic
from handoffs_runtime.usage import Usage

logger = logging.getLogger("handoffs_runtime")

OUTBOX = "durable_step_outbox"
"""The agent type that catches what a step's agent publishes."""

StepKind = Literal["reply", "handoff", "question"]


class TransientStepError(HandoffsError):
    """The model failed in a way that may pass (a timeout, an overloaded server): worth another try."""


class StepTimeoutError(TransientStepError):
    """The agent did not finish its turn within the step's bound."""


@dataclass(frozen=True, slots=True)
class StepRequest(StepRef):
    """One agent's turn, by reference: the conversation is whatever the store holds at ``expected_seq``."""

    path: tuple[str, ...] = ()
    """Who held the conversation since the person last spoke (the loop guard reads it)."""
    answers: tuple[Answer, ...] = ()
    """Questions the person already answered in this turn: asked again, they are answered at once."""
    last_try: bool = True
    """Whether a transient model failure is the final word (else it raises ``TransientStepError``)."""
    usage: Usage = Usage.EMPTY
    """The session's tokens before the step: the team's token budget counts them."""
    turn_spent: float = 0.0
    """Seconds of the turn's deadline (``TeamPolicy.turn_deadline``) the turn's earlier steps spent: a
    handoff's step gets what is left of the turn, not a deadline of its own."""


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How a step ended, and what the person is shown of it (lines, in order)."""

    kind: StepKind
    agent: str
    seq: int
    """The store's last sequence number after the step (unchanged when it waits for a person)."""
    lines: tuple[str, ...] = ()
    target: str = ""
    """The agent the conversation went to (``handoff``)."""
    question: str = ""
    """What the person is asked (``question``)."""
    person: Person = "customer"
    usage: Usage = Usage.EMPTY
    """The session's tokens after the step."""
    turn_spent: float = 0.0
    """After a handoff: the seconds of the turn's deadline spent so far, for the target's step."""


class _Outbox(SessionAgent):
    """Catches what the step's agent publishes: the reply or the handed-on task ends the step."""

    def __init__(self, turns: Mapping[str, Turn]) -> None:
        super().__init__("what one agent step publishes")
        self._turns = turns

    def _turn(self) -> Turn | None:
        return self._turns.get(self.id.key)

    @message_handler
    async def on_reply(self, message: AgentResponse, ctx: MessageContext) -> None:
        self._end(message)

    @message_handler
    async def on_task(self, message: UserTask, ctx: MessageContext) -> None:
        self._end(message)

    @message_handler
    async def on_event(self, message: HandoffEvent, ctx: MessageContext) -> None:
        turn = self._turn()
        if turn is not None and message.session_id == self.id.key:
            turn.events.append(message)

    def _end(self, message: UserTask | AgentResponse) -> None:
        turn = self._turn()
        if turn is not None and not turn.done.done():
            turn.done.set_result(message)


class AgentSteps:
    """Runs agent steps for the agent types this process serves, reading and writing ``store``.

    Example::

        steps = await AgentSteps.start(team, store=store, model=model, agents=["SalesAgent"])
        outcome = await steps.run(StepRequest("s1", "SalesAgent", expected_seq=3))
    """

    def __init__(self, team: TeamSpec, store: SessionStore, *, step_timeout: float) -> None:
        self.team = team
        self.store = store
        self.step_timeout = step_timeout
        self._runtimes: dict[str, HandoffsRuntime] = {}
        self._turns: dict[str, dict[str, Turn]] = {}
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        """Per session with a step here: its lock, and how many steps hold or wait for it."""

    @classmethod
    async def start(
        cls,
        team: TeamSpec,
        *,
        store: SessionStore,
        model: ChatCompletionClient | None,
        models: Mapping[str, ChatCompletionClient] | None = None,
        agents: Iterable[str] | None = None,
        step_timeout: float = 300.0,
    ) -> AgentSteps:
        """Register each served agent type on a runtime of its own, its outbox catching the rest."""
        quiet_questions()
        steps = cls(team, store, step_timeout=step_timeout)
        served = list(agents) if agents is not None else [a.name for a in team.agents]
        topics = {team.user_topic, HANDOFF_EVENTS, *team.names}
        for name in served:
            turns: dict[str, Turn] = {}
            runtime = HandoffsRuntime(ignore_unhandled_exceptions=True)
            channel = StepPerson(StepChannel(turns, ledger_of(store)), store)
            await register_agents(runtime, team, only=[name], model=model, models=models, channel=channel)
            await _Outbox.register(runtime, OUTBOX, lambda turns=turns: _Outbox(turns))  # type: ignore[misc]
            for topic in sorted(topics - {name}):
                await runtime.add_subscription(TypeSubscription(topic_type=topic, agent_type=OUTBOX))
            runtime.start()
            steps._runtimes[name] = runtime
            steps._turns[name] = turns
        return steps

    @property
    def agents(self) -> list[str]:
        return list(self._runtimes)

    async def run(self, request: StepRequest, *, beat: Callable[[], None] | None = None) -> StepOutcome:
        """Run ``request``'s step once, or read back what an earlier try of it stored (first writer wins)."""
        runtime = self._runtimes.get(request.agent)
        if runtime is None:
            raise HandoffsError(f"this worker does not serve {request.agent}; serve it with --agents")
        session = request.session_id
        lock, users = self._locks.get(session, (asyncio.Lock(), 0))
        self._locks[session] = (lock, users + 1)
        try:
            async with lock:  # a zombie try of the same step in this process finishes first
                try:
                    stored = await self._read_back(request)
                    if stored is not None:
                        return stored
                    return await self._run(runtime, self._turns[request.agent], request, beat)
                finally:  # agents keep nothing between steps: the instances it created go
                    release_session(runtime, session)
        finally:
            lock, users = self._locks[session]
            if users == 1:
                del self._locks[session]
            else:
                self._locks[session] = (lock, users - 1)

    def live_sessions(self) -> set[str]:
        """The sessions that have agent instances in this process right now (none between steps)."""
        return set().union(*(live_sessions(r) for r in self._runtimes.values()))

    async def _read_back(self, request: StepRequest) -> StepOutcome | None:
        """The outcome an earlier try of ``request`` stored, or ``None`` when nothing is stored yet."""
        state = await self.store.get_session(request.session_id)
        if state.last_seq == request.expected_seq:
            return None
        if state.last_seq < request.expected_seq:
            raise FenceError(
                f"session {request.session_id} ends at {state.last_seq}, before {request.expected_seq}: "
                "the store is older than the engine's state"
            )
        entries = await self.store.entries(request.session_id, after=request.expected_seq)
        lines = tuple(describe_entries(entries, self.team.labels))
        usage = request.usage + stored_usage(entries)
        handed = None
        for entry in entries:
            event = entry.event()
            if event is not None and event.outcome == "handoff" and event.source == request.agent:
                handed = event
            elif entry.kind == "reply":
                handed = None
        if handed is not None:
            return StepOutcome(  # the earlier try's clock is not stored: what came in is what went on
                "handoff",
                request.agent,
                state.last_seq,
                lines,
                target=handed.target,
                usage=usage,
                turn_spent=request.turn_spent,
            )
        return StepOutcome("reply", state.active_agent, state.last_seq, lines, usage=usage)

    async def _run(
        self,
        runtime: HandoffsRuntime,
        turns: dict[str, Turn],
        request: StepRequest,
        beat: Callable[[], None] | None,
    ) -> StepOutcome:
        session = request.session_id
        conversation = await read_conversation(self.store, session)
        turn = Turn(request.agent, request.answers, asyncio.get_running_loop().create_future())
        turns[session] = turn
        try:
            path = list(request.path or (request.agent,))
            task = user_task(conversation, path, request.usage, request.turn_spent)
            await runtime.publish_message(task, topic_id=session_topic(request.agent, session))
            result = await self._wait(turn, beat)
        finally:
            turns.pop(session, None)
        if result is None:
            prompt, person = turn.question or ("", "customer")
            return StepOutcome(
                "question",
                request.agent,
                request.expected_seq,
                question=prompt,
                person=person,
                usage=request.usage,
            )
        if isinstance(result, AgentResponse) and _transient(result) and not request.last_try:
            raise TransientStepError(f"{request.agent}'s model failed in session {session}; trying again")
        spent = result.usage - request.usage
        step = StoredStep(conversation, result, turn.events, turn.asked, request.agent, spent, turn.notices)
        seq = await write_step(self.store, request, step)
        entries = await self.store.entries(session, after=request.expected_seq)
        lines = tuple(describe_entries(entries, self.team.labels))
        if isinstance(result, AgentResponse):
            return StepOutcome("reply", result.reply_to_topic_type, seq, lines, usage=result.usage)
        target = result.turn_path[-1] if result.turn_path else request.agent
        carried = result.turn_spent
        return StepOutcome(
            "handoff", request.agent, seq, lines, target=target, usage=result.usage, turn_spent=carried
        )

    async def _wait(self, turn: Turn, beat: Callable[[], None] | None) -> UserTask | AgentResponse | None:
        """The step's end, heartbeating each second; bounded by ``step_timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.step_timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise StepTimeoutError(f"{turn.agent} took over {self.step_timeout:g} s")
            try:
                return await asyncio.wait_for(asyncio.shield(turn.done), min(1.0, left))
            except TimeoutError:
                if beat is not None:
                    beat()

    async def close(self) -> None:
        for runtime in self._runtimes.values():
            await runtime.stop()


def _transient(response: AgentResponse) -> bool:
    """Whether the agent answered with an apology for a model failure that may pass (slow, or down)."""
    last = response.context[-1] if response.context else None
    return last is not None and getattr(last, "content", None) in (MODEL_ERROR_REPLY, SLOW_MODEL_REPLY)
