"""Human approval as an option on any tool: the person confirms through the session's channel first.

``requires_approval(tool)`` returns a tool with the same name, description and arguments. When a model
calls it, the person of the session is asked (``Allow delete_file(path="a.txt")? y/n``) through the
channel, shown exactly what will run (:func:`default_prompt`, worded in
:mod:`handoffs_runtime.confirmation`: the whole arguments, code as numbered lines, never cut); only a
yes runs the tool. A no, or a person who has left, becomes the tool result ``Refused: ...`` so the
model can tell the person and carry on. Works for agents and workers alike;
parallel workers of one session ask one question at a time, so their questions never interleave.

An approval expires. With ``max_age`` (what ``operator_oversight`` gives each operator approval: the
team policy's ``approval_max_age``), a question not answered within that many seconds is withdrawn; and
a yes is void when the customer has left the session, or the turn it was asked in is over (the person
has written since). Then the tool does not run, its result says why, and the session (the operator
among its people) is told.

Example::

    AgentSpec("Worker", tools=[requires_approval(execute_python_code)], kind="worker")
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final

from autogen_core import CancellationToken
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from handoffs_runtime.channels.base import has_left
from handoffs_runtime.confirmation import approval as default_prompt
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.messages import Notice, Person
from handoffs_runtime.tools.capabilities import delegate_of
from handoffs_runtime.tools.context import ask_person, current_tool_context, turn_over
from handoffs_runtime.tools.functions import function_tool

APPROVE_WORDS = frozenset({"y", "yes", "ok", "okay", "approve", "approved", "allow", "go ahead", "sure"})
PromptBuilder = Callable[[str, Mapping[str, Any]], str]


REFUSED = "Refused: "
"""How the result of a call the person did not approve starts."""

CUSTOMER_LEFT = "the customer had left the session"
"""Why a yes given after the customer left is void (the web's operator console says so too)."""

logger = logging.getLogger("handoffs_runtime")


def is_approval(answer: str | None) -> bool:
    """Whether the person's ``answer`` to a yes/no question says yes (``None``: nobody answered)."""
    return answer is not None and answer.strip().lower().rstrip(".!") in APPROVE_WORDS


_asking: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
"""One lock per session while a question is pending (weak: it goes away when nobody waits on it)."""


class ApprovalTool:
    """A tool that runs only after the person says yes. Build it with :func:`requires_approval`."""

    def __init__(
        self,
        tool: Tool,
        *,
        prompt: PromptBuilder | None = None,
        person: Person = "customer",
        max_age: float | None = None,
    ) -> None:
        if max_age is not None and not max_age > 0:
            raise TeamConfigError(
                f"an approval's max_age must be a positive number of seconds, got {max_age}"
            )
        self.inner: Final = tool
        self.person: Final[Person] = person
        """Who approves each call: the session's ``customer`` or its ``operator``."""
        self.max_age: Final = max_age
        """Seconds an approval stays good from the moment it is asked (``None``: no limit)."""
        self.delegates_to = delegate_of(tool)
        self._prompt = prompt or default_prompt

    def asking(self, person: Person, *, max_age: float | None = None) -> ApprovalTool:
        """The same tool and question, approved by ``person`` instead (within ``max_age`` seconds, when
        given; else as before)."""
        age = self.max_age if max_age is None else max_age
        if person == self.person and age == self.max_age:
            return self
        return ApprovalTool(self.inner, prompt=self._prompt, person=person, max_age=age)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def schema(self) -> ToolSchema:
        return self.inner.schema

    def args_type(self) -> type[BaseModel]:
        return self.inner.args_type()

    def return_type(self) -> type[Any]:
        return self.inner.return_type()

    def state_type(self) -> type[BaseModel] | None:
        return self.inner.state_type()

    def return_value_as_string(self, value: Any) -> str:
        return self.inner.return_value_as_string(value)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        self.inner.args_type().model_validate(args)  # ask only about calls that can run
        try:
            answer = await asyncio.wait_for(self._ask(self._prompt(self.name, args)), self.max_age)
        except TimeoutError:
            return await self._void(
                f"nobody approved it within {self.max_age:g} seconds: the question expired"
            )
        if answer is None:
            return f"{REFUSED}{self.name} was not run because nobody could approve it."
        if not is_approval(answer):
            return f"{REFUSED}the {self.person} did not approve running {self.name}."
        late = await _void_reason(self.person)
        if late is not None:
            return await self._void(f"the {self.person}'s approval came when {late}, so it is void")
        return await self.inner.run_json(args, cancellation_token, call_id=call_id)

    async def _void(self, why: str) -> str:
        """The result of a call whose approval expired; the session's people (the operator) are told."""
        logger.warning("%s was not run: %s", self.name, why)
        ctx = current_tool_context()
        if ctx is not None and ctx.channel is not None:
            notice = Notice(text=f"⚠ A request was not carried out: {why}. Nothing was done.")
            try:
                await ctx.channel.show(ctx.session_id, notice)
            except Exception:  # telling is best effort: the call is refused whatever happens
                logger.exception("could not tell session %s that an approval expired", ctx.session_id)
        return f"{REFUSED}{self.name} was not run: {why}. Tell the person it was not done."

    async def _ask(self, prompt: str) -> str | None:
        ctx = current_tool_context()
        key = ctx.session_id if ctx is not None else ""
        lock = _asking.get(key)
        if lock is None:
            lock = _asking[key] = asyncio.Lock()
        async with lock:
            return await ask_person(prompt, person=self.person)

    async def save_state_json(self) -> Mapping[str, Any]:
        return await self.inner.save_state_json()

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        await self.inner.load_state_json(state)


async def _void_reason(person: Person) -> str | None:
    """Why a yes just given is void (the customer left, the turn is over), or ``None`` when it stands."""
    ctx = current_tool_context()
    if person != "customer" and ctx is not None and has_left(ctx.channel, ctx.session_id, "customer"):
        return CUSTOMER_LEFT
    return await turn_over()


def requires_approval(
    tool: Tool | Callable[..., Any],
    *,
    prompt: PromptBuilder | None = None,
    person: Person | None = None,
    max_age: float | None = None,
) -> ApprovalTool:
    """``tool`` (a ``Tool`` or a plain function), run only after ``person`` (default: the customer)
    approves each call, within ``max_age`` seconds of being asked (``None``: no limit). A tool that asks
    already keeps its question and is asked of ``person`` if given."""
    if isinstance(tool, ApprovalTool):
        return (
            tool
            if person is None and max_age is None
            else tool.asking(person or tool.person, max_age=max_age)
        )
    if not isinstance(tool, Tool):
        if not callable(tool):
            raise TeamConfigError(f"requires_approval needs a Tool or a function, got {tool!r}")
        tool = function_tool(tool, owner="requires_approval")
    return ApprovalTool(tool, prompt=prompt, person=person or "customer", max_age=max_age)
