"""The orchestrator team on the offline model, in process and through the real ``handoffs`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autogen_core.models import AssistantMessage, UserMessage

from handoffs_runtime import OfflineModel
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.confirmation import ASK_CONFIRMATION
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.tools.sandbox.tool import SandboxLimits

from .support import run_sessions, texts

ROOT = Path(__file__).resolve().parent.parent


async def test_offline_run_this_python_answers_then_times_out_then_goes_on() -> None:
    channel = ScriptedChannel.for_sessions(
        {
            "s1": [
                "run this python: print(6*7)",
                "run this python: while True: pass",
                "run this python: print('still here')",
            ]
        }
    )
    model = OfflineModel()
    await run_sessions(orchestrator_team(sandbox=SandboxLimits(timeout=1)), channel, model=model)

    replies = texts(channel)
    assert [agent for agent, _ in replies] == ["Orchestrator"] * 3
    assert "<returncode>0</returncode><stdout>42\n</stdout>" in replies[0][1]
    assert "timed out after 1 s" in replies[1][1]
    assert "<stdout>still here\n</stdout>" in replies[2][1]
    # The orchestrator handed the whole request to a worker, which ran only the code.
    worker_calls = [m for m, tools in model.calls if [t["name"] for t in tools] == ["execute_python_code"]]
    first_task = worker_calls[0][1]
    assert isinstance(first_task, UserMessage) and first_task.content == "run this python: print(6*7)"
    code_call = worker_calls[1][2]
    assert isinstance(code_call, AssistantMessage) and isinstance(code_call.content, list)
    assert json.loads(code_call.content[0].arguments) == {"code": "print(6*7)"}


async def test_offline_explicit_requests_leave_ordinary_ones_alone() -> None:
    channel = ScriptedChannel.for_sessions({"s1": ["please run some python for me", "hello"]})
    await run_sessions(orchestrator_team(), channel, model=OfflineModel())
    first, second = texts(channel)
    assert first[1].endswith(ASK_CONFIRMATION)  # no spelled-out argument: it asks before acting
    assert second[1].startswith("Hello, this is Orchestrator.")


def test_handoffs_chat_team_orchestrator_answers_42() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "HANDOFFS_MODEL")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "handoffs_runtime", "chat", "--team", "orchestrator", "--no-colour"],
        input="run this python: print(6*7)\nrun this python: print(1/0)\nexit\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Orchestrator and workers" in done.stdout
    assert "<stdout>42\n</stdout>" in done.stdout
    assert "ZeroDivisionError" in done.stdout  # a failing program is a result, and the session goes on
    assert "ended" in done.stdout
