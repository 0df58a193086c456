"""handoffs-runtime: an event-driven publish/subscribe multi-agent runtime for the handoffs pattern.

Specialist agents subscribe to topic types; a handoff tool names the target; the conversation is
republished there, keyed by the session. See README.md for the picture and the quick start.
"""

from .agents import AIAgent, AIAgentConfig, HumanAgent, HumanAgentConfig, UserAgent, UserAgentConfig
from .channels import AgentReply, Channel, ConsoleChannel, Notice, Output, QueueChannel, ScriptedChannel
from .chat import run_chat
from .context import ToolContext, ask_person, current_tool_context
from .errors import HandoffsError, ModelConfigError, ScriptError, TeamConfigError
from .messages import AgentResponse, HandoffEvent, UserLogin, UserTask
from .models import (
    FunctionModel,
    LocalModel,
    ModelCall,
    ScriptedModel,
    current_model_call,
    model_from_options,
    openai_model,
    tool_call,
)
from .offline import OfflineModel
from .policy import TeamPolicy
from .runtime import HandoffsRuntime
from .team import AgentSpec, TeamSpec, build_team, human_agent, register_team, start_session
from .tools.acme import acme_team
from .tools.filters import keep_last_messages, nest_history, remove_all_tools
from .tools.handoff import Handoff, HandoffContext, HandoffInputData, SessionContext, handoff
from .tools.prompts import RECOMMENDED_PROMPT_PREFIX, prompt_with_handoff_instructions
from .topics import session_topic

__version__ = "0.1.0"

__all__ = [
    "RECOMMENDED_PROMPT_PREFIX",
    "AIAgent",
    "AIAgentConfig",
    "AgentReply",
    "AgentResponse",
    "AgentSpec",
    "Channel",
    "ConsoleChannel",
    "FunctionModel",
    "Handoff",
    "HandoffContext",
    "HandoffEvent",
    "HandoffInputData",
    "HandoffsError",
    "HandoffsRuntime",
    "HumanAgent",
    "HumanAgentConfig",
    "LocalModel",
    "ModelCall",
    "ModelConfigError",
    "Notice",
    "OfflineModel",
    "Output",
    "QueueChannel",
    "ScriptError",
    "ScriptedChannel",
    "ScriptedModel",
    "SessionContext",
    "TeamConfigError",
    "TeamPolicy",
    "TeamSpec",
    "ToolContext",
    "UserAgent",
    "UserAgentConfig",
    "UserLogin",
    "UserTask",
    "acme_team",
    "ask_person",
    "build_team",
    "current_model_call",
    "current_tool_context",
    "handoff",
    "human_agent",
    "keep_last_messages",
    "model_from_options",
    "nest_history",
    "openai_model",
    "prompt_with_handoff_instructions",
    "register_team",
    "remove_all_tools",
    "run_chat",
    "session_topic",
    "start_session",
    "tool_call",
]
