"""handoffs-runtime through its public API: a team, two ``FunctionModel``s, a channel that talks once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from autogen_core import AgentRuntime
from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import (
    AgentSpec,
    Event,
    HandoffLine,
    HandoffsRuntime,
    Reply,
    TeamSpec,
    current_model_call,
    register_team,
    start_session,
    tool_call,
)
from handoffs_runtime.messages import Person
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.sessions.open import OpenedStore, open_store

from ..scenario import (
    HANDOFF_TOOL,
    SALES,
    SALES_DESCRIPTION,
    SALES_PROMPT,
    SALES_TEXT,
    TRIAGE,
    TRIAGE_PROMPT,
    USER_TEXT,
    BenchmarkError,
    CallCounter,
    Outcome,
)

RuntimeFactory = Callable[[], AgentRuntime]


@dataclass(slots=True)
class _Session:
    done: asyncio.Future[Outcome]
    asked: bool = False
    handoffs: int = 0
    replies: list[Reply] = field(default_factory=list)


class OnceChannel:
    """The person says ``USER_TEXT`` once, then leaves; what the team shows is tallied per session."""

    shows_progress = False

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        state = self.sessions[session_id]
        if state.asked:
            return None
        state.asked = True
        return USER_TEXT

    async def show(self, session_id: str, event: Event) -> None:
        state = self.sessions[session_id]
        if isinstance(event, Reply):
            state.replies.append(event)
        elif isinstance(event, HandoffLine) and event.outcome == "handoff":
            state.handoffs += 1

    def ended(self, session_id: str) -> None:
        state = self.sessions.pop(session_id)
        last = state.replies[-1] if state.replies else Reply(agent="", text="")
        extra = len(state.replies) - 1
        text = last.text if extra == 0 else f"{last.text} (+{extra} more replies)"
        state.done.set_result(Outcome(state.handoffs, last.agent, text))


def team() -> TeamSpec:
    return TeamSpec(
        name="bench",
        entry=TRIAGE,
        agents=[
            AgentSpec(TRIAGE, system_message=TRIAGE_PROMPT, handoffs=[SALES]),
            AgentSpec(SALES, system_message=SALES_PROMPT, description=SALES_DESCRIPTION),
        ],
    )


class Ours:
    def __init__(
        self,
        runtime: AgentRuntime,
        channel: OnceChannel,
        calls: CallCounter,
        store: OpenedStore | None = None,
    ) -> None:
        self._runtime = runtime
        self._channel = channel
        self._store = store
        self.calls = calls

    async def session(self, index: int) -> Outcome:
        session = f"s{index}"
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._channel.sessions[session] = _Session(done)
        await start_session(self._runtime, session)
        return await done

    async def close(self) -> None:
        await self._runtime.stop()  # type: ignore[attr-defined]
        if self._store is not None:
            await self._store.close()


def _models(calls: CallCounter, latency: float) -> dict[str, FunctionModel]:
    def triage(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> list:  # type: ignore[type-arg]
        call = current_model_call()
        if call is None or call.agent != TRIAGE or HANDOFF_TOOL not in call.handoff_tools:
            raise BenchmarkError(f"triage's model was called as {call!r}")
        calls.triage += 1
        return [tool_call(HANDOFF_TOOL, "{}")]

    def sales(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        calls.sales += 1
        return SALES_TEXT

    models = {TRIAGE: FunctionModel(triage, latency=latency), SALES: FunctionModel(sales, latency=latency)}
    for model in models.values():
        model.record_calls = False  # a benchmark runs thousands of sessions
    return models


async def create(
    latency: float, runtime_factory: RuntimeFactory | None = None, *, store: str | None = None
) -> Ours:
    """``store`` names a session store as ``--store`` does (a file, ``:memory:`` or a PostgreSQL URL)."""
    runtime = (runtime_factory or HandoffsRuntime)()
    opened = await asyncio.to_thread(open_store, store) if store else None
    calls = CallCounter()
    channel = OnceChannel()
    models = _models(calls, latency)
    await register_team(
        runtime,
        team(),
        model=models[TRIAGE],
        models=models,
        channel=channel,
        on_session_end=channel.ended,
        store=opened,
    )
    runtime.start()  # type: ignore[attr-defined]
    return Ours(runtime, channel, calls, opened)
