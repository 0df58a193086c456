"""``WorkerAgent``: answers one ``WorkerTask`` sent to it directly (RPC) and returns the final answer.

Workers are how an agent delegates while keeping control: ``create_worker`` sends a task to a fresh
``AgentId(worker_type, key)`` and awaits the ``WorkerResult`` as its tool result; an agent offered to
another as a tool is served by a worker type built from its spec. A worker has no handoffs and never
talks to the person directly (tools it runs may, through the session's channel).

One task is one run of the tool loop that ``AIAgent`` uses too (:mod:`.toolloop`), without a handoff
decider; its end is read with one ``match``::

    model(system + [task], tools)
      text        -> WorkerResult(text)
      tool calls  -> run them, at once unless the policy says otherwise (errors become tool results)
                     -> ask the model again (bounded)

The loop runs as its own task linked to the message's cancellation token, so cancelling the caller's
token (or the worker's own deadline) stops the model call or the sandboxed process in flight. Whatever
fails in a task is logged and answered with a failed ``WorkerResult``: the caller gets a tool result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import assert_never

from autogen_core import MessageContext, message_handler
from autogen_core.models import ChatCompletionClient, LLMMessage, SystemMessage, UserMessage
from autogen_core.tools import Tool

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.turn import (
    HandedOff,
    LoopStopped,
    ModelFailed,
    OutOfRounds,
    OutOfTime,
    OverBudget,
    Replied,
    TurnEnd,
)
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.messages import WorkerResult, WorkerTask
from handoffs_runtime.tools.context import ToolContext, TurnTally, set_tool_context

logger = logging.getLogger("handoffs_runtime")


@dataclass(frozen=True)
class WorkerAgentConfig:
    """Everything a worker type needs; shared by all its instances (one per task)."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    tools: Mapping[str, Tool] = field(default_factory=dict)
    channel: Channel | None = None
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    """Tool rounds, the per-call model timeout and the size cap, as for the team's agents."""
    description: str = ""
    loop: ToolLoop = field(init=False)

    def __post_init__(self) -> None:
        loop = ToolLoop(self.name, self.system_message, self.model, self.tools, policy=self.policy)
        object.__setattr__(self, "loop", loop)  # the documented way to derive a field of a frozen dataclass


class WorkerAgent(SessionAgent):
    """Serves ``WorkerTask`` RPCs; see the module docstring."""

    def __init__(self, config: WorkerAgentConfig) -> None:
        super().__init__(config.description or config.name)
        self._config = config
        self._tally = TurnTally()  # what the task in hand has counted (its own workers' tokens too)

    @message_handler
    async def handle_task(self, message: WorkerTask, ctx: MessageContext) -> WorkerResult:
        work = asyncio.ensure_future(self._work(message, ctx))
        ctx.cancellation_token.link_future(work)
        try:
            async with asyncio.timeout(message.timeout):
                return self._counted(await work)
        except TimeoutError:
            text = f"{self._config.name} ran out of time ({message.timeout:g} s)"
            return self._counted(WorkerResult(text=text, ok=False))
        except asyncio.CancelledError:
            if work.cancelled() and not _current_task_cancelling():
                return self._counted(WorkerResult(text=f"{self._config.name} was cancelled", ok=False))
            raise
        except Exception as exc:  # the one guard of a task: the caller always gets an answer
            logger.exception("worker %s failed", self.id)
            text = f"{self._config.name} failed: {type(exc).__name__}: {exc}"
            return self._counted(WorkerResult(text=text, ok=False))

    def _counted(self, result: WorkerResult) -> WorkerResult:
        """``result`` with the tokens the task used, for the caller's session count."""
        result.usage = self._tally.usage
        return result

    async def _work(self, message: WorkerTask, ctx: MessageContext) -> WorkerResult:
        config = self._config
        self._tally = TurnTally()
        tool_context = ToolContext(
            message.session_id,
            config.name,
            config.channel,
            runtime=self.runtime,
            agent_id=self.id,
            depth=message.depth,
            tally=self._tally,
        )
        set_tool_context(tool_context)
        task: list[LLMMessage] = [UserMessage(content=message.task, source=message.caller)]
        return self._result(await config.loop.run(task, tool_context, ctx.cancellation_token))

    def _result(self, end: TurnEnd) -> WorkerResult:
        name = self._config.name
        match end:
            case Replied(text=text):
                return WorkerResult(text=text or "empty answer", ok=bool(text))
            case OverBudget():
                return WorkerResult(text=f"{name} stopped: the session's token budget is used up", ok=False)
            case ModelFailed(error=error):
                return WorkerResult(text=f"{name}'s model failed: {error}", ok=False)
            case OutOfRounds():
                rounds = self._config.policy.max_tool_rounds
                return WorkerResult(text=f"{name} did not finish within {rounds} tool rounds", ok=False)
            case OutOfTime():
                seconds = self._config.loop.turn_deadline
                return WorkerResult(text=f"{name} did not finish within its {seconds:g} s", ok=False)
            case HandedOff() | LoopStopped():  # a worker's loop has no decider: it cannot end so
                raise RuntimeError(f"worker {name}'s loop ended with a handoff decision: {end!r}")
            case unreachable:
                assert_never(unreachable)


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
