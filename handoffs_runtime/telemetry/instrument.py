"""Wrapping a team's models, tools and agents in traced variants that report to a ``Telemetry``.

``register_team`` calls these only when telemetry is on; ``core`` knows none of the wrappers, so the
wrappers can use it and nothing here imports itself back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autogen_core import Agent, AgentRuntime
from autogen_core.models import ChatCompletionClient
from autogen_core.tools import Tool

from handoffs_runtime.telemetry.agents import register_traced
from handoffs_runtime.telemetry.core import Telemetry
from handoffs_runtime.telemetry.model import TracedModel
from handoffs_runtime.telemetry.tools import TracedTool


def traced_model(telemetry: Telemetry, client: ChatCompletionClient) -> ChatCompletionClient:
    """``client`` with every call traced as ``chat <model>``; a model traced already is left as it is."""
    return client if isinstance(client, TracedModel) else TracedModel(client, telemetry)


def traced_tools(telemetry: Telemetry, tools: Mapping[str, Tool]) -> dict[str, Tool]:
    """``tools`` with every call traced as ``execute_tool <name>``, under the same names."""
    return {name: TracedTool(tool, telemetry) for name, tool in tools.items()}


async def register_traced_agent(
    telemetry: Telemetry, runtime: AgentRuntime, cls: type[Agent], agent_type: str, config: Any, team: str
) -> None:
    """Register the traced variant of ``cls`` (``AIAgent``, ``HumanAgent``, ``UserAgent``, ...)."""
    await register_traced(runtime, telemetry, cls, agent_type, config, team)
