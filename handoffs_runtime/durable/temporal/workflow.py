"""One workflow per session: the person's messages as Updates, taken in order, one agent step each.

The workflow only decides and carries small state (:class:`~.values.Carried`): who answers next, the
store's sequence number, the last answered message ids, a question waiting for the person. Every side
effect is an activity: the person's message stored (a local activity), each agent's turn (on the
queue named after the agent type). A handoff moves the conversation to the next step; a step that needs
a person ends, and the workflow waits for the answer as the session's next message. No execution
timeout: an idle timer ends the workflow, and the next message starts a new one from the store (a
question waiting for its person keeps the workflow longer: only the workflow holds it).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from functools import partial

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from handoffs_runtime.durable.temporal.values import (
        RECENT,
        SAY,
        STATE,
        WORKFLOW,
        Answered,
        Carried,
        Opened,
        OpenRequest,
        Pending,
        Said,
        SaidRequest,
        SessionInput,
        StepInput,
        StepResult,
    )

MAX_MESSAGE_CHARS = 20_000
STORE_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=5), non_retryable_error_types=["FenceError"])
STEP_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=5),
    maximum_attempts=4,
    non_retryable_error_types=["FenceError", "HandoffsError"],
)
"""A step's transient failures (its worker killed, a model that may recover) are tried a few times; the
last try takes the agent's apology as its answer (see ``StepRequest.last_try``)."""
HOPS_MESSAGE = "Sorry, this request went round the team too many times. Could you say it another way?"


@workflow.defn(name=WORKFLOW)
class SessionWorkflow:
    @workflow.init
    def __init__(self, start: SessionInput) -> None:
        self._input = start
        self._state: Carried | None = start.carried
        self._in_order = asyncio.Lock()
        self._messages = 0
        self._busy = 0

    @workflow.run
    async def run(self, start: SessionInput) -> str:
        while True:
            seen = self._messages
            asking = self._asking()
            idle = timedelta(seconds=start.question_seconds if asking else start.idle_seconds)
            try:
                await workflow.wait_condition(partial(self._woken, seen), timeout=idle)
            except TimeoutError:
                if self._busy == 0:
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    # A question asked during the wait gets its own, longer wait.
                    if self._busy == 0 and self._messages == seen and (asking or not self._asking()):
                        return "idle"
                continue
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(lambda: self._busy == 0 and workflow.all_handlers_finished())
                carried = self._state
                workflow.continue_as_new(
                    SessionInput(
                        start.session_id, start.idle_seconds, start.max_hops, carried, start.question_seconds
                    )
                )

    def _asking(self) -> bool:
        return self._state is not None and self._state.pending is not None

    def _woken(self, seen: int) -> bool:
        return self._messages != seen or workflow.info().is_continue_as_new_suggested()

    @workflow.update(name=SAY)
    async def say(self, said: Said) -> Answered:
        self._busy += 1
        self._messages += 1
        try:
            async with self._in_order:  # arrival order: the lock is fair
                return await self._turn(said)
        finally:
            self._busy -= 1

    @say.validator
    def _check(self, said: Said) -> None:
        if not said.message_id or not said.text.strip():
            raise ValueError("a message needs an id and some words")
        if len(said.text) > MAX_MESSAGE_CHARS:
            raise ValueError(f"a message is at most {MAX_MESSAGE_CHARS:,} characters")

    @workflow.query(name=STATE)
    def state(self) -> Carried | None:
        return self._state

    async def _turn(self, said: Said) -> Answered:
        state = await self._opened()
        for done in state.recent:
            if done.message_id == said.message_id:
                return done
        pending = state.pending
        if pending is not None:
            agent, path, spent = pending.agent, list(pending.path), pending.turn_spent
            answers = [*pending.answers, [pending.prompt, said.text]]
            state.pending = None
        else:
            agent, path, answers, spent = state.active_agent, [state.active_agent], [], 0.0
            request = SaidRequest(self._input.session_id, said.text, agent, state.seq)
            state.seq = await workflow.execute_local_activity(
                "record_said",
                request,
                result_type=int,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=STORE_RETRY,
            )
        answered = Answered(said.message_id)
        for _ in range(self._input.max_hops):
            step = StepInput(
                self._input.session_id, agent, state.seq, path, answers, usage=state.usage, turn_spent=spent
            )
            result = await self._step(step)
            state.seq, state.usage = result.seq, result.usage
            answered.lines += result.lines
            if result.kind == "handoff":
                agent, answers, spent = result.target, [], result.turn_spent  # one deadline a turn
                path.append(agent)
                state.active_agent = agent
                continue
            if result.kind == "question":
                state.pending = Pending(agent, path, answers, result.question, result.person, spent)
                answered.question, answered.person = result.question, result.person
            else:
                state.active_agent = result.agent
            break
        else:
            answered.lines.append(HOPS_MESSAGE)
        answered.agent = state.active_agent
        state.recent = [*state.recent, answered][-RECENT:]
        return answered

    async def _opened(self) -> Carried:
        if self._state is None:
            opened = await workflow.execute_local_activity(
                "open_session",
                OpenRequest(self._input.session_id),
                result_type=Opened,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=STORE_RETRY,
            )
            if self._state is None:
                self._state = Carried(opened.active_agent, opened.seq, usage=opened.usage)
        return self._state

    async def _step(self, step: StepInput) -> StepResult:
        try:
            result: StepResult = await workflow.execute_activity(
                "agent_step",
                step,
                result_type=StepResult,
                task_queue=step.agent,
                schedule_to_close_timeout=timedelta(minutes=10),
                start_to_close_timeout=timedelta(minutes=5),
                heartbeat_timeout=timedelta(seconds=5),
                retry_policy=STEP_RETRY,
            )
            return result
        except ActivityError as exc:  # failed for good: the person is told, the session goes on
            cause = exc.cause
            why = cause.message if isinstance(cause, ApplicationError) else "it did not answer in time"
            workflow.logger.warning("step of %s failed: %s", step.agent, why)
            line = f"⚠ {step.agent} could not answer: {why}"
            return StepResult("reply", step.agent, step.expected_seq, [line], usage=step.usage)
