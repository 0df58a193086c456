"""A session's front end on Temporal: each message an Update of the session's workflow.

The first message starts the workflow with it (Update-with-Start, reusing a running one); the message
id is the Update's id, so sending it again after a lost answer gets the same answer and runs nothing
twice. A workflow that ended while idle is started again from the store by the next message.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from handoffs_runtime.durable.temporal.values import (
    SAY,
    SESSIONS_QUEUE,
    STATE,
    WORKFLOW,
    Answered,
    Carried,
    Pending,
    Said,
    SessionInput,
)
from handoffs_runtime.durable.temporal.workflow import SessionWorkflow
from handoffs_runtime.errors import DistributedError

SEND_ATTEMPTS = 12
"""Tries of one message while its workflow ends or the server restarts (about 15 s in all); each retry
has the same id, so a message that did arrive is answered, not run again."""
TASK_TIMEOUT = timedelta(seconds=3)
"""A workflow task whose worker died is given to another one after this long (10 s by default)."""


class TemporalSessions:
    """Send people's messages to their sessions' workflows.

    Example::

        sessions = TemporalSessions(await connect(Cluster("127.0.0.1:7233")))
        answered = await sessions.say("s1", "I want a refund for my shoes")
    """

    def __init__(self, client: Client, *, idle_seconds: float = 600.0) -> None:
        self._client = client
        self._idle = idle_seconds

    async def say(self, session_id: str, text: str, *, message_id: str | None = None) -> Answered:
        """What the person is shown for ``text``: the agents' lines, and a question if one waits."""
        said = Said(message_id or uuid.uuid4().hex, text)
        for attempt in range(1, SEND_ATTEMPTS + 1):
            start: WithStartWorkflowOperation[SessionWorkflow, str] = WithStartWorkflowOperation(
                WORKFLOW,
                SessionInput(session_id, self._idle),
                id=session_id,
                task_queue=SESSIONS_QUEUE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                task_timeout=TASK_TIMEOUT,
            )
            try:
                answered: Answered = await self._client.execute_update_with_start_workflow(
                    SAY, said, start_workflow_operation=start, id=said.message_id, result_type=Answered
                )
                return answered
            except WorkflowUpdateFailedError as exc:
                raise DistributedError(f"the session refused the message: {exc.cause or exc}") from exc
            except RPCError as exc:  # the workflow ended under the Update, or the server is restarting
                if attempt == SEND_ATTEMPTS:
                    raise DistributedError(f"the message could not be delivered: {exc}") from exc
                await asyncio.sleep(min(0.25 * attempt, 2.0))
        raise AssertionError("unreachable")

    async def waiting(self, session_id: str) -> Pending | None:
        """The question the session's running workflow keeps for a person, if any: a front end that
        picks the session up (another server, a restart) puts it to whom it is for."""
        handle = self._client.get_workflow_handle(session_id)
        try:
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                return None
            state: Carried | None = await handle.query(STATE, result_type=Carried)
        except RPCError:
            return None
        return state.pending if state is not None else None
