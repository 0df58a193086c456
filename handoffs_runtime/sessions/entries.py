"""Stored entry bodies, typed: one pydantic union discriminated on the entry's kind, checked on read.

A body is written as plain JSON (the write path stays as cheap as a ``json.dumps``) and read back through
:func:`read_body`, which gives the kind's own type (:data:`EntryBody`) or raises
:class:`~handoffs_runtime.errors.CorruptEntryError` naming the entry: nothing downstream meets a body
that is not what its kind says.

>>> read_body("s1", 3, "notice", {"text": "the session resumed"}).text
'the session resumed'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, SystemMessage, UserMessage
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from handoffs_runtime.errors import CorruptEntryError
from handoffs_runtime.messages import HandoffEvent, Person
from handoffs_runtime.usage import Usage

EntryKind = Literal["user", "reply", "tool_calls", "tool_results", "handoff", "system", "notice", "question"]
ENTRY_KINDS: frozenset[str] = frozenset(get_args(EntryKind))


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class _MessageBody(_Body):
    """A conversation message: the message's own fields, and the turn's token usage on one of them."""

    usage: Annotated[Usage, BeforeValidator(Usage.from_json)] = Usage.EMPTY


class UserBody(_MessageBody):
    kind: Literal["user"]
    message: UserMessage


class ReplyBody(_MessageBody):
    """An agent's words (text content; a reply with tool calls is a :class:`ToolCallsBody`)."""

    kind: Literal["reply"]
    message: AssistantMessage

    @model_validator(mode="after")
    def _content_matches_kind(self) -> ReplyBody:
        if not isinstance(self.message.content, str):
            raise ValueError("a reply whose content is not text")
        return self


class ToolCallsBody(_MessageBody):
    kind: Literal["tool_calls"]
    message: AssistantMessage

    @model_validator(mode="after")
    def _content_matches_kind(self) -> ToolCallsBody:
        if isinstance(self.message.content, str):
            raise ValueError("tool calls whose content is text")
        return self


class ToolResultsBody(_MessageBody):
    kind: Literal["tool_results"]
    message: FunctionExecutionResultMessage


class SystemBody(_MessageBody):
    kind: Literal["system"]
    message: SystemMessage


class HandoffBody(_Body):
    kind: Literal["handoff"]
    event: HandoffEvent


class NoticeBody(_Body):
    """A line the runtime told the person (the session resumed, a message went unanswered)."""

    kind: Literal["notice"]
    text: str


class QuestionBody(_Body):
    """A question put to a person outside their turn, and the answer (``None``: the person had left)."""

    kind: Literal["question"]
    prompt: str
    person: Person
    answer: str | None


MessageBody = UserBody | ReplyBody | ToolCallsBody | ToolResultsBody | SystemBody
MESSAGE_BODIES = (UserBody, ReplyBody, ToolCallsBody, ToolResultsBody, SystemBody)
"""The bodies that hold a conversation message (``isinstance`` checks take the tuple)."""

EntryBody = Annotated[
    MessageBody | HandoffBody | NoticeBody | QuestionBody,
    Field(discriminator="kind"),
]
"""Every body a transcript entry can hold, told apart by the entry's kind."""

_BODY: TypeAdapter[EntryBody] = TypeAdapter(EntryBody)


def read_body(session_id: str, seq: int, kind: str, body: object) -> EntryBody:
    """Entry ``seq`` of ``session_id``'s body (the decoded JSON) as its kind's type; a body that is not
    what its kind says raises :class:`CorruptEntryError`."""
    if kind not in ENTRY_KINDS:
        raise CorruptEntryError(session_id, seq, f"kind {kind!r} is none of {', '.join(sorted(ENTRY_KINDS))}")
    if not isinstance(body, dict):
        raise CorruptEntryError(session_id, seq, f"kind {kind!r} with a body of type {type(body).__name__}")
    try:
        return _BODY.validate_python(_shaped(kind, body))
    except ValidationError as exc:
        raise CorruptEntryError(session_id, seq, _reason(kind, exc)) from exc


def _shaped(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The stored object in its body model's shape: a message or an event nested under its field, the
    rest as they are (built here rather than in a model validator: this is every read's cost)."""
    if kind == "handoff":
        return {"kind": kind, "event": body}
    if kind in ("notice", "question"):
        return {**body, "kind": kind}
    if "usage" in body:
        return {"kind": kind, "message": body, "usage": body["usage"]}
    return {"kind": kind, "message": body}


def _reason(kind: str, exc: ValidationError) -> str:
    """The first thing wrong, in one line: ``a question body: answer: Field required``."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"][1:])
    said = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
    return f"a {kind} body: {where + ': ' if where else ''}{said}"
