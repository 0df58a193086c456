"""The package's public face: the library, stated here name by name; demos and doubles live in modules.

A name added to or dropped from ``handoffs_runtime`` fails here until this list says so, so the face
changes only on purpose.
"""

from __future__ import annotations

import importlib

import handoffs_runtime

FACE = {
    # specs and building a team
    "AgentSpec": "handoffs_runtime.team.spec",
    "TeamSpec": "handoffs_runtime.team.spec",
    "human_agent": "handoffs_runtime.team.spec",
    "build_team": "handoffs_runtime.team.build",
    "register_agents": "handoffs_runtime.team.register",
    "register_customer_side": "handoffs_runtime.team.register",
    "register_team": "handoffs_runtime.team.register",
    "start_session": "handoffs_runtime.team.register",
    "run_chat": "handoffs_runtime.team.chat",
    "team_mermaid": "handoffs_runtime.team.graph",
    # the handoff as data
    "handoff": "handoffs_runtime.handoffs.handoff",
    "Handoff": "handoffs_runtime.handoffs.handoff",
    "HandoffContext": "handoffs_runtime.handoffs.handoff",
    "HandoffInputData": "handoffs_runtime.handoffs.handoff",
    "SessionContext": "handoffs_runtime.handoffs.handoff",
    "TeamPolicy": "handoffs_runtime.handoffs.policy",
    "keep_last_messages": "handoffs_runtime.handoffs.filters",
    "nest_history": "handoffs_runtime.handoffs.filters",
    "remove_all_tools": "handoffs_runtime.handoffs.filters",
    "RECOMMENDED_PROMPT_PREFIX": "handoffs_runtime.handoffs.prompts",
    "prompt_with_handoff_instructions": "handoffs_runtime.handoffs.prompts",
    # channels
    "Channel": "handoffs_runtime.channels.base",
    "Event": "handoffs_runtime.messages",
    "Reply": "handoffs_runtime.messages",
    "Delta": "handoffs_runtime.messages",
    "ToolStarted": "handoffs_runtime.messages",
    "ToolFinished": "handoffs_runtime.messages",
    "HandoffLine": "handoffs_runtime.messages",
    "Question": "handoffs_runtime.messages",
    "Said": "handoffs_runtime.messages",
    "Notice": "handoffs_runtime.messages",
    "SessionEnded": "handoffs_runtime.messages",
    "ConsoleChannel": "handoffs_runtime.channels.console",
    "EventChannel": "handoffs_runtime.channels.events",
    "QueueChannel": "handoffs_runtime.channels.memory",
    # models
    "openai_model": "handoffs_runtime.models.openai_compatible",
    "model_from_options": "handoffs_runtime.models.choice",
    "OfflineModel": "handoffs_runtime.models.offline.model",
    "LocalModel": "handoffs_runtime.models.local",
    "ModelCall": "handoffs_runtime.models.local",
    "AgentProfile": "handoffs_runtime.models.profile",
    "TakesAgentProfile": "handoffs_runtime.models.profile",
    "current_model_call": "handoffs_runtime.models.local",
    "tool_call": "handoffs_runtime.models.local",
    # runtimes and sessions' lifetime
    "HandoffsRuntime": "handoffs_runtime.runtime.single_threaded",
    "SessionActivity": "handoffs_runtime.runtime.release",
    "release_idle": "handoffs_runtime.runtime.release",
    "release_session": "handoffs_runtime.runtime.release",
    "session_topic": "handoffs_runtime.topics",
    # stores
    "SessionStore": "handoffs_runtime.sessions.store",
    "SQLiteSessionStore": "handoffs_runtime.sessions.sqlite",
    "OperatorDesk": "handoffs_runtime.sessions.desk",
    "SharedSecrets": "handoffs_runtime.sessions.secrets",
    # agents and the messages between them
    "AIAgent": "handoffs_runtime.agents.ai",
    "AIAgentConfig": "handoffs_runtime.agents.ai",
    "HumanAgent": "handoffs_runtime.agents.human",
    "HumanAgentConfig": "handoffs_runtime.agents.human",
    "UserAgent": "handoffs_runtime.agents.user",
    "UserAgentConfig": "handoffs_runtime.agents.user",
    "WorkerAgent": "handoffs_runtime.agents.worker",
    "WorkerAgentConfig": "handoffs_runtime.agents.worker",
    "AgentResponse": "handoffs_runtime.messages",
    "HandoffEvent": "handoffs_runtime.messages",
    "UserLogin": "handoffs_runtime.messages",
    "UserTask": "handoffs_runtime.messages",
    "WorkerResult": "handoffs_runtime.messages",
    "WorkerTask": "handoffs_runtime.messages",
    # tools
    "ToolContext": "handoffs_runtime.tools.context",
    "ask_person": "handoffs_runtime.tools.context",
    "current_tool_context": "handoffs_runtime.tools.context",
    "irreversible": "handoffs_runtime.tools.effects",
    "is_irreversible": "handoffs_runtime.tools.effects",
    "runs_code": "handoffs_runtime.tools.effects",
    "requires_approval": "handoffs_runtime.tools.approval",
    "WorkerError": "handoffs_runtime.tools.workers",
    "WorkerLimits": "handoffs_runtime.tools.workers",
    "agent_tool": "handoffs_runtime.tools.workers",
    "ask_worker": "handoffs_runtime.tools.workers",
    "ask_workers": "handoffs_runtime.tools.workers",
    "worker_tools": "handoffs_runtime.tools.workers",
    "CodeResult": "handoffs_runtime.tools.sandbox.tool",
    "SandboxLimits": "handoffs_runtime.tools.sandbox.tool",
    "execute_python_code": "handoffs_runtime.tools.sandbox.tool",
    "python_code_tool": "handoffs_runtime.tools.sandbox.tool",
    "run_python": "handoffs_runtime.tools.sandbox.tool",
    # errors
    "HandoffsError": "handoffs_runtime.errors",
    "ModelConfigError": "handoffs_runtime.errors",
    "ScriptError": "handoffs_runtime.errors",
    "SessionBusyError": "handoffs_runtime.errors",
    "SessionTakenOverError": "handoffs_runtime.errors",
    "StoreConflictError": "handoffs_runtime.errors",
    "StoreError": "handoffs_runtime.errors",
    "TeamConfigError": "handoffs_runtime.errors",
    "UnknownSessionError": "handoffs_runtime.errors",
}
"""Every name of the face, and the module it is defined in (where it would be imported from otherwise)."""

FROM_THEIR_MODULES = {
    "acme_team": "handoffs_runtime.teams.acme",
    "orchestrator_team": "handoffs_runtime.teams.orchestrator",
    "ScriptedModel": "handoffs_runtime.models.scripted",
    "FunctionModel": "handoffs_runtime.models.scripted",
    "ScriptedChannel": "handoffs_runtime.channels.memory",
}
"""The demo teams and the test doubles: part of the package, not of the library's face."""


def test_the_face_is_exactly_the_library() -> None:
    assert set(handoffs_runtime.__all__) == set(FACE)


def test_all_lists_every_public_name_and_each_resolves() -> None:
    public = {n for n in vars(handoffs_runtime) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(handoffs_runtime, n)).__name__ == "module"}
    assert set(handoffs_runtime.__all__) == public - modules
    for name, module in FACE.items():
        assert getattr(handoffs_runtime, name) is getattr(importlib.import_module(module), name), name


def test_demo_teams_and_test_doubles_come_from_their_modules() -> None:
    for name, module in FROM_THEIR_MODULES.items():
        assert not hasattr(handoffs_runtime, name), f"{name} is not part of the face"
        assert callable(getattr(importlib.import_module(module), name))
