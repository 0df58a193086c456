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

from handoffs_runtime.agents import AIAgent as AIAgent
from handoffs_runtime.agents import AIAgentConfig as AIAgentConfig
from handoffs_runtime.agents import HumanAgent as HumanAgent
from handoffs_runtime.agents import HumanAgentConfig as HumanAgentConfig
from handoffs_runtime.agents import UserAgent as UserAgent
from handoffs_runtime.agents import UserAgentConfig as UserAgentConfig
from handoffs_runtime.agents.worker import WorkerAgent as WorkerAgent
from handoffs_runtime.agents.worker import WorkerAgentConfig as WorkerAgentConfig
from handoffs_runtime.channels.base import Channel as Channel
from handoffs_runtime.channels.console import ConsoleChannel as ConsoleChannel
from handoffs_runtime.channels.events import EventChannel as EventChannel
from handoffs_runtime.channels.memory import QueueChannel as QueueChannel
from handoffs_runtime.errors import HandoffsError as HandoffsError
from handoffs_runtime.errors import ModelConfigError as ModelConfigError
from handoffs_runtime.errors import ScriptError as ScriptError
from handoffs_runtime.errors import SessionBusyError as SessionBusyError
from handoffs_runtime.errors import SessionTakenOverError as SessionTakenOverError
from handoffs_runtime.errors import StoreConflictError as StoreConflictError
from handoffs_runtime.errors import StoreError as StoreError
from handoffs_runtime.errors import TeamConfigError as TeamConfigError
from handoffs_runtime.errors import UnknownSessionError as UnknownSessionError
from handoffs_runtime.handoffs.filters import keep_last_messages as keep_last_messages
from handoffs_runtime.handoffs.filters import nest_history as nest_history
from handoffs_runtime.handoffs.filters import remove_all_tools as remove_all_tools
from handoffs_runtime.handoffs.handoff import Handoff as Handoff
from handoffs_runtime.handoffs.handoff import HandoffContext as HandoffContext
from handoffs_runtime.handoffs.handoff import HandoffInputData as HandoffInputData
from handoffs_runtime.handoffs.handoff import SessionContext as SessionContext
from handoffs_runtime.handoffs.handoff import handoff as handoff
from handoffs_runtime.handoffs.policy import TeamPolicy as TeamPolicy
from handoffs_runtime.handoffs.prompts import RECOMMENDED_PROMPT_PREFIX as RECOMMENDED_PROMPT_PREFIX
from handoffs_runtime.handoffs.prompts import (
    prompt_with_handoff_instructions as prompt_with_handoff_instructions,
)
from handoffs_runtime.messages import AgentResponse as AgentResponse
from handoffs_runtime.messages import Delta as Delta
from handoffs_runtime.messages import Event as Event
from handoffs_runtime.messages import HandoffEvent as HandoffEvent
from handoffs_runtime.messages import HandoffLine as HandoffLine
from handoffs_runtime.messages import Notice as Notice
from handoffs_runtime.messages import Question as Question
from handoffs_runtime.messages import Reply as Reply
from handoffs_runtime.messages import Said as Said
from handoffs_runtime.messages import SessionEnded as SessionEnded
from handoffs_runtime.messages import ToolFinished as ToolFinished
from handoffs_runtime.messages import ToolStarted as ToolStarted
from handoffs_runtime.messages import UserLogin as UserLogin
from handoffs_runtime.messages import UserTask as UserTask
from handoffs_runtime.messages import WorkerResult as WorkerResult
from handoffs_runtime.messages import WorkerTask as WorkerTask
from handoffs_runtime.models.choice import model_from_options as model_from_options
from handoffs_runtime.models.local import LocalModel as LocalModel
from handoffs_runtime.models.local import ModelCall as ModelCall
from handoffs_runtime.models.local import current_model_call as current_model_call
from handoffs_runtime.models.local import tool_call as tool_call
from handoffs_runtime.models.offline.model import OfflineModel as OfflineModel
from handoffs_runtime.models.openai_compatible import openai_model as openai_model
from handoffs_runtime.models.profile import AgentProfile as AgentProfile
from handoffs_runtime.models.profile import TakesAgentProfile as TakesAgentProfile
from handoffs_runtime.runtime.release import SessionActivity as SessionActivity
from handoffs_runtime.runtime.release import release_idle as release_idle
from handoffs_runtime.runtime.release import release_session as release_session
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime as HandoffsRuntime
from handoffs_runtime.sessions.desk import OperatorDesk as OperatorDesk
from handoffs_runtime.sessions.secrets import SharedSecrets as SharedSecrets
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore as SQLiteSessionStore
from handoffs_runtime.sessions.store import SessionStore as SessionStore
from handoffs_runtime.team.build import build_team as build_team
from handoffs_runtime.team.chat import run_chat as run_chat
from handoffs_runtime.team.graph import team_mermaid as team_mermaid
from handoffs_runtime.team.register import register_agents as register_agents
from handoffs_runtime.team.register import register_customer_side as register_customer_side
from handoffs_runtime.team.register import register_team as register_team
from handoffs_runtime.team.register import start_session as start_session
from handoffs_runtime.team.spec import AgentSpec as AgentSpec
from handoffs_runtime.team.spec import TeamSpec as TeamSpec
from handoffs_runtime.team.spec import human_agent as human_agent
from handoffs_runtime.tools.approval import requires_approval as requires_approval
from handoffs_runtime.tools.context import ToolContext as ToolContext
from handoffs_runtime.tools.context import ask_person as ask_person
from handoffs_runtime.tools.context import current_tool_context as current_tool_context
from handoffs_runtime.tools.effects import irreversible as irreversible
from handoffs_runtime.tools.effects import is_irreversible as is_irreversible
from handoffs_runtime.tools.effects import runs_code as runs_code
from handoffs_runtime.tools.sandbox.tool import CodeResult as CodeResult
from handoffs_runtime.tools.sandbox.tool import SandboxLimits as SandboxLimits
from handoffs_runtime.tools.sandbox.tool import execute_python_code as execute_python_code
from handoffs_runtime.tools.sandbox.tool import python_code_tool as python_code_tool
from handoffs_runtime.tools.sandbox.tool import run_python as run_python
from handoffs_runtime.tools.workers import WorkerError as WorkerError
from handoffs_runtime.tools.workers import WorkerLimits as WorkerLimits
from handoffs_runtime.tools.workers import agent_tool as agent_tool
from handoffs_runtime.tools.workers import ask_worker as ask_worker
from handoffs_runtime.tools.workers import ask_workers as ask_workers
from handoffs_runtime.tools.workers import worker_tools as worker_tools
from handoffs_runtime.topics import session_topic as session_topic

__version__ = _distribution_version("handoffs-runtime")

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "RECOMMENDED_PROMPT_PREFIX",
    "AIAgent",
    "AIAgentConfig",
    "AgentProfile",
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
    "OperatorDesk",
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
    "SharedSecrets",
    "StoreConflictError",
    "StoreError",
    "TakesAgentProfile",
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
    "register_agents",
    "register_customer_side",
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
