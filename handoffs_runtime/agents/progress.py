"""The progress guard of one turn: a repeated tool call is answered from memory, a stalled turn ends.

A tool asked again the same way gets its first result, and a turn that learns nothing new ends early
instead of at the round limit.

Small models call ``look_up_item`` round after round with the same arguments, each time reading the same
result, until the round limit stops them, and the person was then told to say it again though they had
done nothing wrong. Here, within one turn:

- the same tool with the same *normalised* arguments (JSON keys sorted, HTML entities decoded, runs of
  whitespace made one space, case ignored) runs once; a repeat gets the first result with a note that
  tells the model so (two identical calls of one response share the one run); a failed call makes
  the turn forget the other results it remembered, since a failure may change what the tools see;
- a round whose results are all ones the turn has already seen brings no new information; after
  ``stalled_rounds`` of those in a row the turn ends (``stalled``), and the agent says so honestly or
  hands the conversation to the team's human agent.

Irreversible tools are left to :mod:`.once` (its own rules for a repeat); their results still count.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Awaitable, Callable, Iterable

from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult

REPEAT_NOTE = (
    "[note: {name} was already called with these arguments in this turn; this is its result again, not "
    "a new one. Do not call it again with the same arguments: answer with what you have, or do "
    "something else.]"
)


def normalised_arguments(arguments: str) -> str:
    """``arguments`` in one canonical form, so that two calls that mean the same compare equal."""
    try:
        value = json.loads(html.unescape(arguments)) if arguments.strip() else {}
    except ValueError:
        return _normalised_text(html.unescape(arguments))
    return json.dumps(_normalised(value), sort_keys=True, ensure_ascii=False)


def _normalised(value: object) -> object:
    if isinstance(value, str):
        return _normalised_text(html.unescape(value))
    if isinstance(value, dict):
        return {_normalised_text(str(k)): _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


def _normalised_text(text: str) -> str:
    return " ".join(text.split()).casefold()


Run = Callable[[], Awaitable[FunctionExecutionResult]]


class ProgressGuard:
    """One turn's memory of its tool calls and of the rounds that brought nothing new."""

    __slots__ = ("_runs", "_seen", "_stale", "stalled_rounds")

    def __init__(self, stalled_rounds: int) -> None:
        self.stalled_rounds = stalled_rounds
        self._runs: dict[tuple[str, str], asyncio.Future[FunctionExecutionResult]] = {}
        self._seen: set[tuple[str, str]] = set()
        self._stale = 0

    async def run(self, call: FunctionCall, run: Run, *, ran: bool = True) -> FunctionExecutionResult:
        """``call``'s result: from ``run`` the first time, from memory (with a note) after. ``ran=False``:
        ``run`` only words a refusal (a proposal checked before anything ran), which changes nothing the
        tools see, so a failure of it forgets nothing."""
        key = (call.name, normalised_arguments(call.arguments))
        first = self._runs.get(key)
        if first is None:
            future: asyncio.Future[FunctionExecutionResult] = asyncio.get_running_loop().create_future()
            self._runs[key] = future
            try:
                result = await run()
            except BaseException as exc:
                del self._runs[key]  # not run: a later call may try again
                future.set_exception(exc)
                future.exception()  # retrieved here: nobody else may be waiting
                raise
            future.set_result(result)
            if result.is_error and ran:
                self._forget(key)
            return result
        earlier = await asyncio.shield(first)
        note = REPEAT_NOTE.format(name=call.name)
        return FunctionExecutionResult(
            call_id=call.id, name=call.name, content=f"{earlier.content}\n\n{note}", is_error=earlier.is_error
        )

    def _forget(self, failed: tuple[str, str]) -> None:
        """A failure may change what every tool sees (its server restarted, a session expired): the
        other results remembered from before it are no longer taken as current. The failed call itself
        stays remembered: asked again the same way, it gets its error again, not a loop of tries."""
        self._runs = {key: run for key, run in self._runs.items() if key == failed or not run.done()}

    def stalled(self, results: Iterable[FunctionExecutionResult]) -> bool:
        """Whether, after this round's ``results``, the turn has gone ``stalled_rounds`` rounds without
        a result it had not seen before."""
        fresh = False
        for result in results:
            said = result.content.removesuffix("\n\n" + REPEAT_NOTE.format(name=result.name))
            key = (result.name, said)
            if key not in self._seen:
                self._seen.add(key)
                fresh = True
        self._stale = 0 if fresh else self._stale + 1
        return self._stale >= self.stalled_rounds
