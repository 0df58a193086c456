"""One module per framework, each with ``async def create(latency: float) -> Framework``.

Only ``ours`` imports handoffs_runtime; the others are written on their own framework alone.
"""

FRAMEWORKS: dict[str, str] = {
    "handoffs-runtime": "ours",
    "handoffs-runtime (stock autogen-core runtime)": "ours_stock",
    "autogen-core notebook baseline": "baseline",
    "openai-agents": "openai_agents",
    "autogen-agentchat Swarm": "agentchat",
    "langgraph-swarm": "langgraph_swarm",
}
"""Display name -> module in this package."""

OURS = "handoffs-runtime"
PEERS = ("autogen-core notebook baseline", "openai-agents", "autogen-agentchat Swarm", "langgraph-swarm")

NEEDS: dict[str, str] = {
    "openai_agents": "agents",
    "agentchat": "autogen_agentchat",
    "langgraph_swarm": "langgraph_swarm",
}
"""Modules whose peer package may be missing (not installed with the ``bench`` extra), and that package."""
