"""Reading a model's response: text, or tool calls sorted into regular, handoff and unknown ones.

:func:`read_reply` accepts anything at all (content that is a number, parts that are not calls, a call
whose id, name or arguments are null or of the wrong type, a lone surrogate or a NUL) and returns text or
well-formed calls of valid Unicode (:func:`~handoffs_runtime.text.well_formed`), so nothing the model
sends can break the code after it: the store, a terminal, a web page. :func:`sort_calls` then says
what each call is, by its name: a regular tool the loop runs, a handoff the agent decides on, or a name
nobody offered.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from autogen_core import FunctionCall
from autogen_core.tools import Tool, ToolSchema

from handoffs_runtime.text import well_formed

logger = logging.getLogger("handoffs_runtime")


@dataclass(slots=True)
class ToolCalls:
    """A response's well-formed tool calls, with the text the model wrote next to them, if any.

    That text (``CreateResult.thought``, or text parts beside the calls) is often meant for the person
    ("Let me pass you to sales"); it travels in the conversation as the call message's ``thought``. Not
    changed once built, but not frozen: one is built for every response with calls (see :mod:`.turn`).
    """

    calls: list[FunctionCall]
    thought: str | None = None


Reply = str | ToolCalls
"""A response as the agents use it: text (stripped, possibly empty) or well-formed tool calls."""

MAX_NAME_CHARS = 256
"""Tool names and call ids longer than this are cut (OpenAI allows 64 characters for a name)."""

_call_ids = itertools.count(1)


def read_reply(result: object, max_chars: int, offered: Sequence[ToolSchema] = ()) -> Reply:
    """The text or tool calls of ``result``, whatever it holds; text longer than ``max_chars`` is cut, text
    that is just the name of one of the ``offered`` tools is a call to it (see :func:`named_call`)."""
    content = getattr(result, "content", None)  # untrusted: a client may hand over anything at all
    if isinstance(content, str):
        reply: Reply = cut_text(well_formed(content).strip(), max_chars, "reply was")
    elif isinstance(content, list | tuple):
        reply = _read_parts(content, getattr(result, "thought", None), max_chars)
    elif isinstance(content, int | float) and not isinstance(content, bool):
        reply = str(content)
    else:
        if content is not None:
            logger.warning("model content of type %s is neither text nor tool calls", type(content).__name__)
        return ""
    if isinstance(reply, str) and offered and (reply.endswith(":") or reply.startswith("functions.")):
        return named_call(reply, offered)  # only such a text can be a name (see _NAMED_CALL)
    return reply


_NAMED_CALL = re.compile(r"(?:functions\.([A-Za-z0-9_\-]+):?|([A-Za-z0-9_\-]+):)")


def named_call(reply: Reply, offered: Sequence[ToolSchema]) -> Reply:
    """``reply``, or the call it names when its text is exactly an offered tool's name (``functions.NAME:``
    or ``NAME:``): some servers put the call the model chose into the text. The call gets no arguments;
    a tool that needs some fails on them, and the model reads why. The person never reads the name."""
    if not isinstance(reply, str) or len(reply) > MAX_NAME_CHARS + 12:
        return reply
    found = _NAMED_CALL.fullmatch(reply)
    if found is None:
        return reply
    name = found.group(1) or found.group(2)
    if not any(schema["name"] == name for schema in offered):
        return reply
    logger.warning("the model's reply is the name of the tool %s: read as a call to it", name)
    return ToolCalls([FunctionCall(id=f"call_{next(_call_ids)}", name=name, arguments="{}")])


class HeldWhileAName:
    """A streamed reply's deltas, passed on to ``show`` once they cannot be an offered tool's name any
    more: while the reply so far is the start of ``functions.NAME:`` or ``NAME:`` for an offered NAME it
    is held, so a reply that turns out to be exactly a name (read as a call by :func:`named_call`) is
    never shown. Any other reply passes at once; one held to its end is shown whole, as a reply."""

    __slots__ = ("_forms", "_held", "_passing", "_show")

    def __init__(self, show: Callable[[str], Awaitable[None]], offered: Sequence[ToolSchema]) -> None:
        self._show = show
        self._forms = [f"{prefix}{t['name']}:" for t in offered for prefix in ("functions.", "")]
        self._held = ""
        self._passing = not self._forms

    async def __call__(self, text: str) -> None:
        if self._passing:
            await self._show(text)
            return
        self._held += text
        start = self._held.lstrip()
        if any(form.startswith(start) or start == form[:-1] for form in self._forms):
            return
        self._passing = True
        held, self._held = self._held, ""
        await self._show(held)


def _read_parts(parts: Sequence[object], thought: object, max_chars: int) -> Reply:
    calls: list[FunctionCall] = []
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(well_formed(part))
            continue
        call = _read_call(part)
        if call is None:
            logger.warning("ignoring a model content part of type %s", type(part).__name__)
        else:
            calls.append(call)
    if not calls:
        return cut_text("".join(texts).strip(), max_chars, "reply was")
    if not texts and not thought:
        return ToolCalls(calls)
    said = "\n".join(t for t in (well_formed(thought) if isinstance(thought, str) else "", *texts) if t)
    said = said.strip()
    return ToolCalls(calls, cut_text(said, max_chars, "reply was") or None)


def _read_call(part: object) -> FunctionCall | None:
    """A well-formed ``FunctionCall`` from anything call-like, or ``None`` when ``part`` is not one.

    Arguments are never cut (a cut would only make them invalid JSON); the tools check them, and what a
    tool returns is capped.
    """
    call = _call_of(part)
    if call is None:
        return None
    name, arguments, call_id = well_formed(call.name), well_formed(call.arguments), well_formed(call.id)
    if name is call.name and arguments is call.arguments and call_id is call.id:
        return call  # the usual case: nothing to repair
    return FunctionCall(id=call_id, name=name, arguments=arguments)


def _call_of(part: object) -> FunctionCall | None:
    if (
        isinstance(part, FunctionCall)
        and isinstance(part.id, str)
        and part.id
        and isinstance(part.name, str)
        and isinstance(part.arguments, str)
        and len(part.name) <= MAX_NAME_CHARS
        and len(part.id) <= MAX_NAME_CHARS
    ):
        return part  # the usual case: nothing to repair
    fields = part if isinstance(part, Mapping) else None

    def get(name: str) -> object:
        return fields.get(name) if fields is not None else getattr(part, name, None)

    name, arguments, call_id = get("name"), get("arguments"), get("id")
    if name is None and arguments is None:
        return None
    return FunctionCall(
        id=call_id[:MAX_NAME_CHARS] if isinstance(call_id, str) and call_id else f"call_{next(_call_ids)}",
        name=_text_of(name)[:MAX_NAME_CHARS],
        arguments=_arguments_of(arguments),
    )


def _text_of(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _arguments_of(value: object) -> str:
    """Arguments as the JSON text the tools expect: objects and numbers are encoded, null is empty."""
    if value is None or isinstance(value, str):
        return value or ""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def cut_text(text: str, max_chars: int, what: str) -> str:
    """``text``, or ``max_chars`` of its characters with a note in the middle saying what was left out.

    The start and the end are kept (three quarters and one quarter): a reply's question to the person
    and a tool's summary or error usually come last. ``what`` names the text with its verb: ``"reply
    was"``, ``"result was"``.
    """
    if len(text) <= max_chars:
        return text
    logger.warning("cutting text (the %s %d characters long) to %d", what, len(text), max_chars)
    tail = max_chars // 4
    head = max_chars - tail
    left_out = len(text) - max_chars
    note = (
        f"[cut: the {what} {len(text):,} characters long; {left_out:,} characters in the middle are left out]"
    )
    return f"{text[:head]}\n\n{note}\n\n{text[len(text) - tail :]}"


def stream_cut_note(max_chars: int) -> str:
    """What ends a streamed reply cut at ``max_chars``: the rest was never read, so its length is unknown."""
    return f"\n\n[cut: the reply was longer than {max_chars:,} characters; the rest is left out]"


MAX_CALLS_PER_RESPONSE = 32
"""The most tool calls of one response that are acted on; each one past it gets :func:`too_many_calls`
as its result (a model once sent 10,000 in one response, and each runs a tool)."""


def too_many_calls(made: int) -> str:
    """The refusal a call past ``MAX_CALLS_PER_RESPONSE`` gets, for the model to read."""
    return (
        f"not run: a response may make at most {MAX_CALLS_PER_RESPONSE} tool calls and this one made "
        f"{made:,}; make the calls still needed in your next response"
    )


class SortedCalls(NamedTuple):
    """A response's calls by kind, each with its position in the response (results keep call order;
    positions, not call ids, because some servers repeat ids); ``refused``: the calls past
    ``MAX_CALLS_PER_RESPONSE``, whatever they name."""

    regular: list[tuple[int, Tool, FunctionCall]]
    handoffs: list[tuple[int, FunctionCall]]
    unknown: list[tuple[int, FunctionCall]]
    refused: list[tuple[int, FunctionCall]]


def sort_calls(
    calls: Sequence[FunctionCall], tools: Mapping[str, Tool], handoffs: Container[str]
) -> SortedCalls:
    """Which of ``calls`` name a regular tool, which a handoff (enabled or not), which neither, and which
    are past the cap."""
    regular: list[tuple[int, Tool, FunctionCall]] = []
    handoff_calls: list[tuple[int, FunctionCall]] = []
    unknown: list[tuple[int, FunctionCall]] = []
    refused = list(enumerate(calls))[MAX_CALLS_PER_RESPONSE:]
    for i, call in enumerate(calls[:MAX_CALLS_PER_RESPONSE]):
        tool = tools.get(call.name)
        if tool is not None:
            regular.append((i, tool, call))
        elif call.name in handoffs:
            handoff_calls.append((i, call))
        else:
            unknown.append((i, call))
    return SortedCalls(regular, handoff_calls, unknown, refused)
