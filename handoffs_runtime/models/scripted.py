"""Scripted models: test doubles that answer from a script or a function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from autogen_core.models import (
    LLMMessage,
)
from autogen_core.tools import ToolSchema

from handoffs_runtime.errors import ScriptError
from handoffs_runtime.models.local import LocalModel, Reply

Responder = Callable[[Sequence[LLMMessage], Sequence[ToolSchema]], Reply]
Step = Reply | BaseException | Responder


class FunctionModel(LocalModel):
    """A model whose answers come from a function of the messages and tools (see :func:`current_model_call`).

    Good for many concurrent sessions in tests and benchmarks, where a fixed queue cannot know which
    session calls next.
    """

    label = "function"

    def __init__(self, responder: Responder, *, latency: float = 0.0) -> None:
        super().__init__(latency=latency)
        self._responder = responder

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        return self._responder(messages, tools)


class ScriptedModel(LocalModel):
    """Answers from a fixed queue of steps and fails loudly when the queue runs out.

    A step is text, a list of tool calls, an exception to raise (a model error), or a function of the
    messages and tools. Call :meth:`assert_done` at the end of a test to fail on unconsumed steps.
    """

    label = "scripted"

    def __init__(self, steps: Iterable[Step], *, latency: float = 0.0) -> None:
        super().__init__(latency=latency)
        self._steps = list(steps)

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        if not self._steps:
            raise ScriptError(
                f"scripted model called {len(self.calls)} times but scripted for fewer; "
                f"last message: {messages[-1] if messages else None!r}"
            )
        step = self._steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step(messages, tools)
        return step

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def assert_done(self) -> None:
        if self._steps:
            raise ScriptError(f"scripted model has {len(self._steps)} unused step(s): {self._steps!r}")
