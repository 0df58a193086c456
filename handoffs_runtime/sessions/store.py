"""Durable sessions: the ``SessionStore`` protocol and the values it stores."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, TypeVar, Unpack, runtime_checkable

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, UserMessage
from pydantic import TypeAdapter

from handoffs_runtime.messages import HandoffEvent, Person
from handoffs_runtime.sessions.leases import Holder

T = TypeVar("T")

EntryKind = Literal["user", "reply", "tool_calls", "tool_results", "handoff", "system", "notice", "question"]
ENTRY_KINDS: frozenset[str] = frozenset(EntryKind.__args__)  # type: ignore[attr-defined]
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


@dataclass(frozen=True, slots=True)
class NewEntry:
    """One transcript entry to append; the store gives it its sequence number and time."""

    agent: str
    kind: EntryKind
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored transcript entry."""

    session_id: str
    seq: int
    agent: str
    kind: EntryKind
    body: dict[str, Any]
    created_at: float

    def message(self) -> LLMMessage | None:
        """The conversation message this entry holds; ``None`` for handoff events, notices, questions."""
        if self.kind in ("handoff", "notice", "question"):
            return None
        return _MESSAGE.validate_python(self.body)

    def event(self) -> HandoffEvent | None:
        return HandoffEvent.model_validate(self.body) if self.kind == "handoff" else None

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


@dataclass(frozen=True, slots=True)
class OperatorWait:
    """A session waiting for a person (an operator), as every web server on the store sees it.

    ``since`` is when it first asked (kept while the same person answers turn after turn); ``taken_by``
    names the operator who took it, ``None`` while it is on the waiting list.
    """

    session_id: str
    prompt: str
    since: float
    taken_by: str | None


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
    who = agent or getattr(message, "source", None) or kind
    return NewEntry(agent=who, kind=kind, body=_MESSAGE.dump_python(message, mode="json"))


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
    """What the runtime needs from a session store. Every method may raise :class:`StoreError`."""

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

    async def secret(self, name: str, *, size: int = 32) -> bytes:
        """The secret called ``name`` that every process on this store shares (the web servers' key
        secret): ``size`` random bytes made by whoever asked first, atomically, and kept."""
        ...

    # --- operator state: which session waits for a person, and who took it ---------------------------

    async def wait_for_operator(self, session_id: str, prompt: str) -> OperatorWait:
        """Record that the session waits for an operator (kept as it is if it waits already)."""
        ...

    async def take_for_operator(self, session_id: str, operator: str) -> bool:
        """Give the waiting session to ``operator``, atomically: ``False`` when another has it or it
        does not wait (of two operators on two servers, exactly one gets it)."""
        ...

    async def release_operator(self, session_id: str, operator: str | None = None) -> None:
        """``operator`` lets go of the session, which goes back on the waiting list; without
        ``operator``, the session waits no more (handed back, answered, ended)."""
        ...

    async def operator_waits(self) -> list[OperatorWait]:
        """Every session waiting for an operator, the longest waiting first."""
        ...

    async def close(self) -> None: ...
