"""A Temporal worker: the session workflows (``--workflows``), and the steps of some agent types.

Placement as with the gRPC host: a worker serves the agent types it is given, each on the task queue
named after the type, so the agents of a team can be split between machines and any worker that serves
a type runs any session's step of it. Only the agent steps need a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from datetime import timedelta

from autogen_core.models import ChatCompletionClient
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from handoffs_runtime.durable.step import AgentSteps
from handoffs_runtime.durable.temporal.activities import SessionActivities, StepActivities
from handoffs_runtime.durable.temporal.connect import Cluster, connect
from handoffs_runtime.durable.temporal.values import SESSIONS_QUEUE
from handoffs_runtime.durable.temporal.workflow import SessionWorkflow
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.spec import TeamSpec

SANDBOX = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_all_modules())
"""The workflow runs sandboxed, its imports passed through: the package's public face imports the
agents, and the workflow itself touches nothing but its own small state."""


def served_agents(team: TeamSpec, agents: Iterable[str] | None) -> list[str]:
    """The agent types to serve: ``agents`` checked against the team (all of them when ``None``)."""
    if agents is None:
        return [a.name for a in team.agents]
    chosen = [a for a in agents if a]
    unknown = [a for a in chosen if a not in team.names]
    if unknown:
        raise TeamConfigError(
            f"--agents names {', '.join(unknown)}, not in team {team.name}; "
            f"its agents: {', '.join(team.names)}"
        )
    return chosen


async def run_worker(
    cluster: Cluster,
    team: TeamSpec,
    *,
    store: SessionStore,
    model: ChatCompletionClient | None,
    models: Mapping[str, ChatCompletionClient] | None = None,
    agents: Iterable[str] | None = None,
    workflows: bool = False,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until ``stop`` is set (or forever): the workflows if asked, and steps of ``agents``."""
    client = await connect(cluster)
    served = served_agents(team, agents)
    steps = await AgentSteps.start(team, store=store, model=model, models=models, agents=served)
    step_activities = StepActivities(steps)
    workers = [
        Worker(client, task_queue=name, activities=[step_activities.agent_step], max_concurrent_activities=64)
        for name in served
    ]
    if workflows:
        sessions = SessionActivities(store, team)
        workers.append(
            Worker(
                client,
                task_queue=SESSIONS_QUEUE,
                workflows=[SessionWorkflow],
                activities=[sessions.open_session, sessions.record_said],
                workflow_task_executor=ThreadPoolExecutor(max_workers=4),
                workflow_runner=SANDBOX,
                sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
            )
        )
    try:
        async with AsyncExitStack() as running:
            for worker in workers:
                await running.enter_async_context(worker)
            if ready is not None:
                ready.set()
            await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        await steps.close()
