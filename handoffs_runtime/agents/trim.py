"""A conversation that outgrew the model's context, trimmed to its most recent messages that fit.

A server refuses a request longer than its model's context (``context_length_exceeded``), and since the
conversation only grows, every later turn of the session would be refused too. With
``TeamPolicy.trim_context`` (the default) the tool loop sends the conversation again without its oldest
messages: the agent's system message always goes, the person's latest message and everything after it
always stay, a tool call never goes without its result (nor a result without its call), and a note in
front tells the model that earlier messages are left out. How much goes is estimated from the server's
error (its context against the tokens requested) when it says both, else half; a few tries at most.

The trimmed conversation is the one the session continues with, so later turns start from it; the note
also tells whether the person has been told already (see :func:`newly_trimmed`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

from handoffs_runtime.errors import ContextOverflowError
from handoffs_runtime.models.failures import is_overflow_error, overflow_ratio

logger = logging.getLogger(__name__)

TRIM_NOTE = "[Earlier messages of this conversation are left out: it grew longer than the model can read.]"
"""The first message of a trimmed conversation, for the model."""

TRIMMED_NOTICE = (
    "This conversation has grown longer than the model can read, so from now on it reads only the most "
    "recent messages."
)
"""What the person is told, once per session, when the conversation is first trimmed."""

MAX_TRIMS = 4
"""Tries of one model call with a shorter conversation before the overflow is reported."""

HEADROOM = 0.8
"""The share of the model's context a trimmed request aims at, leaving room for the next few turns."""

_MESSAGE_OVERHEAD = 16
"""Characters a message costs beyond its text (role, names, ids), in the estimate."""


def is_trimmed(history: Sequence[LLMMessage]) -> bool:
    """Whether ``history`` was trimmed before (it starts with the note)."""
    first = history[0] if history else None
    return isinstance(first, SystemMessage) and first.content == TRIM_NOTE


def newly_trimmed(before: Sequence[LLMMessage], after: Sequence[LLMMessage]) -> bool:
    """Whether a turn that started from ``before`` and continues from ``after`` trimmed the session's
    conversation for the first time: the person has not been told yet."""
    return after is not before and is_trimmed(after) and not is_trimmed(before)


def trimmed(
    history: Sequence[LLMMessage],
    new: Sequence[LLMMessage],
    fixed_chars: int,
    ratio: float | None,
) -> list[LLMMessage] | None:
    """``history`` without its oldest messages, behind the note, so that the request (``fixed_chars``
    of system message and tool schemas, the history, the turn's ``new`` messages) shrinks to
    ``ratio`` of itself (with headroom) or, without a ratio, to half; ``None`` when nothing more can go.

    The person's latest message and what follows it stay whatever they cost: the turn answers them.
    """
    body = list(history[1:] if is_trimmed(history) else history)
    latest = next((i for i in range(len(body) - 1, -1, -1) if _said_by_person(body[i])), len(body))
    total = fixed_chars + _size(body) + _size(new)
    target = total * ratio * HEADROOM if ratio is not None else total / 2
    budget = target - fixed_chars - _size(new)
    cut = latest
    kept = _size(body[latest:])
    for i in range(latest - 1, 0, -1):  # walking back: the longest suffix that fits the budget
        kept += _chars(body[i])
        if kept > budget:
            break
        if not isinstance(body[i], FunctionExecutionResultMessage):  # never a result without its call
            cut = i
    if cut == 0:  # nothing could go
        return None
    return [SystemMessage(content=TRIM_NOTE), *body[cut:]]


def _said_by_person(message: LLMMessage) -> bool:
    return isinstance(message, UserMessage)


def _size(messages: Sequence[LLMMessage]) -> int:
    return sum(_chars(m) for m in messages)


def _chars(message: LLMMessage) -> int:
    """About how many characters ``message`` takes in a request."""
    content = message.content
    if isinstance(content, str):
        size = len(content)
    elif isinstance(message, FunctionExecutionResultMessage):
        size = sum(len(r.content) + len(r.call_id) for r in message.content)
    else:
        size = sum(len(getattr(c, "name", "")) + len(getattr(c, "arguments", "")) for c in content)
    if isinstance(message, AssistantMessage) and message.thought:
        size += len(message.thought)
    return size + _MESSAGE_OVERHEAD


async def answer_trimmed(
    failure: Exception,
    history: list[LLMMessage],
    new: list[LLMMessage],
    fixed: int,
    ask: Callable[[list[LLMMessage]], Awaitable[object]],
    session: str,
    agent: str,
) -> tuple[object, list[LLMMessage]]:
    """After a model call failed with ``failure``: while it is the server saying the conversation is longer
    than the model's context, ``ask`` again with the history trimmed (``fixed``: the characters every
    request carries besides the conversation), up to ``MAX_TRIMS`` times; the answer and the history it
    read. Any other failure, and the last try's, is raised; ``session`` and ``agent`` are for the log."""
    for attempt in range(MAX_TRIMS):
        if not is_overflow_error(failure):
            raise failure
        shorter = trimmed(history, new, fixed, overflow_ratio(failure))
        if shorter is None:
            raise ContextOverflowError(str(failure)) from failure
        logger.warning(
            "the conversation of session %s is longer than %s's model can read; sending its %d most recent "
            "messages",
            session,
            agent,
            len(shorter) - 1,
        )
        history = shorter
        try:
            return await ask(history + new), history
        except Exception as exc:
            if attempt == MAX_TRIMS - 1:
                raise
            failure = exc
    raise failure  # only with MAX_TRIMS == 0: nothing is trimmed
