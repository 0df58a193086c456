"""autogen-agentchat: a ``Swarm`` of two ``AssistantAgent``s per session (agents keep state, so one each)."""

from __future__ import annotations

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMessageTermination
from autogen_agentchat.messages import HandoffMessage, TextMessage
from autogen_agentchat.teams import Swarm

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
from .autogen_fake import ScriptedClient


class AgentChat:
    def __init__(self, latency: float) -> None:
        self.calls = CallCounter()
        self._triage_model = ScriptedClient(tool=HANDOFF_TOOL, latency=latency, on_call=self._count_triage)
        self._sales_model = ScriptedClient(text=SALES_TEXT, latency=latency, on_call=self._count_sales)

    def _count_triage(self) -> None:
        self.calls.triage += 1

    def _count_sales(self) -> None:
        self.calls.sales += 1

    async def session(self, index: int) -> Outcome:
        triage = AssistantAgent(
            TRIAGE, model_client=self._triage_model, handoffs=[SALES], system_message=TRIAGE_PROMPT
        )
        sales = AssistantAgent(
            SALES, model_client=self._sales_model, system_message=SALES_PROMPT, description=SALES_DESCRIPTION
        )
        team = Swarm([triage, sales], termination_condition=TextMessageTermination(SALES))
        result = await team.run(task=USER_TEXT)
        handoffs = sum(isinstance(m, HandoffMessage) for m in result.messages)
        last = result.messages[-1]
        text = last.content if isinstance(last, TextMessage) else repr(last)
        return Outcome(handoffs, last.source, text)

    async def close(self) -> None:
        return None


async def create(latency: float) -> AgentChat:
    return AgentChat(latency)
