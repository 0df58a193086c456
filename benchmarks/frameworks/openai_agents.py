"""openai-agents: ``Runner.run`` with tracing off, on a scripted ``Model`` per agent."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

from agents import (
    Agent,
    HandoffOutputItem,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    Usage,
    set_tracing_disabled,
)
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from ..scenario import (
    HANDOFF_TOOL,
    SALES,
    SALES_DESCRIPTION,
    SALES_PROMPT,
    SALES_TEXT,
    TRIAGE,
    TRIAGE_PROMPT,
    USER_TEXT,
    CallCounter,
    Outcome,
)

_ids = itertools.count(1)


def _handoff_call() -> list[Any]:
    n = next(_ids)
    return [
        ResponseFunctionToolCall(
            id=f"fc_{n}",
            call_id=f"call_{n}",
            type="function_call",
            name=HANDOFF_TOOL,
            arguments="{}",
            status="completed",
        )
    ]


def _text() -> list[Any]:
    content = ResponseOutputText(text=SALES_TEXT, type="output_text", annotations=[], logprobs=[])
    return [
        ResponseOutputMessage(
            id=f"msg_{next(_ids)}", type="message", role="assistant", content=[content], status="completed"
        )
    ]


class ScriptedModel(Model):
    """Always answers with ``reply()``, after ``latency`` seconds."""

    def __init__(self, reply: Callable[[], list[Any]], latency: float, on_call: Callable[[], None]) -> None:
        self._reply = reply
        self._latency = latency
        self._on_call = on_call

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self._on_call()
        if self._latency:
            await asyncio.sleep(self._latency)
        return ModelResponse(output=self._reply(), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmark does not stream")


class OpenAIAgents:
    def __init__(self, triage: Agent[Any], calls: CallCounter) -> None:
        self._triage = triage
        self._config = RunConfig(tracing_disabled=True)
        self.calls = calls

    async def session(self, index: int) -> Outcome:
        result = await Runner.run(self._triage, USER_TEXT, run_config=self._config)
        handoffs = sum(isinstance(item, HandoffOutputItem) for item in result.new_items)
        return Outcome(handoffs, result.last_agent.name, str(result.final_output))

    async def close(self) -> None:
        return None


async def create(latency: float) -> OpenAIAgents:
    set_tracing_disabled(True)
    calls = CallCounter()

    def count_triage() -> None:
        calls.triage += 1

    def count_sales() -> None:
        calls.sales += 1

    sales = Agent(
        name=SALES,
        instructions=SALES_PROMPT,
        handoff_description=SALES_DESCRIPTION,
        model=ScriptedModel(_text, latency, count_sales),
    )
    triage = Agent(
        name=TRIAGE,
        instructions=TRIAGE_PROMPT,
        handoffs=[sales],
        model=ScriptedModel(_handoff_call, latency, count_triage),
    )
    return OpenAIAgents(triage, calls)
