"""What ``handoffs serve`` sends to browsers: every frame a page receives, typed, encoded in one place.

The twin of ``protocol`` (what browsers may send). A customer's page receives a :data:`CustomerFrame`, the
operator console an :data:`OperatorFrame`; each is one JSON object whose ``type`` tells what it is. An
event of a session travels flat, its own fields beside the frame's (``{"session": ..., "type": "reply",
"agent": ...}``): the whole event for the operator, the customer's view of it (``audience``) for a
customer; a transcript item likewise beside ``at``, when it was stored (seconds since the epoch).
:func:`encode` is the only place a frame becomes text; :data:`CUSTOMER_FRAMES` and
:data:`OPERATOR_FRAMES` read one back (the tests check every frame sent against them).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from functools import reduce
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    SerializerFunctionWrapHandler,
    Tag,
    TypeAdapter,
    model_serializer,
    model_validator,
)

from handoffs_runtime.messages import Event, Question
from handoffs_runtime.web.audience import CustomerView


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _AboutSession(_Frame):
    """A frame about one session. ``type`` is declared here only to keep it first on the wire, as in every
    frame; each frame narrows it to its own."""

    type: str
    session: str


class _Carrier(_Frame):
    """A frame that carries an event: on the wire, the event's fields beside the frame's own."""

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        if isinstance(data, dict) and "event" not in data:
            own = set(cls.model_fields) - {"event"}
            event = {k: v for k, v in data.items() if k not in own}
            return {**{k: v for k, v in data.items() if k in own}, "event": event}
        return data

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        event: dict[str, Any] = data.pop("event")
        return {**{k: v for k, v in data.items() if v is not None}, **event}


class CustomerEvent(_Carrier):
    """An event of the session as its customer sees it (the greeting and a question again: no ``session``)."""

    session: str | None = None
    event: CustomerView


class OperatorEvent(_Carrier):
    """An event of a session the operator holds, whole."""

    session: str
    event: Event


class CustomerItem(_Carrier):
    """A stored transcript item as a customer's page shows it."""

    at: float
    event: CustomerView


class OperatorItem(_Carrier):
    """A stored transcript item as the operator console (and the sessions view) shows it."""

    at: float
    event: Event


# --- both pages -------------------------------------------------------------------------------------


class Problem(_Frame):
    """A request refused, or why the connection closes; the text is meant for the person (both pages)."""

    type: Literal["error"] = "error"
    message: str


# --- the customer's page ----------------------------------------------------------------------------


class SessionGiven(_AboutSession):
    """The page's session and the key that resumes it (see ``protocol.session_key``)."""

    type: Literal["session"] = "session"
    key: str


class Suggestions(_Frame):
    """First questions to offer, in a session where nothing was said yet."""

    type: Literal["suggestions"] = "suggestions"
    suggestions: tuple[str, ...]


class TranscriptPage(_Frame):
    """A page of the stored transcript: the last (``history``) or the one before (``earlier``)."""

    type: Literal["history", "earlier"]
    start: int
    items: list[CustomerItem]


QueueStateName = Literal["waiting", "unavailable", "joined", "over"]


class QueueState(_AboutSession):
    """Where the customer's wait for a person stands (see ``waiting``)."""

    type: Literal["queue"] = "queue"
    state: QueueStateName


# --- the operator console ---------------------------------------------------------------------------


class Ready(_Frame):
    """Signed in: the agents a conversation may be handed back to, and their display names."""

    type: Literal["ready"] = "ready"
    agents: list[str]
    labels: dict[str, str]


WaitKind = Literal["escalation", "approval"]


class Listed(_Frame):
    """A session on the waiting list: ``waited`` in whole seconds, ``last`` the customer's last words."""

    session: str
    kind: WaitKind
    prompt: str
    waited: int
    last: str
    away: bool


class WaitingList(_Frame):
    """Who waits for a person, oldest first."""

    type: Literal["waiting"] = "waiting"
    sessions: list[Listed]


class Taken(_AboutSession):
    """The operator has the session: what was said, and the question waiting for them, if any."""

    type: Literal["taken"] = "taken"
    history: list[OperatorItem]
    question: Question | None


class Released(_AboutSession):
    """The operator no longer holds the session, and their console says why."""

    type: Literal["released"] = "released"
    text: str


_PAGE_FRAMES: dict[str, type[_Frame]] = {
    "session": SessionGiven,
    "suggestions": Suggestions,
    "history": TranscriptPage,
    "earlier": TranscriptPage,
    "queue": QueueState,
    "error": Problem,
    "ready": Ready,
    "waiting": WaitingList,
    "taken": Taken,
    "released": Released,
}
"""Every frame but an event's, by ``type``: anything else a page receives is an event."""


def _tag(carrier: type[_Carrier]) -> Callable[[Any], str]:
    """Which model reads ``data``: a frame of its own ``type``, else ``carrier`` (an event)."""

    def tag(data: Any) -> str:
        if isinstance(data, dict):
            frame = _PAGE_FRAMES.get(str(data.get("type")))
            return (frame or carrier).__name__
        return type(data).__name__

    return tag


def _page(carrier: type[_Carrier], *frames: type[_Frame]) -> Any:
    """The union a page reads: ``frames`` and ``carrier``, each tagged with its class name (what
    :func:`_tag` answers), so that no tag is written out, nor can differ from it."""
    members = [Annotated[model, Tag(model.__name__)] for model in (*frames, carrier)]
    return Annotated[reduce(operator.or_, members), Discriminator(_tag(carrier))]


CustomerFrame = _page(CustomerEvent, SessionGiven, Suggestions, TranscriptPage, QueueState, Problem)
"""Every frame a customer's page receives."""

OperatorFrame = _page(OperatorEvent, Ready, WaitingList, Taken, Released, Problem)
"""Every frame the operator console receives."""

Frame = (
    SessionGiven
    | Suggestions
    | TranscriptPage
    | QueueState
    | Problem
    | CustomerEvent
    | Ready
    | WaitingList
    | Taken
    | Released
    | OperatorEvent
)
"""Any frame a page receives (what a hub peer sends)."""

CUSTOMER_FRAMES: TypeAdapter[Any] = TypeAdapter(CustomerFrame)
OPERATOR_FRAMES: TypeAdapter[Any] = TypeAdapter(OperatorFrame)


def frame_json(frame: Frame | OperatorItem | CustomerItem) -> dict[str, Any]:
    """``frame`` as the JSON object a page reads."""
    data: dict[str, Any] = frame.model_dump(mode="json")
    return data


def encode(frame: Frame | OperatorItem | CustomerItem) -> str:
    """``frame`` as the text sent to a page."""
    return json.dumps(frame_json(frame))


def transcript_page(kind: Literal["history", "earlier"], start: int, items: list[str]) -> str:
    """A :class:`TranscriptPage` from items encoded already (``encode``): a page that reloads costs the
    joining of a few strings, not the encoding of the whole transcript again."""
    return f'{{"type": "{kind}", "start": {start}, "items": [{", ".join(items)}]}}'
