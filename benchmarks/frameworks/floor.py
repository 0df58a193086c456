"""The floor: the same session on the least a pub/sub runtime can be, with autogen-core's message types.

One dict of topic handlers, one task per published message, the context as a list of autogen-core
``LLMMessage``s, the models as plain functions: nothing of ours and nothing of autogen-core's runtime.
No framework that routes messages by topic can do the session in fewer instructions; what a runtime
costs above this is what its features (ids, subscriptions, intervention handlers, checks) cost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from autogen_core import FunctionCall
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

from ..scenario import HANDOFF_TOOL, SALES, SALES_TEXT, TRIAGE, USER_TEXT, CallCounter, Outcome


@dataclass(slots=True)
class _Task:
    session: str
    context: list[LLMMessage]


Handler = Callable[[_Task], Awaitable[None]]


class Floor:
    def __init__(self, latency: float) -> None:
        self.calls = CallCounter()
        self._latency = latency
        self._topics: dict[str, Handler] = {TRIAGE: self._triage, SALES: self._sales}
        self._done: dict[str, asyncio.Future[Outcome]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def _publish(self, topic: str, task: _Task) -> None:
        running = asyncio.get_running_loop().create_task(self._topics[topic](task))
        self._tasks.add(running)
        running.add_done_callback(self._tasks.discard)

    async def _model(self) -> None:
        if self._latency:
            await asyncio.sleep(self._latency)

    async def _triage(self, task: _Task) -> None:
        await self._model()
        self.calls.triage += 1
        call = FunctionCall(id="call_1", name=HANDOFF_TOOL, arguments="{}")
        result = FunctionExecutionResult(call_id="call_1", content="Transferred to sales.", name=HANDOFF_TOOL)
        context = [
            *task.context,
            AssistantMessage(content=[call], source=TRIAGE),
            FunctionExecutionResultMessage(content=[result]),
        ]
        self._publish(SALES, _Task(task.session, context))

    async def _sales(self, task: _Task) -> None:
        await self._model()
        self.calls.sales += 1
        task.context.append(AssistantMessage(content=SALES_TEXT, source=SALES))
        self._done.pop(task.session).set_result(Outcome(1, SALES, SALES_TEXT))

    async def session(self, index: int) -> Outcome:
        session = f"s{index}"
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._done[session] = done
        self._publish(TRIAGE, _Task(session, [UserMessage(content=USER_TEXT, source="User")]))
        return await done

    async def close(self) -> None:
        await asyncio.gather(*self._tasks)


async def create(latency: float) -> Floor:
    return Floor(latency)
