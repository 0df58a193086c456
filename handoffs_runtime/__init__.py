"""handoffs-runtime: an event-driven publish/subscribe multi-agent runtime for the handoffs pattern.

Specialist agents subscribe to topic types; a handoff tool names the target; the conversation is
republished there, keyed by the session. See README.md for the picture and the quick start.
"""

import logging

from .agents import AIAgent, AIAgentConfig, HumanAgent, HumanAgentConfig, UserAgent, UserAgentConfig
from .agents.worker import WorkerAgent, WorkerAgentConfig
from .channels import (
    AgentReply,
    Channel,
    ConsoleChannel,
    Notice,
    Output,
    Prompt,
    QueueChannel,
    ScriptedChannel,
)
from .chat import run_chat
from .context import ToolContext, ask_person, current_tool_context
from .errors import (
    HandoffsError,
    ModelConfigError,
    ScriptError,
    SessionBusyError,
    SessionTakenOverError,
    StoreConflictError,
    StoreError,
    TeamConfigError,
    UnknownSessionError,
)
from .events import EventChannel
from .graph import team_mermaid
from .messages import AgentResponse, HandoffEvent, UserLogin, UserTask, WorkerResult, WorkerTask
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
from .release import SessionActivity, release_idle, release_session
from .runtime import HandoffsRuntime
from .store import SessionStore, SQLiteSessionStore
from .team import AgentSpec, TeamSpec, build_team, human_agent, register_team, start_session
from .tools.acme import acme_team
from .tools.approval import requires_approval
from .tools.code import CodeResult, SandboxLimits, execute_python_code, python_code_tool, run_python
from .tools.effects import irreversible, is_irreversible
from .tools.filters import keep_last_messages, nest_history, remove_all_tools
from .tools.handoff import Handoff, HandoffContext, HandoffInputData, SessionContext, handoff
from .tools.orchestrator import orchestrator_team
from .tools.prompts import RECOMMENDED_PROMPT_PREFIX, prompt_with_handoff_instructions
from .tools.workers import WorkerError, WorkerLimits, agent_tool, ask_worker, ask_workers, worker_tools
from .topics import session_topic

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "RECOMMENDED_PROMPT_PREFIX",
    "AIAgent",
    "AIAgentConfig",
    "AgentReply",
    "AgentResponse",
    "AgentSpec",
    "Channel",
    "CodeResult",
    "ConsoleChannel",
    "EventChannel",
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
    "Prompt",
    "QueueChannel",
    "SQLiteSessionStore",
    "SandboxLimits",
    "ScriptError",
    "ScriptedChannel",
    "ScriptedModel",
    "SessionActivity",
    "SessionBusyError",
    "SessionContext",
    "SessionStore",
    "SessionTakenOverError",
    "StoreConflictError",
    "StoreError",
    "TeamConfigError",
    "TeamPolicy",
    "TeamSpec",
    "ToolContext",
    "UnknownSessionError",
    "UserAgent",
    "UserAgentConfig",
    "UserLogin",
    "UserTask",
    "WorkerAgent",
    "WorkerAgentConfig",
    "WorkerError",
    "WorkerLimits",
    "WorkerResult",
    "WorkerTask",
    "acme_team",
    "agent_tool",
    "ask_person",
    "ask_worker",
    "ask_workers",
    "build_team",
    "current_model_call",
    "current_tool_context",
    "execute_python_code",
    "handoff",
    "human_agent",
    "irreversible",
    "is_irreversible",
    "keep_last_messages",
    "model_from_options",
    "nest_history",
    "openai_model",
    "orchestrator_team",
    "prompt_with_handoff_instructions",
    "python_code_tool",
    "register_team",
    "release_idle",
    "release_session",
    "remove_all_tools",
    "requires_approval",
    "run_chat",
    "run_python",
    "session_topic",
    "start_session",
    "team_mermaid",
    "tool_call",
    "worker_tools",
]
