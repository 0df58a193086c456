"""``WorkerAgent``: answers one ``WorkerTask`` sent to it directly (RPC) and returns the final answer.

Workers are how an agent delegates while keeping control: ``create_worker`` sends a task to a fresh
``AgentId(worker_type, key)`` and awaits the ``WorkerResult`` as its tool result; an agent offered to
another as a tool is served by a worker type built from its spec. A worker has no handoffs and never
talks to the person directly (tools it runs may, through the session's channel).

One task, as a loop::

    model(system + [task], tools)
      text        -> WorkerResult(text)
      tool calls  -> run them (errors become tool results) -> ask the model again (bounded)

The loop runs as its own task linked to the message's cancellation token, so cancelling the caller's
token (or the worker's own deadline) stops the model call or the sandboxed process in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from autogen_core import FunctionCall, MessageContext, message_handler
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool

from ..channels import Channel
from ..context import ToolContext, set_tool_context
from ..messages import WorkerResult, WorkerTask
from ..models import ModelCall, model_call_scope
from ..usage import UsageByAgent, add, copy, merge, take_tool_usage
from .ai import run_tool_call, unknown_tool_result
from .routing import SessionAgent

logger = logging.getLogger("handoffs_runtime")


@dataclass(frozen=True)
class WorkerAgentConfig:
    """Everything a worker type needs; shared by all its instances (one per task)."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    tools: Mapping[str, Tool] = field(default_factory=dict)
    channel: Channel | None = None
    max_tool_rounds: int = 8
    description: str = ""


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
        conversation: list[LLMMessage] = [UserMessage(content=message.task, source=message.caller)]
        schemas = [t.schema for t in config.tools.values()]
        for _ in range(config.max_tool_rounds):
            try:
                with model_call_scope(ModelCall(config.name, message.session_id, frozenset())):
                    result = await config.model.create(
                        [config.system_message, *conversation],
                        tools=schemas,
                        cancellation_token=ctx.cancellation_token,
                    )
            except Exception as exc:
                logger.exception("model call failed for worker %s", self.id)
                return WorkerResult(
                    text=f"{config.name}'s model failed: {type(exc).__name__}: {exc}", ok=False
                )
            add(self._usage, config.name, result.usage)
            content = result.content
            if isinstance(content, str) or not content:
                text = content.strip() if isinstance(content, str) else ""
                return (
                    WorkerResult(text=text, ok=True) if text else WorkerResult(text="empty answer", ok=False)
                )
            calls = [c for c in content if isinstance(c, FunctionCall)]
            results = []
            for call in calls:
                tool = config.tools.get(call.name)
                if tool is None:
                    results.append(unknown_tool_result(call, config.tools))
                else:
                    results.append(await run_tool_call(tool, call, ctx.cancellation_token))
            merge(self._usage, take_tool_usage(tool_context.turn))  # its own workers'
            conversation.append(AssistantMessage(content=calls, source=config.name))
            conversation.append(FunctionExecutionResultMessage(content=results))
        return WorkerResult(
            text=f"{config.name} did not finish within {config.max_tool_rounds} tool rounds", ok=False
        )


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
