"""The activities of a session's workflow: the store's reads and writes, and one agent step each.

``open_session`` and ``record_said`` run as local activities of the workflow worker; ``agent_step``
on the queue named after the agent type, in any worker that serves it. All of them take the session by
reference and write fenced by the expected sequence number (see :mod:`handoffs_runtime.durable.fenced`),
so a retry, or a step that a killed worker had finished, reads back what is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio import activity
from temporalio.exceptions import ApplicationError

from handoffs_runtime.durable.fenced import FenceError, open_state, record_said
from handoffs_runtime.durable.step import AgentSteps, StepRequest, TransientStepError
from handoffs_runtime.durable.temporal.values import Opened, OpenRequest, SaidRequest, StepInput, StepResult
from handoffs_runtime.durable.temporal.workflow import STEP_RETRY
from handoffs_runtime.errors import HandoffsError, StoreError
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.usage import Usage


class SessionActivities:
    """The sessions queue's activities: they need the store and the team's entry agent, no model."""

    def __init__(self, store: SessionStore, team: TeamSpec) -> None:
        self._store = store
        self._team = team

    @activity.defn(name="open_session")
    async def open_session(self, request: OpenRequest) -> Opened:
        with _classified():
            state = await open_state(
                self._store, request.session_id, entry_agent=self._team.entry, team=self._team.name
            )
        return Opened(state.active_agent, state.seq, state.usage.to_json())

    @activity.defn(name="record_said")
    async def record_said(self, request: SaidRequest) -> int:
        with _classified():
            return await record_said(
                self._store,
                request.session_id,
                request.text,
                agent=request.agent,
                expected_seq=request.expected_seq,
            )


class StepActivities:
    """The agent queues' activity: one agent step, heartbeating while the agent works."""

    def __init__(self, steps: AgentSteps) -> None:
        self._steps = steps

    @activity.defn(name="agent_step")
    async def agent_step(self, step: StepInput) -> StepResult:
        attempts = STEP_RETRY.maximum_attempts
        request = StepRequest(
            step.session_id,
            step.agent,
            step.expected_seq,
            tuple(step.path),
            tuple((prompt, answer) for prompt, answer in step.answers),
            last_try=activity.info().attempt >= attempts,
            usage=Usage.from_json(step.usage),
            turn_spent=step.turn_spent,
        )
        with _classified():
            outcome = await self._steps.run(request, beat=activity.heartbeat)
        return StepResult(
            outcome.kind,
            outcome.agent,
            outcome.seq,
            list(outcome.lines),
            outcome.target,
            outcome.question,
            outcome.person,
            usage=outcome.usage.to_json(),
            turn_spent=outcome.turn_spent,
        )


@contextmanager
def _classified() -> Iterator[None]:
    """Errors said as Temporal retries them: a transient one and a store's failure are retried (the
    model or the store may come back), a broken fence or a misconfiguration is not."""
    try:
        yield
    except (TransientStepError, StoreError):
        raise
    except FenceError as exc:
        raise ApplicationError(str(exc), type="FenceError", non_retryable=True) from exc
    except HandoffsError as exc:
        raise ApplicationError(str(exc), type="HandoffsError", non_retryable=True) from exc
