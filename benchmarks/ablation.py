"""What each hot-path change buys: ``python -m benchmarks.ablation [--sessions N] [--rounds R]``.

Runs the benchmark scenario on handoffs-runtime with the changes switched on one at a time, in the order
they were made, and prints median µs per session (sequential, zero latency) and the wall time of 1000
concurrent sessions at 50 ms per model call. The steps run interleaved for ``rounds`` rounds so that
a noisy neighbour on the machine hurts every step alike; medians are over all rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from autogen_core import RoutedAgent, SingleThreadedAgentRuntime
from autogen_core._runtime_impl_helpers import SubscriptionManager

from handoffs_runtime import HandoffsRuntime, UserTask
from handoffs_runtime.agents import ai, user
from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.messages import AgentResponse

from . import context_size
from .frameworks import ours
from .scenario import check


class _UuidIds(HandoffsRuntime):
    """HandoffsRuntime with autogen-core's subscription manager and a uuid4 per message, as before."""

    def __init__(self) -> None:
        super().__init__()
        self._subscription_manager = SubscriptionManager()

    async def publish_message(self, message: Any, topic_id: Any, **kwargs: Any) -> None:
        kwargs["message_id"] = kwargs.get("message_id") or str(uuid.uuid4())
        await super().publish_message(message, topic_id, **kwargs)


@contextlib.contextmanager
def _routed_agent_init() -> Iterator[None]:
    """Agents find their handlers on every construction, as autogen-core's RoutedAgent does."""
    fast = SessionAgent.__init__
    SessionAgent.__init__ = RoutedAgent.__init__  # type: ignore[method-assign]
    try:
        yield
    finally:
        SessionAgent.__init__ = fast  # type: ignore[method-assign]


def _validating_user_task(context: Any, turn_path: Any) -> UserTask:
    return UserTask(context=context, turn_path=turn_path)


def _validating_agent_response(context: Any, reply_to_topic_type: Any) -> AgentResponse:
    return AgentResponse(context=context, reply_to_topic_type=reply_to_topic_type)


@contextlib.contextmanager
def _validated_messages() -> Iterator[None]:
    """UserTask and AgentResponse validated item by item, as before."""
    patches = [
        (ai, "user_task", _validating_user_task),
        (ai, "agent_response", _validating_agent_response),
        (user, "user_task", _validating_user_task),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, replacement in patches:
        setattr(module, name, replacement)
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


Step = tuple[str, Callable[[], Any], list[Callable[[], contextlib.AbstractContextManager[None]]]]
STEPS: list[Step] = [
    (
        "autogen-core runtime, as first written",
        SingleThreadedAgentRuntime,
        [_routed_agent_init, _validated_messages],
    ),
    (
        "+ HandoffsRuntime short path (no spans, logs, serialization)",
        _UuidIds,
        [_routed_agent_init, _validated_messages],
    ),
    ("+ SessionAgent: handlers found once per class", _UuidIds, [_validated_messages]),
    ("+ topic lookup by topic type, counter message ids", HandoffsRuntime, [_validated_messages]),
    ("+ UserTask/AgentResponse without re-validating the context", HandoffsRuntime, []),
]


async def _conversation_ms(factory: Callable[[], Any], repeats: int = 5) -> float:
    """Median time of the 20-turn, 5-handoff conversation of the context figure (a long context)."""
    times: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await context_size.measure_mode(context_size.MODES["full context"], factory)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def _measure(factory: Callable[[], Any], sessions: int, concurrent: int) -> tuple[float, float, float]:
    fw = await ours.create(0.0, factory)
    for i in range(50):
        await fw.session(-1 - i)
    fw.calls.triage = fw.calls.sales = 0
    times: list[float] = []
    outcomes = []
    for i in range(sessions):
        t0 = time.perf_counter_ns()
        outcomes.append(await fw.session(i))
        times.append((time.perf_counter_ns() - t0) / 1000)
    check("ours", outcomes, fw.calls)
    await fw.close()
    fw = await ours.create(0.05, factory)
    await fw.session(-1)
    start = time.perf_counter()
    await asyncio.gather(*(fw.session(i) for i in range(concurrent)))
    wall = time.perf_counter() - start
    await fw.close()
    return statistics.median(times), wall, await _conversation_ms(factory)


async def main(sessions: int, concurrent: int, rounds: int) -> None:
    seq: dict[str, list[float]] = {name: [] for name, _, _ in STEPS}
    conc: dict[str, list[float]] = {name: [] for name, _, _ in STEPS}
    long: dict[str, list[float]] = {name: [] for name, _, _ in STEPS}
    for _ in range(rounds):
        for name, factory, undo in STEPS:
            with contextlib.ExitStack() as stack:
                for cm in undo:
                    stack.enter_context(cm())
                s, c, lc = await _measure(factory, sessions, concurrent)
            seq[name].append(s)
            conc[name].append(c)
            long[name].append(lc)
    print(
        f"| step | µs per session (median) | {concurrent} sessions at 50 ms: wall s | "
        "20-turn conversation: ms |"
    )
    print("|---|---:|---:|---:|")
    for name, _, _ in STEPS:
        print(
            f"| {name} | {statistics.median(seq[name]):,.0f} | {statistics.median(conc[name]):.2f} | "
            f"{statistics.median(long[name]):.1f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.sessions, args.concurrent, args.rounds))
