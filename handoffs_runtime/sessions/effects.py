"""The effect ledger: an irreversible action's intent, recorded before it runs, and its outcome after.

An order placed twice is the worst thing the runtime can do. So before an irreversible tool runs, its
intent goes into the session store under an :class:`EffectKey` (the session, the turn, the tool and its
canonical arguments); recording it is atomic with the check, so of two processes that reach the same
call only one runs it. After it, the outcome. A step that reaches the same key again (a redelivered,
resumed or retried turn) gets what the ledger holds instead of running the tool; an intent with no
outcome (the process died inside the tool) is never run again on a guess.

The ledger knows nothing of agents or engines: any engine that can name the turn uses it as is.

Example::

    key = EffectKey("s1", turn=7, tool="execute_order", arguments='{"item":"anvil"}')
    if await store.record_intent(key) is None:  # ours to run
        await store.record_outcome(key, "done", "Success")
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from handoffs_runtime.confirmation import action
from handoffs_runtime.sessions.store import SessionStore

EffectStatus = Literal["pending", "done", "failed", "declined", "not_done", "unknown"]
"""``pending``: the intent, no outcome yet (running now, or its process died in it); ``done`` it
happened; ``failed`` the tool said it did not (it may run again); ``declined`` the person said no;
``not_done`` settled by the tool's reconcile as not having happened; ``unknown`` never settled: the
person asked for a second one instead."""

SETTLED_AGAIN: frozenset[EffectStatus] = frozenset({"failed", "not_done"})
"""Outcomes after which the same key may be claimed and run again: it did not happen."""

RESULT_CHARS = 2000
"""The most of a tool's result the ledger keeps (what a repeated step is told)."""


@dataclass(frozen=True, slots=True)
class EffectKey:
    """Which effect: the session, the turn (the sequence number of the person's message that started it,
    which a redelivered or resumed step of that turn shares), the tool and its canonical arguments.

    The call's position in the turn is recorded beside the key, not in it: a
    retried turn whose model orders its calls differently must still find its effects.
    """

    session_id: str
    turn: int
    tool: str
    arguments: str

    @property
    def id(self) -> str:
        """The key as one short text: the row's identity, and the idempotency key a tool forwards."""
        text = json.dumps([self.session_id, self.turn, self.tool, self.arguments])
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    @property
    def action(self) -> str:
        """``execute_order({"price":10,"product":"anvil"})``: what the person and the log read."""
        return f"{self.tool}({self.arguments})"

    @property
    def described(self) -> str:
        """``execute order with price 10 and product “anvil”``: the action in words, each argument by its
        name, for the person, who reads neither tool names nor JSON (worded as every confirmation is)."""
        try:
            arguments = json.loads(self.arguments) if self.arguments else {}
        except ValueError:
            arguments = {}
        if not isinstance(arguments, dict):
            arguments = {}
        return action(self.tool, [(str(k), v) for k, v in arguments.items()]) or "the action"

    def same_action(self, other: EffectKey) -> bool:
        """Whether ``other`` is the same tool with the same arguments in the same session."""
        return (self.session_id, self.tool, self.arguments) == (other.session_id, other.tool, other.arguments)


@dataclass(frozen=True, slots=True)
class Effect:
    """One row of the ledger."""

    key: EffectKey
    position: int
    """Where the call stood among the turn's irreversible calls (0 the first)."""
    status: EffectStatus
    result: str
    """What the tool returned (cut to :data:`RESULT_CHARS`), or how the outcome was settled."""
    created_at: float
    settled_at: float | None

    def describe(self) -> str:
        """One line for ``handoffs sessions show``: the key, what ran, and what became of it."""
        if self.status == "pending":
            text = "outcome unknown: no outcome was recorded (running, or stopped inside the tool)"
        else:
            text = f"{self.status}: {self.result}" if self.result else self.status
        return f"effect {self.key.id} turn {self.key.turn} {self.key.action} · {text}"

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key.id,
            "turn": self.key.turn,
            "position": self.position,
            "tool": self.key.tool,
            "arguments": self.key.arguments,
            "status": self.status,
            "result": self.result,
            "created_at": self.created_at,
            "settled_at": self.settled_at,
        }


EFFECT_COLUMNS = "session_id, turn, position, tool, arguments, status, result, created_at, settled_at"


class EffectStatements(NamedTuple):
    """The ledger's statements, written once for both backends (the SQL differs only in the driver's
    placeholder and in where the time comes from)."""

    intent: str
    """Record an intent: inserted, or claimed again over an outcome of :data:`SETTLED_AGAIN`; one row
    changed means this call holds it. Parameters: id, session, turn, position, tool, arguments, claim
    (and the time, where the backend passes it)."""
    outcome: str
    """Parameters: status, result (and the time, where passed), id."""
    by_key: str
    by_session: str
    forget: str


def effect_statements(p: str, now: str) -> EffectStatements:
    """The statements with ``p`` as the placeholder and ``now`` as the time (``p`` when passed)."""
    again = ", ".join(f"'{status}'" for status in sorted(SETTLED_AGAIN))
    return EffectStatements(
        intent=(
            "INSERT INTO effects (id, session_id, turn, position, tool, arguments, status, claim, "
            f"created_at) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, 'pending', {p}, {now}) "
            "ON CONFLICT (id) DO UPDATE SET status = 'pending', result = '', claim = excluded.claim, "
            f"position = excluded.position, settled_at = NULL WHERE effects.status IN ({again})"
        ),
        outcome=f"UPDATE effects SET status = {p}, result = {p}, settled_at = {now} WHERE id = {p}",
        by_key=f"SELECT {EFFECT_COLUMNS}, claim FROM effects WHERE id = {p}",
        by_session=(
            f"SELECT {EFFECT_COLUMNS}, claim FROM effects WHERE session_id = {p} "
            "ORDER BY created_at, turn, position"
        ),
        forget=f"DELETE FROM effects WHERE session_id = {p}",
    )


def effect_from_row(row: Sequence[Any]) -> Effect:
    """The effect of a row of :data:`EFFECT_COLUMNS` (what follows them, such as ``claim``, is not read)."""
    session, turn, position, tool, arguments, status, result, created, settled = row[:9]
    key = EffectKey(session, int(turn), tool, arguments)
    return Effect(key, int(position), status, result, float(created), settled)


@runtime_checkable
class EffectLedger(Protocol):
    """Where irreversible effects are recorded (both session stores keep one). Every method may raise
    :class:`~handoffs_runtime.errors.StoreError`."""

    async def record_intent(self, key: EffectKey, *, position: int = 0) -> Effect | None:
        """Record that ``key`` is about to run: ``None`` when it is this caller's to run (new, or its last
        try did not happen: :data:`SETTLED_AGAIN`); otherwise the effect as recorded, which must not run.

        Atomic with the check: of several callers (processes) with one key, one gets ``None``.
        """
        ...

    async def record_outcome(self, key: EffectKey, status: EffectStatus, result: str = "") -> None:
        """Settle ``key``: what became of it, and what the tool returned."""
        ...

    async def lookup(self, key: EffectKey) -> Effect | None:
        """The effect recorded under ``key``, if any."""
        ...

    async def effects(self, session_id: str) -> list[Effect]:
        """Every effect of the session, in the order they were recorded."""
        ...


class LedgerStore(SessionStore, EffectLedger, Protocol):
    """A session store that keeps the effect ledger itself (both session stores do): one object to pass
    where the conversation and the ledger are both read."""


def ledger_of(store: SessionStore | None) -> LedgerStore | None:
    """``store`` as an effect ledger, when it keeps one."""
    return store if isinstance(store, EffectLedger) else None


async def current_turn(store: SessionStore, session_id: str) -> int:
    """The turn in flight: the sequence number of the person's last message not yet answered (a redelivered
    step of the turn finds the same one), else the session's last sequence number."""
    state = await store.get_session(session_id)
    pending = await store.entries(session_id, after=state.context_seq)
    users = [e.seq for e in pending if e.kind == "user"]
    return users[-1] if users else state.last_seq
