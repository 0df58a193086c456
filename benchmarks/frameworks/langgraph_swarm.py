"""langgraph-swarm: two ``create_agent`` graphs in a compiled swarm, on a scripted ``BaseChatModel``."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph_swarm import create_handoff_tool, create_swarm
from pydantic import ConfigDict

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


def _handoff_call() -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": HANDOFF_TOOL, "args": {}, "id": f"call_{next(_ids)}", "type": "tool_call"}],
    )


def _text() -> AIMessage:
    return AIMessage(content=SALES_TEXT)


class ScriptedChatModel(BaseChatModel):
    """Always answers ``reply()``; ``bind_tools`` keeps the script (the tools are only offered)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    reply: Callable[[], AIMessage]
    on_call: Callable[[], None]
    latency: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.on_call()
        return ChatResult(generations=[ChatGeneration(message=self.reply())])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.on_call()
        if self.latency:
            await asyncio.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=self.reply())])


class LangGraphSwarm:
    def __init__(self, latency: float) -> None:
        self.calls = CallCounter()
        triage = create_agent(
            ScriptedChatModel(reply=_handoff_call, on_call=self._count_triage, latency=latency),
            tools=[create_handoff_tool(agent_name=SALES, description=SALES_DESCRIPTION)],
            system_prompt=TRIAGE_PROMPT,
            name=TRIAGE,
        )
        sales = create_agent(
            ScriptedChatModel(reply=_text, on_call=self._count_sales, latency=latency),
            tools=[],
            system_prompt=SALES_PROMPT,
            name=SALES,
        )
        self._app = create_swarm([triage, sales], default_active_agent=TRIAGE).compile()

    def _count_triage(self) -> None:
        self.calls.triage += 1

    def _count_sales(self) -> None:
        self.calls.sales += 1

    async def session(self, index: int) -> Outcome:
        state = await self._app.ainvoke({"messages": [{"role": "user", "content": USER_TEXT}]})
        messages = state["messages"]
        handoffs = sum(isinstance(m, ToolMessage) and m.name == HANDOFF_TOOL for m in messages)
        last = messages[-1]
        agent = (last.name if isinstance(last, AIMessage) else None) or state.get("active_agent", "")
        return Outcome(handoffs, agent, str(last.content))

    async def close(self) -> None:
        return None


async def create(latency: float) -> LangGraphSwarm:
    return LangGraphSwarm(latency)
