"""``PersonChannel``: the team's channel as a process's agents and its ``UserAgent`` share it.

Two things no single agent can see to:

- **Questions come after the handoff line that leads to them.** An agent that hands the conversation over
  publishes the handoff event (to the ``UserAgent``, which stores the line before it shows it) and the
  task for its target side by side; the target may ask the person something (the operator's prompt, a
  confirmation) before the line is shown. The ``UserAgent`` marks each line it is storing
  (:meth:`PersonChannel.showing_line`), and a question of that session waits until it is shown (at most
  ``LINE_WAIT`` seconds, should the line never come).
- **A question asked on record is kept**: a tool's question and its answer (``ask_person``, an approval:
  "Confirm order? y/n › y") go into the session's transcript, since that answer authorised what the tool
  did. An answer that cannot be stored counts as no answer, so nothing runs on an answer the store lost.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from handoffs_runtime.channels.base import Channel, operator_apart
from handoffs_runtime.errors import StoreError
from handoffs_runtime.messages import Event, Notice, Person
from handoffs_runtime.sessions.recording import record_question
from handoffs_runtime.sessions.store import SessionStore

LINE_WAIT = 5.0
"""Seconds a question waits for the handoff lines being stored before it is asked anyway."""


@dataclass
class _Lines:
    """The handoff lines of one session being stored and not shown yet."""

    count: int = 0
    shown: asyncio.Event = field(default_factory=asyncio.Event)


class _ShowingLine:
    """``PersonChannel.showing_line``: a handoff line of one session being stored and shown (a class, not a
    generator: the ``UserAgent`` enters one for every handoff)."""

    __slots__ = ("_all", "_lines", "_session_id")

    def __init__(self, lines: dict[str, _Lines], session_id: str) -> None:
        self._all = lines
        self._session_id = session_id

    def __enter__(self) -> None:
        lines = self._lines = self._all.setdefault(self._session_id, _Lines())
        lines.count += 1

    def __exit__(self, *exc: object) -> None:
        lines = self._lines
        lines.count -= 1
        if lines.count == 0:
            lines.shown.set()
            del self._all[self._session_id]


class PersonChannel:
    """Wraps the team's channel for one process (see the module docstring); ``store`` keeps questions."""

    def __init__(self, inner: Channel, store: SessionStore | None = None) -> None:
        self.inner = inner
        self._store = store
        self._lines: dict[str, _Lines] = {}

    @property
    def shows_progress(self) -> bool:
        return self.inner.shows_progress

    @property
    def store(self) -> SessionStore | None:
        """The session store the process keeps its sessions in (the agents' effect ledger, too)."""
        return self._store

    @property
    def operator_apart(self) -> bool:
        """As the team's channel: whether a human agent holds a live conversation on it."""
        return operator_apart(self.inner)

    def showing_line(self, session_id: str) -> _ShowingLine:
        """Around storing and showing a handoff line: the session's questions wait for it. Enter it
        before the first ``await``, so that no question of the same moment slips in front."""
        return _ShowingLine(self._lines, session_id)

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        lines = self._lines.get(session_id)
        if lines is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lines.shown.wait(), LINE_WAIT)
        return await self.inner.ask(session_id, prompt, person=person)

    async def ask_on_record(
        self, session_id: str, prompt: str, *, person: Person = "customer", asker: str = ""
    ) -> str | None:
        """Ask, and keep the question and its answer in the session's transcript."""
        answer = await self.ask(session_id, prompt, person=person)
        if self._store is None:
            return answer
        try:
            await record_question(self._store, session_id, prompt, answer, person=person, asker=asker)
        except StoreError as exc:
            notice = Notice(text=f"⚠ the answer could not be saved, so it counts as no answer: {exc}")
            await self.inner.show(session_id, notice)
            return None
        return answer

    def show(self, session_id: str, event: Event) -> Coroutine[Any, Any, None]:
        """The team's channel's ``show``, without a coroutine around it (a session shows a few events)."""
        return self.inner.show(session_id, event)
