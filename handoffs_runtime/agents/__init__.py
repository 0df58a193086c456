"""The agents of a handoffs team: AI specialists, a human operator, and the customer's side."""

from handoffs_runtime.agents.ai import AIAgent, AIAgentConfig
from handoffs_runtime.agents.human import HumanAgent, HumanAgentConfig
from handoffs_runtime.agents.user import UserAgent, UserAgentConfig

__all__ = ["AIAgent", "AIAgentConfig", "HumanAgent", "HumanAgentConfig", "UserAgent", "UserAgentConfig"]
