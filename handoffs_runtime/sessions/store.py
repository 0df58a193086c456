"""Durable sessions: the ``SessionStore`` protocol and the values it stores.

The store of a session's conversation only: entries, context, the active agent and the session's one
writer. The web's operator desk (:mod:`~handoffs_runtime.sessions.desk`) and the secrets its servers
share (:mod:`~handoffs_runtime.sessions.secrets`) are protocols of their own, so each consumer asks for
the narrowest one; both backends implement all three.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, Unpack, runtime_checkable

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, UserMessage
from pydantic import TypeAdapter

from handoffs_runtime.messages import HandoffEvent, Person
from handoffs_runtime.sessions.entries import (
    MESSAGE_BODIES,
    EntryBody,
    EntryKind,
    HandoffBody,
    read_body,
)
from handoffs_runtime.sessions.leases import Holder

SessionStatus = Literal["open", "ended"]

_MESSAGES: TypeAdapter[list[LLMMessage]] = TypeAdapter(list[LLMMessage])
_MESSAGE: TypeAdapter[LLMMessage] = TypeAdapter(LLMMessage)

MEMORY = ":memory:"

_log = logging.getLogger(__name__)


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/handoffs-runtime/sessions.sqlite3`` (``~/.local/share`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "handoffs-runtime" / "sessions.sqlite3"


# --- values --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewEntry:
    """One transcript entry to append; the store gives it its sequence number and time."""

    agent: str
    kind: EntryKind
    body: dict[str, Any]
    message: LLMMessage | None = field(default=None, compare=False, repr=False)
    """The conversation message ``body`` encodes, when it was made from one: a store that holds the
    session keeps the person's messages without decoding them again."""

    def __init__(
        self, agent: str, kind: EntryKind, body: dict[str, Any], message: LLMMessage | None = None
    ) -> None:
        """What the dataclass's ``__init__`` does, the fields written at once (a frozen one sets each
        with ``object.__setattr__``): several are made for every turn."""
        self.__dict__.update(agent=agent, kind=kind, body=body, message=message)


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored transcript entry, its body checked against its kind when it is made (read).

    :class:`~handoffs_runtime.errors.CorruptEntryError` when the body is not what the kind says.
    """

    session_id: str
    seq: int
    agent: str
    kind: EntryKind
    body: dict[str, Any]
    """The body as stored: what a JSON export shows, exactly."""
    created_at: float
    value: EntryBody = field(init=False, repr=False, compare=False)
    """The body as its kind's type (see :mod:`~handoffs_runtime.sessions.entries`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", read_body(self.session_id, self.seq, self.kind, self.body))

    def message(self) -> LLMMessage | None:
        """The conversation message this entry holds; ``None`` for handoff events, notices, questions."""
        return self.value.message if isinstance(self.value, MESSAGE_BODIES) else None

    def event(self) -> HandoffEvent | None:
        return self.value.event if isinstance(self.value, HandoffBody) else None

    @property
    def text(self) -> str:
        """The entry's words, when it has any (the person's message, a reply, a notice)."""
        content = self.body.get("content", self.body.get("text", ""))
        return content if isinstance(content, str) else ""


class SessionUpdate(TypedDict, total=False):
    """What an append may change besides adding entries (a key left out, or ``None``: nothing)."""

    active_agent: str | None
    """The agent that answers the session's next message."""
    context: Sequence[LLMMessage] | None
    """The conversation the next agent reads; it accounts for everything appended so far."""
    expected_seq: int | None
    """Write only if the session's last sequence number is still this (compare-and-set)."""


@dataclass(frozen=True, slots=True)
class SessionState:
    """Where a session stands: who answers next and with what context.

    ``context_seq`` is the last transcript entry that ``context`` accounts for; entries after it (the
    person's message of a turn in flight, handoff events) are not in the context yet.
    """

    session_id: str
    active_agent: str
    context: list[LLMMessage]
    context_seq: int
    last_seq: int
    status: SessionStatus
    team: str
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A line of ``handoffs sessions list``."""

    session_id: str
    active_agent: str
    status: SessionStatus
    messages: int
    team: str
    created_at: float
    updated_at: float


def entry_for_message(message: LLMMessage, *, agent: str | None = None) -> NewEntry:
    """The transcript entry for a conversation message; ``agent`` defaults to the message's source."""
    if isinstance(message, UserMessage):
        kind: EntryKind = "user"
    elif isinstance(message, AssistantMessage):
        kind = "reply" if isinstance(message.content, str) else "tool_calls"
    elif isinstance(message, FunctionExecutionResultMessage):
        kind = "tool_results"
    else:
        kind = "system"
    # Only these have a source: asking a pydantic model for an attribute it lacks costs an exception.
    source = message.source if isinstance(message, (UserMessage, AssistantMessage)) else None
    who = agent or source or kind
    return NewEntry(agent=who, kind=kind, body=_MESSAGE.dump_python(message, mode="json"), message=message)


def entry_for_event(event: HandoffEvent) -> NewEntry:
    return NewEntry(agent=event.source, kind="handoff", body=event.model_dump(mode="json"))


def notice_entry(text: str, *, agent: str = "runtime") -> NewEntry:
    return NewEntry(agent=agent, kind="notice", body={"text": text})


def question_entry(prompt: str, person: Person, answer: str | None, *, asker: str = "") -> NewEntry:
    """A question put to ``person`` outside their turn (a tool's confirmation, an approval: ``ask_person``),
    with the answer (``None``: the person had left): the conversation's words, though no model reads them
    as a message. The entry's agent is the one that asked (``asker``), when known."""
    body = {"prompt": prompt, "person": person, "answer": answer}
    return NewEntry(agent=asker or person, kind="question", body=body)


# --- the interface -------------------------------------------------------------------------------------


@runtime_checkable
class SessionStore(Protocol):
    """What the runtime needs from a session store: the conversation, the active agent, one writer.

    Every method may raise :class:`StoreError`.
    """

    async def claim(self, session_id: str, *, take_over: bool = False) -> Holder | None:
        """Make this store the session's one writer; returns the live holder it took over, if any.

        :class:`SessionBusyError` when another live process holds it and ``take_over`` is false. A holder
        that crashed frees the session by itself (at once on the same host, else when its lease expires).
        """
        ...

    async def open_session(self, session_id: str, *, agent: str, team: str = "") -> tuple[SessionState, bool]:
        """Claim the session (without taking it over) and return its state, created with ``agent`` active
        when new (then the flag is ``True``). An ended session is opened again.
        """
        ...

    async def get_session(self, session_id: str) -> SessionState:
        """The session's state; :class:`UnknownSessionError` when there is none."""
        ...

    async def append(
        self, session_id: str, entries: Sequence[NewEntry], **update: Unpack[SessionUpdate]
    ) -> int:
        """Append ``entries`` and make ``update`` (see :class:`SessionUpdate`), in one transaction.

        Returns the last sequence number. :class:`StoreConflictError` when ``expected_seq`` is given and
        no longer the session's last sequence number (nothing is written then);
        :class:`SessionTakenOverError` when this store does not hold the session.
        """
        ...

    async def end_session(self, session_id: str) -> None:
        """Mark the session ended and let go of its lease."""
        ...

    async def entries(self, session_id: str, *, after: int = 0) -> list[StoredEntry]:
        """The transcript after sequence number ``after``, in order."""
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        ...

    async def delete_session(self, session_id: str) -> None: ...

    async def close(self) -> None: ...
