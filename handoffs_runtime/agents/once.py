"""Irreversible calls, once a turn: one that succeeded is not run again, one declined not asked again.

A model that does not read tool results may call ``execute_order`` with the same arguments again and
again in one turn; each call would ask the person, and each yes would place one more order. The tool
loop keeps an :class:`OnceATurn` per turn of an agent: the first call of an irreversible tool with
given arguments runs; a later one with the same arguments (in a later round, or beside it in the same
response) is not run, and its result tells the model what happened to the first. A call counts as
declined when the person answered a yes/no question of it with anything but yes (or nobody answered),
or when an approval was refused; after that, no call of that tool is put to the person again in the
turn, whatever its arguments. A call that failed (an error result) may be tried again. Arguments count
as the same whatever their spacing, key order, defaults, HTML entities and runs of whitespace in text.

With a session store that keeps the effect ledger, each first call goes through it too
(:class:`~handoffs_runtime.agents.ledgered.LedgerTurn`): then it is once whatever happens to the process.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from functools import partial

from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult
from autogen_core.tools import Tool

from handoffs_runtime.agents.ledgered import LedgerTurn
from handoffs_runtime.agents.toolcalls import error_result
from handoffs_runtime.messages import Question
from handoffs_runtime.tools.approval import REFUSED, is_approval
from handoffs_runtime.tools.context import Asked, recording_questions


@dataclass(frozen=True, slots=True)
class _Outcome:
    result: FunctionExecutionResult
    declined: bool


class OnceATurn:
    """The irreversible calls of one turn, by tool and arguments (see the module docstring)."""

    __slots__ = ("_calls", "_declined", "_ledger")

    def __init__(self, ledger: LedgerTurn | None = None) -> None:
        self._calls: dict[tuple[str, str], asyncio.Future[_Outcome]] = {}
        self._declined: set[str] = set()
        """The tools the person declined this turn: not put to them again, whatever the arguments."""
        self._ledger = ledger

    async def run(
        self, tool: Tool, call: FunctionCall, runner: Callable[[], Awaitable[FunctionExecutionResult]]
    ) -> FunctionExecutionResult:
        """``runner``'s result for the first such call of ``tool`` in the turn; for a repeat, what became
        of the first."""
        if call.name in self._declined:
            return _declined_before(call)
        arguments = canonical_arguments(tool, call.arguments)
        key = (call.name, arguments)
        first = self._calls.get(key)
        if first is not None:
            return _repeated(call, await asyncio.shield(first))
        future: asyncio.Future[_Outcome] = asyncio.get_running_loop().create_future()
        self._calls[key] = future
        try:
            with recording_questions() as asked:
                if self._ledger is None:
                    result = await runner()
                else:
                    said_no = partial(_declined, asked)
                    result = await self._ledger.run(tool, call, arguments, runner, said_no)
        except BaseException:
            del self._calls[key]
            future.cancel()
            raise
        outcome = _Outcome(result, _declined(asked, result))
        if outcome.declined:
            self._declined.add(call.name)
        if result.is_error and not outcome.declined:
            del self._calls[key]  # it did not happen: a later call may try again
        future.set_result(outcome)
        return result


def canonical_arguments(tool: Tool, arguments: str) -> str:
    """The arguments as one text whatever their spacing, key order, defaults left out, HTML entities and
    runs of whitespace inside text (``"rocket&nbsp; skates"`` is ``"rocket skates"``)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments
    with suppress(TypeError, ValueError):  # invalid: it fails as it is, and the same text is one key
        value = tool.args_type().model_validate(value).model_dump(mode="json")
    return json.dumps(_normalised(value), sort_keys=True, separators=(",", ":"), default=str)


_SPACES = re.compile(r"\s+")


def _normalised(value: object) -> object:
    if isinstance(value, str):
        return _SPACES.sub(" ", html.unescape(value)).strip()
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


def _declined_before(call: FunctionCall) -> FunctionExecutionResult:
    return error_result(
        call,
        f"not asked again: the person declined {call.name} earlier in this turn. Do not call it again "
        "unless they ask for it.",
    )


def _declined(asked: Asked, result: FunctionExecutionResult) -> bool:
    if result.content.startswith(REFUSED):
        return True
    return any(Question.asking(prompt).choices and not is_approval(answer) for prompt, answer in asked)


def _repeated(call: FunctionCall, first: _Outcome) -> FunctionExecutionResult:
    """The result of a repeated call, which did not run: the model is told what became of the first."""
    name = call.name
    if first.declined:
        return error_result(
            call,
            f"not asked again: the person declined {name} with these arguments earlier in this turn. Do "
            "not call it again unless they ask for it.",
        )
    if first.result.is_error:
        return error_result(call, f"not run: the same call of {name} failed: {_quoted(first.result.content)}")
    return FunctionExecutionResult(
        call_id=call.id,
        name=name,
        content=(
            f"Not run again: {name} already ran with these arguments in this turn and succeeded (it "
            f"returned: {_quoted(first.result.content)}). Do not call it again; tell the person it is done."
        ),
    )


_QUOTED_CHARS = 200


def _quoted(text: str) -> str:
    return text if len(text) <= _QUOTED_CHARS else f"{text[:_QUOTED_CHARS]}..."
