"""The orchestrator team: an orchestrator that splits a task and creates worker sub-agents on demand.

Each worker gets ``execute_python_code`` and answers its one task; the answer comes back to the
orchestrator as the tool result, and the orchestrator keeps the conversation (no handoff). On the
offline model, ``run this python: print(6*7)`` goes orchestrator → worker → sandbox and answers 42.
"""

from __future__ import annotations

from autogen_core.tools import Tool

from handoffs_runtime.team.spec import AgentSpec, TeamSpec
from handoffs_runtime.tools.approval import requires_approval
from handoffs_runtime.tools.sandbox.tool import SandboxLimits, python_code_tool
from handoffs_runtime.tools.workers import WorkerLimits, worker_tools

ORCHESTRATOR = "Orchestrator"
WORKER = "Worker"

ORCHESTRATOR_PROMPT = (
    "You are an orchestrator. Complete the person's task by splitting it into self-contained sub-tasks and "
    "creating a worker for each (create_worker, or create_workers for independent ones at once). Workers "
    "can run Python code. Give each worker everything it needs; then answer the person from their results."
)
WORKER_PROMPT = (
    "You are a worker. Complete the task you are given, running Python code with execute_python_code when "
    "it helps, then reply with the result and nothing else."
)


def code_tool(*, timeout: float = 5.0, sandbox: SandboxLimits | None = None, approve: bool = False) -> Tool:
    """The workers' ``execute_python_code``: ``timeout`` seconds per run unless ``sandbox`` says more;
    ``approve`` asks the person before each run."""
    tool = python_code_tool(limits=sandbox or SandboxLimits(timeout=timeout))
    return requires_approval(tool) if approve else tool


def orchestrator_team(
    *,
    sandbox: SandboxLimits | None = None,
    limits: WorkerLimits | None = None,
    approve_code: bool = False,
) -> TeamSpec:
    """The team of ``handoffs chat --team orchestrator``; ``approve_code`` asks the person before each run."""
    return TeamSpec(
        name="orchestrator",
        title="Orchestrator and workers",
        entry=ORCHESTRATOR,
        agents=[
            AgentSpec(
                ORCHESTRATOR,
                system_message=ORCHESTRATOR_PROMPT,
                description="Splits a task and creates workers for it.",
                tools=worker_tools(WORKER, limits=limits),
            ),
            AgentSpec(
                WORKER,
                system_message=WORKER_PROMPT,
                description="Carries out one task, running Python code when it helps.",
                tools=[code_tool(sandbox=sandbox, approve=approve_code)],
                kind="worker",
            ),
        ],
    )
