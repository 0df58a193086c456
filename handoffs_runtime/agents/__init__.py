"""The agents of a handoffs team: AI specialists, a human operator, and the customer's side."""

from .ai import AIAgent, AIAgentConfig
from .human import HumanAgent, HumanAgentConfig
from .user import UserAgent, UserAgentConfig

__all__ = ["AIAgent", "AIAgentConfig", "HumanAgent", "HumanAgentConfig", "UserAgent", "UserAgentConfig"]
