"""A handoff as a piece of data: the target agent, the tool the model calls, and the hooks around it.

``handoff()`` builds one; a team's agent lists its handoffs as target names or ``Handoff`` objects. The
team validates every handoff once, when it is built, so a misconfiguration fails before the first chat.

Example::

    class Reason(BaseModel):
        reason: str

    async def log_escalation(ctx: HandoffContext, data: Reason) -> None:
        print(ctx.session_id, data.reason)

    handoff("HumanAgent", input_type=Reason, on_handoff=log_escalation)
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema
from pydantic import BaseModel

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.strict_schema import to_strict_json_schema


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What ``is_enabled`` callables see: the session, the agent about to call its model, the talk so far."""

    session_id: str
    agent: str
    conversation: Sequence[LLMMessage]


@dataclass(frozen=True, slots=True)
class HandoffContext:
    """What ``on_handoff`` callbacks see when a handoff is about to happen."""

    session_id: str
    source: str
    target: str
    conversation: Sequence[LLMMessage]


@dataclass(frozen=True, slots=True)
class HandoffInputData:
    """The conversation as it is handed over; an input filter returns a changed copy.

    ``history`` is what the agent received; ``new_items`` is what it added in this step (its tool calls
    and their results, the handoff call included).
    """

    history: tuple[LLMMessage, ...]
    new_items: tuple[LLMMessage, ...]
    source: str
    target: str
    session_id: str

    @property
    def all_items(self) -> list[LLMMessage]:
        return [*self.history, *self.new_items]

    def replace(self, **changes: Any) -> HandoffInputData:
        return replace(self, **changes)


InputFilter = Callable[[HandoffInputData], HandoffInputData | Awaitable[HandoffInputData]]
HistoryMapper = Callable[[Sequence[LLMMessage]], str]
OnHandoff = Callable[..., Awaitable[None] | None]
IsEnabled = bool | Callable[[SessionContext], bool | Awaitable[bool]]

_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}, "required": []}


def snake_case(name: str) -> str:
    """``IssuesAndRepairsAgent`` -> ``issues_and_repairs_agent``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[^A-Za-z0-9]+", "_", name)
    return re.sub(r"_+", "_", spaced).strip("_").lower()


def default_tool_name(target: str) -> str:
    return f"transfer_to_{snake_case(target)}"


@dataclass(frozen=True, slots=True)
class Handoff:
    """One way an agent can pass the conversation on. Build it with :func:`handoff`."""

    target: str
    tool_name: str
    tool_description: str | None = None
    on_handoff: OnHandoff | None = None
    input_type: type[BaseModel] | None = None
    input_filter: InputFilter | None = None
    is_enabled: IsEnabled = True
    nest_handoff_history: bool | None = None
    strict_json_schema: bool = True
    """A strict input schema (``additionalProperties: false``, every property required, ``strict: true``)
    and strict validation (no coercion: ``"25"`` is not an ``int``); ``False``: pydantic's own schema and
    lax validation."""
    returns: bool = False
    """When the target's part is done (its turn ends in a reply), the conversation comes back to the agent
    that handed over, by rule rather than by the target's prompt (see :mod:`.returns`)."""
    _schema: ToolSchema | None = field(default=None, repr=False, compare=False)

    @property
    def schema(self) -> ToolSchema:
        """The tool schema offered to the model (built when the team resolves the handoff)."""
        if self._schema is None:
            raise TeamConfigError(f"handoff {self.tool_name!r} was used before its team was built")
        return self._schema

    @property
    def always_enabled(self) -> bool:
        return self.is_enabled is True

    def resolved(self, target_description: str) -> Handoff:
        """This handoff with its description and schema filled in; checks the callbacks' shapes."""
        self._check_callbacks()
        description = self.tool_description or (
            f"Hand the conversation to {self.target}. {target_description}".strip()
        )
        parameters = (
            self.input_type.model_json_schema() if self.input_type is not None else dict(_EMPTY_PARAMETERS)
        )
        schema = ToolSchema(name=self.tool_name, description=description, parameters=parameters)  # type: ignore[typeddict-item]
        if self.strict_json_schema:
            owner = f"handoff {self.tool_name!r}"
            schema["parameters"] = to_strict_json_schema(parameters, owner=owner)  # type: ignore[typeddict-item]
            schema["strict"] = True
        return replace(self, tool_description=description, _schema=schema)

    def validate_input(self, arguments: str) -> BaseModel | None:
        """The call's arguments (JSON text) checked against ``input_type``; raises ``ValidationError``."""
        if self.input_type is None:
            return None
        return self.input_type.model_validate_json(arguments.strip() or "{}", strict=self.strict_json_schema)

    def _check_callbacks(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.tool_name):
            raise TeamConfigError(
                f"handoff tool name {self.tool_name!r} is invalid: use 1-64 letters, digits, '_' or '-'"
            )
        if self.input_type is not None and not (
            isinstance(self.input_type, type) and issubclass(self.input_type, BaseModel)
        ):
            raise TeamConfigError(
                f"handoff {self.tool_name!r}: input_type must be a pydantic BaseModel subclass, "
                f"got {self.input_type!r}"
            )
        if self.on_handoff is not None:
            wanted = 2 if self.input_type is not None else 1
            if _positional_arity(self.on_handoff) != wanted:
                shape = (
                    f"def on_handoff(ctx: HandoffContext, data: {self.input_type.__name__}) -> None"
                    if self.input_type is not None
                    else "def on_handoff(ctx: HandoffContext) -> None"
                )
                raise TeamConfigError(
                    f"handoff {self.tool_name!r}: on_handoff must take {wanted} positional argument(s); "
                    f"write it as `{shape}` (it may be async)"
                )
        if callable(self.is_enabled) and _positional_arity(self.is_enabled) != 1:
            raise TeamConfigError(
                f"handoff {self.tool_name!r}: is_enabled must be a bool or "
                "`def is_enabled(ctx: SessionContext) -> bool` (it may be async)"
            )
        if self.input_filter is not None:
            check_input_filter(self.input_filter, f"handoff {self.tool_name!r}: input_filter")


def check_input_filter(input_filter: object, where: str) -> None:
    """Refuse, when the team is built, an input filter that cannot be called with one argument."""
    if not callable(input_filter) or _positional_arity(input_filter) != 1:
        raise TeamConfigError(
            f"{where} must be `def my_filter(data: HandoffInputData) -> HandoffInputData` "
            f"(it may be async), got {input_filter!r}"
        )


def _positional_arity(func: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return -1
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return -1
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in positional and p.default is p.empty)


def handoff(
    target: str,
    *,
    tool_name_override: str | None = None,
    tool_description_override: str | None = None,
    on_handoff: OnHandoff | None = None,
    input_type: type[BaseModel] | None = None,
    input_filter: InputFilter | None = None,
    is_enabled: IsEnabled = True,
    nest_handoff_history: bool | None = None,
    strict_json_schema: bool = True,
    returns: bool = False,
) -> Handoff:
    """Describe a handoff to the agent of topic type ``target``.

    The tool is named ``transfer_to_<snake_case(target)>`` unless overridden; its description defaults to
    the target agent's ``handoff_description``. ``nest_handoff_history=None`` follows the team's setting.
    ``strict_json_schema=False`` offers pydantic's schema as it is and validates laxly (coercing
    ``"25"`` to ``25``), for models or servers that cannot follow a strict schema. ``returns=True``: when
    the target's part is done, the conversation comes back to this agent without the model asking.
    """
    return Handoff(
        target=target,
        tool_name=tool_name_override or default_tool_name(target),
        tool_description=tool_description_override,
        on_handoff=on_handoff,
        input_type=input_type,
        input_filter=input_filter,
        is_enabled=is_enabled,
        nest_handoff_history=nest_handoff_history,
        strict_json_schema=strict_json_schema,
        returns=returns,
    )


async def call_maybe_async(func: Callable[..., Any], *args: Any) -> Any:
    """Call a sync or async callback and return its result."""
    result = func(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
