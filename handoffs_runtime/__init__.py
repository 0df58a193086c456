"""The public face of handoffs-runtime: specs, ``handoff()``, channels, models, runtimes, stores.

handoffs-runtime is an event-driven publish/subscribe multi-agent runtime for the handoffs pattern.
Specialist agents subscribe to topic types; a handoff tool names the target; the conversation is
republished there, keyed by the session. See README.md for the picture and the quick start.

The built-in teams and the test doubles are imported from their modules, not from here::

    from handoffs_runtime.teams.acme import acme_team
    from handoffs_runtime.models.scripted import FunctionModel, ScriptedModel
    from handoffs_runtime.channels.memory import ScriptedChannel
"""

import logging
from importlib.metadata import version as _distribution_version

from handoffs_runtime.agents import (
    AIAgent,
    AIAgentConfig,
    HumanAgent,
    HumanAgentConfig,
    UserAgent,
    UserAgentConfig,
)
from handoffs_runtime.agents.worker import WorkerAgent, WorkerAgentConfig
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.channels.console import ConsoleChannel
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.channels.memory import QueueChannel
from handoffs_runtime.errors import (
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
from handoffs_runtime.handoffs.filters import keep_last_messages, nest_history, remove_all_tools
from handoffs_runtime.handoffs.handoff import (
    Handoff,
    HandoffContext,
    HandoffInputData,
    SessionContext,
    handoff,
)
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.handoffs.prompts import RECOMMENDED_PROMPT_PREFIX, prompt_with_handoff_instructions
from handoffs_runtime.messages import (
    AgentResponse,
    Delta,
    Event,
    HandoffEvent,
    HandoffLine,
    Notice,
    Question,
    Reply,
    Said,
    SessionEnded,
    ToolFinished,
    ToolStarted,
    UserLogin,
    UserTask,
    WorkerResult,
    WorkerTask,
)
from handoffs_runtime.models.choice import model_from_options
from handoffs_runtime.models.local import LocalModel, ModelCall, current_model_call, tool_call
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.models.openai_compatible import openai_model
from handoffs_runtime.runtime.release import SessionActivity, release_idle, release_session
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.build import build_team
from handoffs_runtime.team.chat import run_chat
from handoffs_runtime.team.graph import team_mermaid
from handoffs_runtime.team.register import register_team, start_session
from handoffs_runtime.team.spec import AgentSpec, TeamSpec, human_agent
from handoffs_runtime.tools.approval import requires_approval
from handoffs_runtime.tools.context import ToolContext, ask_person, current_tool_context
from handoffs_runtime.tools.effects import irreversible, is_irreversible, runs_code
from handoffs_runtime.tools.sandbox.tool import (
    CodeResult,
    SandboxLimits,
    execute_python_code,
    python_code_tool,
    run_python,
)
from handoffs_runtime.tools.workers import (
    WorkerError,
    WorkerLimits,
    agent_tool,
    ask_worker,
    ask_workers,
    worker_tools,
)
from handoffs_runtime.topics import session_topic

__version__ = _distribution_version("handoffs-runtime")

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "RECOMMENDED_PROMPT_PREFIX",
    "AIAgent",
    "AIAgentConfig",
    "AgentResponse",
    "AgentSpec",
    "Channel",
    "CodeResult",
    "ConsoleChannel",
    "Delta",
    "Event",
    "EventChannel",
    "Handoff",
    "HandoffContext",
    "HandoffEvent",
    "HandoffInputData",
    "HandoffLine",
    "HandoffsError",
    "HandoffsRuntime",
    "HumanAgent",
    "HumanAgentConfig",
    "LocalModel",
    "ModelCall",
    "ModelConfigError",
    "Notice",
    "OfflineModel",
    "Question",
    "QueueChannel",
    "Reply",
    "SQLiteSessionStore",
    "Said",
    "SandboxLimits",
    "ScriptError",
    "SessionActivity",
    "SessionBusyError",
    "SessionContext",
    "SessionEnded",
    "SessionStore",
    "SessionTakenOverError",
    "StoreConflictError",
    "StoreError",
    "TeamConfigError",
    "TeamPolicy",
    "TeamSpec",
    "ToolContext",
    "ToolFinished",
    "ToolStarted",
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
    "prompt_with_handoff_instructions",
    "python_code_tool",
    "register_team",
    "release_idle",
    "release_session",
    "remove_all_tools",
    "requires_approval",
    "run_chat",
    "run_python",
    "runs_code",
    "session_topic",
    "start_session",
    "team_mermaid",
    "tool_call",
    "worker_tools",
]
