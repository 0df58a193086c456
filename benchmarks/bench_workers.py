"""What delegation costs: a sandboxed run, one worker round trip, and N workers in parallel vs in turn.

Run: ``python benchmarks/bench_workers.py``. Numbers depend on the machine; compare them on one machine.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence

from autogen_core import SingleThreadedAgentRuntime
from autogen_core.models import FunctionExecutionResultMessage, LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import (
    AgentSpec,
    TeamSpec,
    WorkerLimits,
    register_team,
    run_python,
    start_session,
    tool_call,
    worker_tools,
)
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.local import Reply
from handoffs_runtime.models.scripted import FunctionModel


async def sandbox_runs(n: int = 20) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await run_python("print(1)")
        times.append(time.perf_counter() - start)
    return times


def _boss(fan_out: int, parallel: bool) -> FunctionModel:
    def reply(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        if isinstance(messages[-1], FunctionExecutionResultMessage):
            return "done"
        tasks = [f"task {i}" for i in range(fan_out)]
        if parallel:
            return [tool_call("create_workers", {"task_descriptions": tasks})]
        return [tool_call("create_worker", {"task_description": t}) for t in tasks]

    return FunctionModel(reply)


async def turn(fan_out: int, parallel: bool, latency: float) -> float:
    """One person turn in which the orchestrator uses ``fan_out`` workers whose model takes ``latency`` s."""
    team = TeamSpec(
        name="bench",
        entry="Boss",
        agents=[
            AgentSpec(
                "Boss", tools=worker_tools("Worker", limits=WorkerLimits(max_workers_per_turn=fan_out))
            ),
            AgentSpec("Worker", kind="worker", model=FunctionModel(lambda m, t: "ok", latency=latency)),
        ],
    )
    channel = ScriptedChannel.for_sessions({"b": ["go"]})
    runtime = SingleThreadedAgentRuntime()
    await register_team(runtime, team, model=_boss(fan_out, parallel), channel=channel)
    runtime.start()
    start = time.perf_counter()
    await start_session(runtime, "b")
    await runtime.stop_when_idle()
    return time.perf_counter() - start


async def main() -> None:
    runs = await sandbox_runs()
    print(f"sandboxed print(1): median {statistics.median(runs) * 1000:.0f} ms over {len(runs)} runs")
    overhead = [await turn(1, False, 0.0) for _ in range(20)]
    print(f"turn with one worker (models instant): median {statistics.median(overhead) * 1000:.1f} ms")
    for fan_out in (4, 8):
        seq = await turn(fan_out, False, 0.2)
        par = await turn(fan_out, True, 0.2)
        print(f"{fan_out} workers, 0.2 s model each: in turn {seq:.2f} s, create_workers {par:.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
