"""Irreversible calls across processes and restarts: each one goes through the store's effect ledger.

:class:`~handoffs_runtime.agents.once.OnceATurn` keeps an irreversible call to once a turn inside one
process; a :class:`LedgerTurn` makes it once whatever happens to the process. Before the tool runs, its
intent is recorded under an :class:`~handoffs_runtime.sessions.effects.EffectKey`; the tool runs only
when this step recorded it; after it, the outcome. A step that finds the key recorded already:

- **done** (a redelivered, resumed or retried step of the turn, or another process that raced it): the
  recorded result is the answer; the tool does not run;
- **declined**: not asked again;
- **pending**, no outcome (a process died inside the tool, or another runs it right now): it does not
  run. The tool's ``reconcile`` is asked; ``True`` settles it as done; anything else leaves it unknown, and
  the person is told plainly that the action may or may not have happened.

A person who asks, in a later turn, for the same action (tool and arguments) as one whose outcome is
still unknown is told it may already have happened: it runs again only once ``reconcile`` says it did not
happen, or when the person confirms a second one explicitly (then it runs under a key of its own).

Nothing here runs unless the tool is irreversible and the session's store keeps the ledger.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult
from autogen_core.tools import Tool

from handoffs_runtime.agents.toolcalls import error_result
from handoffs_runtime.confirmation import again
from handoffs_runtime.handoffs.handoff import call_maybe_async
from handoffs_runtime.messages import Notice
from handoffs_runtime.sessions.effects import Effect, EffectKey, EffectStatus, LedgerStore, current_turn
from handoffs_runtime.tools.approval import is_approval
from handoffs_runtime.tools.context import ToolContext, ask_person, checking_turn, running_effect
from handoffs_runtime.tools.effects import reconciler

logger = logging.getLogger("handoffs_runtime")

Runner = Callable[[], Awaitable[FunctionExecutionResult]]
Declined = Callable[[FunctionExecutionResult], bool]

UNKNOWN_NOTICE = (
    "⚠ {action} was started earlier but the session stopped while it ran: it may or may not have "
    "happened. It is not repeated on its own."
)


class LedgerTurn:
    """The ledger's side of one agent's turn in one session (see the module docstring)."""

    __slots__ = ("_context", "_position", "_store", "_turn")

    def __init__(self, store: LedgerStore, context: ToolContext) -> None:
        self._store = store
        self._context = context
        self._turn: int | None = None
        self._position = 0

    async def run(
        self, tool: Tool, call: FunctionCall, arguments: str, runner: Runner, declined: Declined
    ) -> FunctionExecutionResult:
        """``runner``'s result, when the ledger lets this call run; else what the ledger holds."""
        session = self._context.session_id
        if self._turn is None:
            self._turn = await current_turn(self._store, session)
        key = EffectKey(session, self._turn, call.name, arguments)
        earlier = await self._unsettled_before(key)
        if earlier is not None:
            answer = await self._settle_earlier(tool, call, earlier)
            if answer is not None:
                return answer
        position = self._position
        self._position += 1
        found = await self._store.record_intent(key, position=position)
        if found is not None:
            return await self._recorded(tool, call, found)
        with running_effect(key.id), checking_turn(partial(self._written_since, key.turn)):
            result = await runner()  # raising or cancelled: it stays pending, its outcome unknown
        status: EffectStatus = "declined" if declined(result) else "failed" if result.is_error else "done"
        await self._store.record_outcome(key, status, result.content)
        return result

    async def _written_since(self, turn: int) -> str | None:
        """Why ``turn`` is over (the person has written since), for an approval that arrives late."""
        later = await self._store.entries(self._context.session_id, after=turn)
        return (
            "the person had written again, so its turn was over"
            if any(e.kind == "user" for e in later)
            else None
        )

    async def _unsettled_before(self, key: EffectKey) -> Effect | None:
        """The latest effect of the same action from an earlier turn with no outcome, if any."""
        unsettled = [
            e
            for e in await self._store.effects(key.session_id)
            if e.key.same_action(key) and e.key.turn != key.turn and e.status == "pending"
        ]
        return unsettled[-1] if unsettled else None

    async def _settle_earlier(
        self, tool: Tool, call: FunctionCall, earlier: Effect
    ) -> FunctionExecutionResult | None:
        """Settle an earlier one with no outcome before running the same action: ``None`` to go on (this
        turn's call has a key of its own), else the answer to the call."""
        action = earlier.key.action
        verdict = await self._reconcile(tool, earlier)
        if verdict is True:
            await self._store.record_outcome(earlier.key, "done", "settled by reconcile: it happened")
            return _done_earlier(call, action)
        if verdict is False:
            await self._store.record_outcome(
                earlier.key, "not_done", "settled by reconcile: it did not happen"
            )
            return None
        answer = await ask_person(again(earlier.key.described))
        if not is_approval(answer):
            return error_result(
                call,
                f"not run: the same request {action} was made before the session stopped and may already "
                "have happened; the person did not confirm a second one. Tell them it may or may not have "
                "happened, and that it was not repeated.",
            )
        await self._store.record_outcome(
            earlier.key, "unknown", "may or may not have happened; the person asked for another"
        )
        return None

    async def _recorded(self, tool: Tool, call: FunctionCall, found: Effect) -> FunctionExecutionResult:
        """The answer to a call whose key the ledger holds already: the tool does not run."""
        name, action = call.name, found.key.action
        if found.status == "done":
            return FunctionExecutionResult(
                call_id=call.id,
                name=name,
                content=(
                    f"Not run again: {name} already ran with these arguments for this request and succeeded "
                    f"(it returned: {found.result}). Do not call it again; tell the person it is done."
                ),
            )
        if found.status == "declined":
            return error_result(
                call, f"not asked again: the person declined {name} with these arguments for this request."
            )
        if found.status == "pending" and await self._reconcile(tool, found) is True:
            await self._store.record_outcome(found.key, "done", "settled by reconcile: it happened")
            return _done_earlier(call, action)
        await self._tell(UNKNOWN_NOTICE.format(action=found.key.described.capitalize()))
        return error_result(
            call,
            f"not run: {action} was started before and its outcome is unknown: it may or may not have "
            "happened, and it is not repeated on its own. Tell the person exactly that.",
        )

    async def _reconcile(self, tool: Tool, effect: Effect) -> bool | None:
        """The tool's ``reconcile`` verdict on ``effect`` (``None``: no function, or it failed)."""
        reconcile = reconciler(tool)
        if reconcile is None:
            return None
        try:
            arguments: Any = json.loads(effect.key.arguments)
            verdict = await call_maybe_async(reconcile, effect.key.id, arguments)
        except Exception:
            logger.exception("reconcile of %s failed; its outcome stays unknown", effect.key.tool)
            return None
        return verdict if isinstance(verdict, bool) else None

    async def _tell(self, text: str) -> None:
        channel = self._context.channel
        if channel is not None:
            await channel.show(self._context.session_id, Notice(text=text))


def _done_earlier(call: FunctionCall, action: str) -> FunctionExecutionResult:
    return FunctionExecutionResult(
        call_id=call.id,
        name=call.name,
        content=(
            f"Not run again: {action} was requested before the session stopped, and a look-up shows it went "
            "through. Do not call it again; tell the person it was done then."
        ),
    )
