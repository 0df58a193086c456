"""Reading a stored transcript: what is new in a reply, the events an entry shows, usage, exports.

Pure functions over :mod:`handoffs_runtime.sessions.store` values; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, UserMessage

from handoffs_runtime.channels.base import describe
from handoffs_runtime.messages import (
    NO_LABELS,
    Event,
    Labels,
    Notice,
    Question,
    Reply,
    Said,
    ToolFinished,
    ToolStarted,
    shown_name,
)
from handoffs_runtime.sessions.effects import Effect
from handoffs_runtime.sessions.entries import MESSAGE_BODIES, QuestionBody
from handoffs_runtime.sessions.store import SessionState, StoredEntry
from handoffs_runtime.text import inert_json, printable
from handoffs_runtime.usage import Usage

NO_ANSWER = "(no answer: the person had left)"

ExportFormat = Literal["md", "json"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("md", "json")


def new_messages(sent: Sequence[LLMMessage], received: Sequence[LLMMessage]) -> list[LLMMessage]:
    """The messages of ``received`` (a reply's context) that the session has not stored yet.

    ``sent`` is the context the person's message went out with. Agents only append to the context, so
    normally ``received`` starts with ``sent`` and the rest is new. But an input filter or nested history
    may rewrite the context at a handoff; then the messages after the last copy of the person's latest
    message are new (filters keep that message: nesting repeats it after its summary block). When a filter
    dropped it too, every message not already in ``sent`` is new. A summary block written by a filter is
    never taken for a new message as long as the person's message follows it.
    """
    sent = list(sent)
    received = list(received)
    if received[: len(sent)] == sent:
        return received[len(sent) :]
    latest = next((m for m in reversed(sent) if isinstance(m, UserMessage)), None)
    if latest is not None:
        for index in range(len(received) - 1, -1, -1):
            if received[index] == latest:
                return received[index + 1 :]
    return [m for m in received if m not in sent]


# --- rendering -----------------------------------------------------------------------------------------


def stored_usage(entries: Sequence[StoredEntry]) -> Usage:
    """The tokens a session used: the sum of the usage stored with its reply entries (``body.usage``,
    ``{agent: [input, output]}``, read with the body); anything else found there is ignored."""
    return Usage.sum(e.value.usage for e in entries if isinstance(e.value, MESSAGE_BODIES))


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def entry_events(entry: StoredEntry, labels: Labels = NO_LABELS) -> list[Event]:
    """What a stored entry shows a person: the same events a live session shows (a tool-call entry holds
    one event per call), agents named by ``labels``. An entry of an unknown kind shows nothing."""
    body = entry.value
    label = labels.get(entry.agent, "")
    if entry.kind == "user":
        return [Said(text=entry.text)]
    if entry.kind in ("reply", "system"):
        return [Reply(agent=entry.agent, text=entry.text, label=label)]
    if entry.kind == "notice":
        return [Notice(text=entry.text)]
    if isinstance(body, QuestionBody):  # a confirmation or an approval, and how the person answered it
        answer = body.answer
        said = Said(text=answer, person=body.person) if answer is not None else Notice(text=NO_ANSWER)
        return [Question.asking(body.prompt, body.person), said]
    match entry.message():
        case AssistantMessage(content=list() as calls):
            return [ToolStarted.of(call, agent=entry.agent, label=label) for call in calls]
        case FunctionExecutionResultMessage(content=results):
            return [ToolFinished.of(result, agent=entry.agent, label=label) for result in results]
    event = entry.event()
    return [event.line(labels)] if event is not None else []


def describe_entry(entry: StoredEntry, labels: Labels = NO_LABELS) -> str:
    """One line for an entry, as the console and ``handoffs sessions show`` print it (raw: the printer
    makes it :func:`printable`): a question as it was asked, ``Confirm order? y/n › y``."""
    if isinstance(question := entry.value, QuestionBody):
        answer = question.answer
        return f"{question.prompt} › {NO_ANSWER if answer is None else answer}"
    lines = [describe(event) for event in entry_events(entry, labels)]
    return "; ".join(lines) if lines else f"({entry.text})"


def last_exchanges(entries: Sequence[StoredEntry], count: int) -> list[StoredEntry]:
    """The person's messages and the replies of the last ``count`` exchanges, oldest first."""
    spoken = [e for e in entries if e.kind in ("user", "reply")]
    starts = [i for i, e in enumerate(spoken) if e.kind == "user"]
    if count <= 0:
        return []
    if len(starts) <= count:
        return spoken
    return spoken[starts[-count] :]


def to_markdown(
    state: SessionState,
    entries: Sequence[StoredEntry],
    labels: Labels = NO_LABELS,
    *,
    title: str = "",
    effects: Sequence[Effect] = (),
) -> str:
    """A readable transcript: the person's and agents' words in full, tool traffic and handoffs in italics.

    Agents are named as people read them (``labels``: display names by agent); ``title`` is the team's.
    Made for people and terminals, so control characters are shown, not kept (:func:`printable`); the JSON
    export keeps the exact text.
    """
    team = f"{title} ({state.team})" if title and state.team else title or state.team or "-"
    lines = [
        f"# Session {printable(state.session_id, multiline=False)}",
        "",
        f"- team: {team}",
        f"- active agent: {shown_name(labels.get(state.active_agent, ''), state.active_agent)}",
        f"- status: {state.status}",
        f"- started: {_iso(state.created_at)}",
        f"- last update: {_iso(state.updated_at)}",
        "",
    ]
    for entry in entries:
        stamp = _iso(entry.created_at)
        if entry.kind == "user":
            lines.append(f"**you** ({stamp}): {entry.text}")
        elif entry.kind in ("reply", "system"):
            who = _escape(shown_name(labels.get(entry.agent, ""), entry.agent))
            lines.append(f"**{who}** ({stamp}): {entry.text}")
        else:
            lines.append(f"*{_escape(describe_entry(entry, labels))}* ({stamp})")
        lines.append("")
    if effects:
        lines += ["## Effects", ""]
        lines += [f"- {_escape(e.describe())} ({_iso(e.created_at)})" for e in effects]
        lines.append("")
    return printable("\n".join(lines))


def _settled(effect: Effect) -> str | None:
    return _iso(effect.settled_at) if effect.settled_at is not None else None


def _escape(text: str) -> str:
    return text.replace("*", "\\*").replace("_", "\\_")


def to_json(state: SessionState, entries: Sequence[StoredEntry], effects: Sequence[Effect] = ()) -> str:
    """The whole record, machine-readable: session fields and every entry with its body as stored (control
    characters as JSON escapes, so the text is exact and still safe to print)."""
    document: dict[str, Any] = {
        "session": {
            "id": state.session_id,
            "team": state.team,
            "active_agent": state.active_agent,
            "status": state.status,
            "created_at": _iso(state.created_at),
            "updated_at": _iso(state.updated_at),
            "messages": state.last_seq,
            "usage": stored_usage(entries).to_json(),
        },
        "messages": [
            {
                "seq": e.seq,
                "agent": e.agent,
                "kind": e.kind,
                "created_at": _iso(e.created_at),
                "body": e.body,
            }
            for e in entries
        ],
        "effects": [
            {**e.to_json(), "created_at": _iso(e.created_at), "settled_at": _settled(e)} for e in effects
        ],
    }
    return inert_json(json.dumps(document, ensure_ascii=False, indent=2))


def export(
    state: SessionState,
    entries: Sequence[StoredEntry],
    fmt: ExportFormat,
    labels: Labels = NO_LABELS,
    *,
    title: str = "",
    effects: Sequence[Effect] = (),
) -> str:
    """The session in ``fmt``; Markdown names agents by ``labels`` under the team's ``title``, JSON keeps
    the stored names. Both list the session's irreversible ``effects`` with their keys and outcomes."""
    if fmt == "md":
        return to_markdown(state, entries, labels, title=title, effects=effects)
    if fmt == "json":
        return to_json(state, entries, effects)
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
