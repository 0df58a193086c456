"""What browsers may send to ``handoffs serve``, checked before anything else reads it.

Every message is one JSON object with a ``type``; anything else (nesting too deep to read included) is
:class:`BadMessage`, and the server answers it with one error and closes the connection.
Sizes are bounded twice: the server refuses WebSocket frames over ``MAX_FRAME_BYTES`` (closing with code
1009, before the message is held in memory), and text a person types is cut off at ``MAX_TEXT_CHARS``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

MAX_FRAME_BYTES = 64 * 1024
MAX_TEXT_CHARS = 4000

SessionId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Key = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS)]
Token = Annotated[str, StringConstraints(min_length=1, max_length=256)]
AgentName = Annotated[str, StringConstraints(min_length=1, max_length=200)]
QuestionId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{1,64}$")]
"""The ``id`` of the question a page answers (a ``question`` frame's): a yes/no question takes only an
answer naming it (see ``Question.answered_by``)."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hello(_Message):
    """A customer opens a new session (no ``session``) or resumes one with the key it was given."""

    type: Literal["hello"]
    session: SessionId | None = None
    key: Key | None = None


class Say(_Message):
    """The customer's next line, or the answer to the question they were asked (``question``: its id)."""

    type: Literal["say"]
    text: Text
    question: QuestionId | None = None


class Earlier(_Message):
    """The customer wants to see the transcript items before number ``before`` (see ``web/history``)."""

    type: Literal["earlier"]
    before: Annotated[int, Field(ge=0)]


class Back(_Message):
    """The customer waiting for a person goes back to the assistant instead."""

    type: Literal["back"]


class OperatorHello(_Message):
    type: Literal["hello"]
    token: Token


class Take(_Message):
    type: Literal["take"]
    session: SessionId


class Answer(_Message):
    """The operator's answer in a session they took (text, or ``yes``/``no`` to an approval, which must
    name the approval's ``question`` id)."""

    type: Literal["say"]
    session: SessionId
    text: Text
    question: QuestionId | None = None


class HandBack(_Message):
    type: Literal["hand_back"]
    session: SessionId
    agent: AgentName


class Dismiss(_Message):
    """The message an away customer left has been dealt with: off the waiting list."""

    type: Literal["dismiss"]
    session: SessionId


CustomerMessage = Annotated[Hello | Say | Earlier | Back, Field(discriminator="type")]
OperatorMessage = Annotated[OperatorHello | Take | Answer | HandBack | Dismiss, Field(discriminator="type")]
_CUSTOMER: TypeAdapter[Hello | Say | Earlier | Back] = TypeAdapter(CustomerMessage)
_OPERATOR: TypeAdapter[OperatorHello | Take | Answer | HandBack | Dismiss] = TypeAdapter(OperatorMessage)


class BadMessage(ValueError):
    """A browser message that is not what the protocol allows; its text is safe to send back."""


def _parse(raw: str, adapter: TypeAdapter[Any]) -> Any:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: arrays or objects nested thousands deep
        raise BadMessage("malformed message: expected one JSON object") from None
    if not isinstance(data, dict):
        raise BadMessage("malformed message: expected one JSON object")
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise BadMessage(f"invalid message: {_describe(exc)}") from None


def parse_customer(raw: str) -> Hello | Say | Earlier | Back:
    result: Hello | Say | Earlier | Back = _parse(raw, _CUSTOMER)
    return result


def parse_operator(raw: str) -> OperatorHello | Take | Answer | HandBack | Dismiss:
    result: OperatorHello | Take | Answer | HandBack | Dismiss = _parse(raw, _OPERATOR)
    return result


def _describe(exc: ValidationError) -> str:
    """Field names and short reasons only: the browser's own input is never echoed back."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "message"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return re.sub(r"\s+", " ", "; ".join(parts))[:300]


def session_key(secret: bytes, session_id: str) -> str:
    """The key that proves a browser was given ``session_id``: only this server can make it."""
    return hmac.new(secret, b"customer-session:" + session_id.encode(), hashlib.sha256).hexdigest()


def key_matches(secret: bytes, session_id: str, key: str) -> bool:
    return hmac.compare_digest(session_key(secret, session_id), key)


def token_matches(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode(), given.encode())
