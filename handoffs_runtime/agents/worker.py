"""``WorkerAgent``: answers one ``WorkerTask`` sent to it directly (RPC) and returns the final answer.

Workers are how an agent delegates while keeping control: ``create_worker`` sends a task to a fresh
``AgentId(worker_type, key)`` and awaits the ``WorkerResult`` as its tool result; an agent offered to
another as a tool is served by a worker type built from its spec. A worker has no handoffs and never
talks to the person directly (tools it runs may, through the session's channel).

One task is one run of the tool loop that ``AIAgent`` uses too (:mod:`.toolloop`)::

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

from autogen_core import MessageContext, message_handler
from autogen_core.models import ChatCompletionClient, LLMMessage, SystemMessage, UserMessage
from autogen_core.tools import Tool, ToolSchema

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.agents.toolloop import Step, ToolCalls, ToolLoop
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.messages import WorkerResult, WorkerTask
from handoffs_runtime.tools.context import ToolContext, set_tool_context
from handoffs_runtime.usage import UsageByAgent, copy

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
    schemas: tuple[ToolSchema, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "loop", ToolLoop(self.name, self.system_message, self.model, self.policy))
        object.__setattr__(self, "schemas", tuple(t.schema for t in self.tools.values()))


class WorkerAgent(SessionAgent):
    """Serves ``WorkerTask`` RPCs; see the module docstring."""

    def __init__(self, config: WorkerAgentConfig) -> None:
        super().__init__(config.description or config.name)
        self._config = config
        self._usage: UsageByAgent = {}  # tokens spent on the task in hand (its own workers' too)

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
        result.usage = copy(self._usage) or None
        return result

    async def _work(self, message: WorkerTask, ctx: MessageContext) -> WorkerResult:
        config = self._config
        self._usage = {}
        tool_context = ToolContext(
            message.session_id,
            config.name,
            config.channel,
            runtime=self.runtime,
            agent_id=self.id,
            depth=message.depth,
        )
        set_tool_context(tool_context)

        async def offer(conversation: list[LLMMessage]) -> tuple[tuple[ToolSchema, ...], frozenset[str]]:
            return config.schemas, frozenset()

        async def run_calls(
            calls: ToolCalls, conversation: list[LLMMessage], handoffs: frozenset[str]
        ) -> Step:
            results = await config.loop.run_tools(calls.calls, config.tools, ctx.cancellation_token)
            return Step([r for r in results if r is not None])  # no handoffs here: every call has one

        task: list[LLMMessage] = [UserMessage(content=message.task, source=message.caller)]
        end = await config.loop.run(
            task, message.session_id, offer, run_calls, ctx.cancellation_token, self._usage
        )
        if end.kind == "text":
            return WorkerResult(text=end.text or "empty answer", ok=bool(end.text))
        if end.kind == "over_budget":
            return WorkerResult(
                text=f"{config.name} stopped: the session's token budget is used up", ok=False
            )
        if end.kind == "model_failed":
            return WorkerResult(text=f"{config.name}'s model failed: {end.error}", ok=False)
        rounds = config.policy.max_tool_rounds
        return WorkerResult(text=f"{config.name} did not finish within {rounds} tool rounds", ok=False)


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
