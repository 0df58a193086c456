"""What a store knows, without asking the database, of the sessions it holds the lease of.

While a store holds a session's lease, no other process writes it, so everything the session's next reply
needs (the context the last reply was stored with, the person's messages stored since, the last sequence
number) is what this store itself wrote. Keeping it spares a turn two reads and the decoding of the whole
context, and lets a reply store only the messages its context gained (see ``SQLStore.append``).

The knowledge is dropped whenever it could be wrong: a write that failed, a take-over, the end of the
session. A write made from it is a compare-and-set on the last sequence number, so a writer this store did
not see (another store object on the same lease) turns into a conflict and a fresh read, never a lost
entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from autogen_core.models import LLMMessage

from handoffs_runtime.sessions.store import NewEntry, SessionState


@dataclass(slots=True)
class Held:
    """One held session: ``sent`` is ``context`` and the person's messages stored after it."""

    context: list[LLMMessage]
    sent: list[LLMMessage]
    last_seq: int


class HeldSessions:
    """The sessions a store holds and what it wrote to them; every method is cheap and never fails."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}

    def get(self, session_id: str) -> Held | None:
        return self._held.get(session_id)

    def opened(self, state: SessionState) -> None:
        """The session was opened with ``state``; its unanswered messages, if any, are not known here."""
        if state.last_seq == state.context_seq:
            self._held[state.session_id] = Held(state.context, list(state.context), state.last_seq)
        else:
            self._held.pop(state.session_id, None)

    def appended(
        self, session_id: str, entries: Sequence[NewEntry], context: Sequence[LLMMessage] | None, last: int
    ) -> None:
        """This store appended ``entries`` (and set ``context``, if given); the session's last is ``last``."""
        held = self._held.get(session_id)
        if context is not None:
            kept = list(context)
            self._held[session_id] = Held(kept, list(kept), last)
            return
        if held is None:
            return
        for entry in entries:
            if entry.kind == "user":
                if entry.message is None:  # a message we would have to decode: read it when needed
                    self._held.pop(session_id, None)
                    return
                held.sent.append(entry.message)
        held.last_seq = last

    def forget(self, session_id: str) -> None:
        self._held.pop(session_id, None)


def extends(old: Sequence[LLMMessage], new: Sequence[LLMMessage]) -> bool:
    """Whether ``new`` is ``old`` followed by more messages (compared by identity first: the runtime
    hands the same message objects on, so equality is rarely needed)."""
    if len(new) < len(old):
        return False
    return all(a is b or a == b for a, b in zip(old, new, strict=False))


def held_by(store: object, session_id: str) -> Held | None:
    """What ``store`` knows of ``session_id`` without reading it, if it is a store that keeps track."""
    held = getattr(store, "held", None)
    return held.get(session_id) if isinstance(held, HeldSessions) else None
