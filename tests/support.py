"""Helpers for running teams in tests on the real runtime.

``run_sessions`` uses ``HandoffsRuntime`` (what ``handoffs chat`` runs); tests that build a stock
``SingleThreadedAgentRuntime`` themselves keep the library honest on autogen-core's own runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import pytest
from autogen_core import (
    AgentId,
    AgentRuntime,
    BaseAgent,
    MessageContext,
    SingleThreadedAgentRuntime,
    TypeSubscription,
)
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResultMessage,
    RequestUsage,
)

from handoffs_runtime import Channel, HandoffsRuntime, SessionStore, TeamSpec, register_team, start_session
from handoffs_runtime.agents.worker import WorkerAgent, WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Notice, WorkerResult, WorkerTask
from handoffs_runtime.models.scripted import ScriptedModel

_Message = TypeVar("_Message")


async def run_sessions(
    team: TeamSpec,
    channel: Channel,
    *,
    model: ChatCompletionClient | None = None,
    models: Mapping[str, ChatCompletionClient] | None = None,
    sessions: Iterable[str] = ("s1",),
    store: SessionStore | None = None,
    **options: Any,
) -> SingleThreadedAgentRuntime:
    """Register ``team`` (``options`` as for ``register_team``), open ``sessions`` and run until every
    session has ended."""
    runtime = HandoffsRuntime()
    await register_team(
        runtime,
        team,
        model=model or ScriptedModel([]),
        channel=channel,
        models=models,
        store=store,
        **options,
    )
    runtime.start()
    for session in sessions:
        await start_session(runtime, session)
    await runtime.stop_when_idle()
    return runtime


async def ask_worker(
    config: WorkerAgentConfig, task: str, *, timeout: float | None = 30, caller: str = "Front", key: str = "k"
) -> WorkerResult:
    """Send one task to a worker agent made from ``config``, alone on a runtime, and return its result."""
    runtime = HandoffsRuntime()
    await WorkerAgent.register(runtime, config.name, lambda: WorkerAgent(config))
    runtime.start()
    try:
        work = WorkerTask(task=task, session_id="s1", caller=caller, timeout=timeout)
        result: WorkerResult = await runtime.send_message(work, AgentId(config.name, key))
        return result
    finally:
        await runtime.stop()


def texts(channel: object, session: str = "s1") -> list[tuple[str, str]]:
    """(agent, text) of every reply shown in ``session``."""
    return [(r.agent, r.text) for r in channel.replies(session)]  # type: ignore[attr-defined]


def results(model: ScriptedModel, call: int) -> list[str]:
    """The tool results the model read in its ``call``-th call (the last message it was sent)."""
    message = model.calls[call][0][-1]
    assert isinstance(message, FunctionExecutionResultMessage)
    return [r.content for r in message.content]


def notices(channel: ScriptedChannel) -> list[str]:
    """The text of every notice the person of session ``s1`` was shown."""
    return [e.text for e in channel.shown["s1"] if isinstance(e, Notice)]


def questions(channel: ScriptedChannel) -> list[str]:
    """What the person of session ``s1`` was asked, besides the prompt for their next message."""
    return [prompt for _, prompt in channel.asked["s1"] if prompt != "you"]


def emptied_around_each_test(record: list[Any]) -> Callable[[], Iterator[None]]:
    """An autouse fixture that empties a module's ``record`` (what its tools did) before and after each
    of its tests: ``no_orders = emptied_around_each_test(ORDERS)``."""

    @pytest.fixture(autouse=True)
    def emptied() -> Iterator[None]:
        record.clear()
        yield
        record.clear()

    return emptied


class ReportingModel(ScriptedModel):
    """A scripted model whose every reply reports ``prompt`` input and ``completion`` output tokens."""

    def __init__(self, steps: list[object], prompt: int = 100, completion: int = 10) -> None:
        super().__init__(steps)  # type: ignore[arg-type]
        self.usage = RequestUsage(prompt_tokens=prompt, completion_tokens=completion)

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        result = await super().create(*args, **kwargs)
        return result.model_copy(update={"usage": self.usage})


class Listener(BaseAgent):
    """Stands beside the team on one topic of one session and keeps every message published there."""

    def __init__(self) -> None:
        super().__init__("keeps what is published on its topic")
        self.heard: list[object] = []

    async def on_message_impl(self, message: object, ctx: MessageContext) -> None:
        self.heard.append(message)

    def of(self, kind: type[_Message]) -> list[_Message]:
        """What it heard of one type, in order."""
        return [message for message in self.heard if isinstance(message, kind)]


async def listen(runtime: AgentRuntime, topic_type: str, session: str = "s1") -> Listener:
    """A ``Listener`` on ``topic_type`` in ``session`` (before the runtime starts)."""
    listener = Listener()
    agent_type = f"listener-{topic_type}"
    await runtime.register_agent_instance(listener, AgentId(agent_type, session))
    await runtime.add_subscription(TypeSubscription(topic_type=topic_type, agent_type=agent_type))
    return listener
