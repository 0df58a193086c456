"""Delegation where the caller keeps control: ``create_worker`` and agents offered as tools.

In a handoff the conversation moves to another agent. Here the calling agent sends a task (RPC, in the
same runtime: single-process or gRPC) to a ``WorkerAgent`` under a fresh ``AgentId`` key, waits for its
final answer and gets it back as a tool result, then carries on.

Limits (``WorkerLimits``): workers per turn of the calling agent, nesting depth (a worker may create
workers when given the tool), and a timeout. In one process, cancelling the caller's tool call cancels
the worker. Across processes (gRPC) a cancel or timeout only ends the caller's wait: the worker on the
other process runs on until it finishes or its own copy of the timeout (sent with the task) stops it,
and its late answer is dropped. A worker that fails, times out or is refused becomes an error result
for the model, never a crash.

Example::

    team = TeamSpec(
        name="lab",
        entry="Orchestrator",
        agents=[
            AgentSpec("Orchestrator", tools=worker_tools("Worker")),
            AgentSpec("Worker", tools=[execute_python_code], kind="worker"),
        ],
    )
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from autogen_core import AgentId, CancellationToken
from autogen_core.tools import FunctionTool

from handoffs_runtime.errors import HandoffsError, TeamConfigError
from handoffs_runtime.messages import WorkerResult, WorkerTask
from handoffs_runtime.tools.context import ToolContext, call_trace, current_tool_context
from handoffs_runtime.topics import agent_tool_name, tool_agent_type, worker_key


class WorkerError(HandoffsError):
    """A worker could not give an answer (refused by a limit, failed, timed out); becomes an error result."""


@dataclass(frozen=True, slots=True)
class WorkerLimits:
    """Bounds on delegation. ``max_depth`` 1 means workers may not create workers of their own."""

    max_workers_per_turn: int = 4
    max_depth: int = 2
    timeout: float = 120.0

    def __post_init__(self) -> None:
        if self.max_workers_per_turn < 1 or self.max_depth < 1:
            raise TeamConfigError("max_workers_per_turn and max_depth must be at least 1")
        if self.timeout <= 0:
            raise TeamConfigError("the worker timeout must be positive seconds")


class DelegateTool(FunctionTool):
    """A tool that sends tasks to the worker type ``delegates_to``; the team checks that it exists."""

    def __init__(
        self, func: Callable[..., Awaitable[Any]], *, delegates_to: str, name: str, description: str
    ) -> None:
        super().__init__(func, name=name, description=description)
        self.delegates_to = delegates_to


async def ask_worker(
    worker_type: str,
    task: str,
    *,
    limits: WorkerLimits | None = None,
    cancellation_token: CancellationToken | None = None,
) -> str:
    """Send ``task`` to a new worker of ``worker_type`` and return its answer; raise ``WorkerError`` if none.

    Only callable from a tool that an agent is running (it needs the agent's runtime and session).
    """
    limits = limits or WorkerLimits()
    ctx = _context()
    slot = _reserve(ctx, 1, limits)
    return await _run_one(ctx, worker_type, task, slot, limits, cancellation_token)


async def _run_one(
    ctx: ToolContext,
    worker_type: str,
    task: str,
    slot: int,
    limits: WorkerLimits,
    cancellation_token: CancellationToken | None,
) -> str:
    assert ctx.runtime is not None
    token = CancellationToken()
    if cancellation_token is not None:
        cancellation_token.add_callback(token.cancel)
    recipient = AgentId(worker_type, worker_key(ctx.session_id, ctx.depth + 1, slot))
    message = WorkerTask(
        session_id=ctx.session_id,
        task=task,
        caller=ctx.agent,
        depth=ctx.depth + 1,
        timeout=limits.timeout,
        trace=call_trace(),
    )
    try:
        async with asyncio.timeout(limits.timeout):
            reply = await ctx.runtime.send_message(
                message, recipient, sender=ctx.agent_id, cancellation_token=token
            )
    except TimeoutError:
        token.cancel()
        raise WorkerError(
            f"worker {worker_type} timed out after {limits.timeout:g} s and was stopped"
        ) from None
    except asyncio.CancelledError:
        token.cancel()
        raise
    except Exception as exc:
        # The runtimes say "Recipient not found" (single-threaded) or raise LookupError for an unknown type.
        missing = isinstance(exc, LookupError) or "not found" in str(exc).lower()
        hint = (
            f"; is an agent of type {worker_type!r} registered with this runtime or its host?"
            if missing
            else ""
        )
        raise WorkerError(f"worker {worker_type} failed: {type(exc).__name__}: {exc}{hint}") from exc
    if not isinstance(reply, WorkerResult):
        raise WorkerError(f"worker {worker_type} answered with {type(reply).__name__}, not WorkerResult")
    ctx.tally.usage += reply.usage  # the worker's tokens count for the caller's turn
    if not reply.ok:
        raise WorkerError(reply.text)
    return reply.text


def _context() -> ToolContext:
    ctx = current_tool_context()
    if ctx is None or ctx.runtime is None:
        raise WorkerError("workers can only be created by a tool that an agent runs (no agent runtime here)")
    return ctx


def _reserve(ctx: ToolContext, count: int, limits: WorkerLimits) -> int:
    """Check the depth and per-turn limits, count ``count`` more workers; the first one's slot."""
    if ctx.depth + 1 > limits.max_depth:
        raise WorkerError(
            f"nesting limit reached: workers may be {limits.max_depth} level(s) deep; do this step yourself"
        )
    used = ctx.tally.workers
    if used + count > limits.max_workers_per_turn:
        left = limits.max_workers_per_turn - used
        raise WorkerError(
            f"worker limit reached: at most {limits.max_workers_per_turn} workers per turn, {left} left; "
            "combine tasks or answer with what you have"
        )
    ctx.tally.workers = used + count
    return used + 1


async def ask_workers(
    worker_type: str,
    tasks: Sequence[str],
    *,
    limits: WorkerLimits | None = None,
    cancellation_token: CancellationToken | None = None,
) -> list[str | WorkerError]:
    """Run one worker per task in parallel; each answer, or the ``WorkerError`` of that worker, in order."""
    limits = limits or WorkerLimits()
    ctx = _context()
    first = _reserve(ctx, len(tasks), limits)
    results = await asyncio.gather(
        *(_run_one(ctx, worker_type, t, first + i, limits, cancellation_token) for i, t in enumerate(tasks)),
        return_exceptions=True,
    )
    out: list[str | WorkerError] = []
    for item in results:
        if isinstance(item, str | WorkerError):
            out.append(item)
        elif isinstance(item, Exception):
            out.append(WorkerError(f"{type(item).__name__}: {item}"))
        else:
            raise item  # cancellation of this worker: the whole call is being cancelled
    return out


def worker_tools(worker_type: str = "Worker", *, limits: WorkerLimits | None = None) -> list[DelegateTool]:
    """``create_worker(task_description)`` and ``create_workers(task_descriptions)`` for ``worker_type``."""
    chosen = limits or WorkerLimits()

    async def create_worker(
        task_description: Annotated[str, "the whole task for the worker, with everything it needs to know"],
        cancellation_token: CancellationToken | None = None,
    ) -> str:
        return await ask_worker(
            worker_type, task_description, limits=chosen, cancellation_token=cancellation_token
        )

    async def create_workers(
        task_descriptions: Annotated[list[str], "independent tasks, one per worker, run at the same time"],
        cancellation_token: CancellationToken | None = None,
    ) -> str:
        if not task_descriptions:
            raise WorkerError("give at least one task description")
        answers = await ask_workers(
            worker_type, task_descriptions, limits=chosen, cancellation_token=cancellation_token
        )
        return "\n".join(
            f"worker {i}: {'Error: ' + str(a) if isinstance(a, WorkerError) else a}"
            for i, a in enumerate(answers, 1)
        )

    return [
        DelegateTool(
            create_worker,
            delegates_to=worker_type,
            name="create_worker",
            description=(
                "Create a worker sub-agent that can run Python code to carry out one task, and get its "
                "answer back. Use it to run code or for any self-contained sub-task."
            ),
        ),
        DelegateTool(
            create_workers,
            delegates_to=worker_type,
            name="create_workers",
            description="Create several workers at once, one per independent sub-task; get their answers.",
        ),
    ]


def agent_tool(
    agent: str, description: str, *, worker_type: str | None = None, limits: WorkerLimits | None = None
) -> DelegateTool:
    """Offer ``agent`` as a tool: the caller sends it a request and gets its answer, keeping control."""
    target = worker_type or tool_agent_type(agent)
    chosen = limits or WorkerLimits()

    async def ask_agent(
        request: Annotated[str, "what to ask, with everything the agent needs to know"],
        cancellation_token: CancellationToken | None = None,
    ) -> str:
        return await ask_worker(target, request, limits=chosen, cancellation_token=cancellation_token)

    about = f": {description}" if description else ""
    return DelegateTool(
        ask_agent,
        delegates_to=target,
        name=agent_tool_name(agent),
        description=f"Ask {agent} and get its answer back (you keep the conversation){about}",
    )
