"""``--trace console``: each turn's spans as a short tree, written when the turn ends.

The SDK's console exporter writes every span as some twenty lines of JSON, from a thread of its own at
any moment: over a chat's prompt, forty lines per turn. ``TurnSummary`` is a span processor instead: it
keeps the spans of a trace until its local root ends (the ``turn`` in a chat, an agent's handling in a
worker, whose parent is in another process), then writes one line per span, indented under its parent,
with its duration in milliseconds and what says most about it (no content: that is for an OTLP backend
and the content opt-in)::

    turn  11.6  gen_ai.conversation.id=alice team=acme turn.agent=TriageAgent turn.replied_by=Issues...
      invoke_agent TriageAgent  1.1
        chat offline  0.5  finish_reasons=[function_calls] input_tokens=0 output_tokens=0

The lines go to ``write`` in one call per trace (stderr by default; the chat prints them through its
console, above the prompt).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import StatusCode

from handoffs_runtime.telemetry import conventions as c

Write = Callable[[str], None]

_HIDDEN = frozenset(
    {
        c.OPERATION,
        c.PROVIDER,
        c.REQUEST_MODEL,
        c.AGENT_NAME,
        c.TOOL_NAME,
        c.TOOL_CALL_ID,
        c.TOOL_ARGUMENTS,
        c.TOOL_RESULT,
        c.INPUT_MESSAGES,
        c.OUTPUT_MESSAGES,
        c.HANDOFF_SOURCE,
        c.HANDOFF_TARGET,
        c.HANDOFF_INPUT,
    }
)
"""Said by the span's name already, or content (long, and recorded only with the opt-in)."""
_SHORTER = ("handoffs.handoff.", "handoffs.", "gen_ai.response.", "gen_ai.usage.")
_MAX_VALUE = 120
_MAX_TRACES = 1000
"""Traces whose root has not ended yet, kept at most; the oldest is dropped first."""


@dataclass
class _Trace:
    started: set[int] = field(default_factory=set)
    """Spans of this process in the trace that have not ended yet."""
    ended: list[ReadableSpan] = field(default_factory=list)


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class TurnSummary(SpanProcessor):
    """Writes each finished trace of this process as a tree of one line per span (module docstring)."""

    def __init__(self, write: Write | None = None) -> None:
        self._write = write or _stderr
        self._pending: OrderedDict[int, _Trace] = OrderedDict()
        self._lock = threading.Lock()  # spans may end on any thread

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        context = span.context
        if context is not None:
            with self._lock:
                self._trace(context.trace_id).started.add(context.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None:
            return
        with self._lock:
            trace = self._trace(context.trace_id)
            trace.ended.append(span)
            trace.started.discard(context.span_id)
            # The parent travels in messages, so it looks remote even in this process: what counts is
            # whether it is still open here (then this span is written with it, when it ends).
            if span.parent is not None and span.parent.span_id in trace.started:
                return
            spans = _descendants(context.span_id, trace.ended)
            trace.ended = [s for s in trace.ended if s not in spans]
            if not trace.started and not trace.ended:
                del self._pending[context.trace_id]
        self._write("\n".join(tree(spans)))

    def _trace(self, trace_id: int) -> _Trace:
        trace = self._pending.get(trace_id)
        if trace is None:
            trace = self._pending[trace_id] = _Trace()
            if len(self._pending) > _MAX_TRACES:
                self._pending.popitem(last=False)
        return trace

    def shutdown(self) -> None:
        self._pending.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _descendants(root: int, spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """The span ``root`` and those under it, of ``spans``."""
    parents = {
        s.context.span_id: s.parent.span_id if s.parent is not None else None
        for s in spans
        if s.context is not None
    }
    found = {root}
    while grown := {i for i, parent in parents.items() if parent in found and i not in found}:
        found |= grown
    return [s for s in spans if s.context is not None and s.context.span_id in found]


def tree(spans: Sequence[ReadableSpan]) -> list[str]:
    """``spans`` as lines, each child under its parent in the order they started."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in by_id else None
        children.setdefault(parent, []).append(span)

    def walk(parent: int | None, depth: int) -> Iterator[str]:
        above = by_id[parent] if parent is not None else None
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            yield "  " * depth + line(span, above)
            if span.context is not None:
                yield from walk(span.context.span_id, depth + 1)

    return list(walk(None, 0))


def line(span: ReadableSpan, parent: ReadableSpan | None = None) -> str:
    """``name  duration  key=value ...``, and the error, if any; what the name or the ``parent`` says
    already is left out."""
    duration = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    parts = [span.name, f"{duration:.1f}"]
    inherited = dict(parent.attributes or {}) if parent is not None else {}
    words = span.name.split()
    shown = [
        f"{_short(key)}={_value(value)}"
        for key, value in (span.attributes or {}).items()
        if key not in _HIDDEN and inherited.get(key) != value and str(value) not in words
    ]
    if shown:
        parts.append(" ".join(shown))
    if span.status.status_code is StatusCode.ERROR:
        parts.append(f"ERROR {_value(span.status.description or '')}".rstrip())
    return "  ".join(parts)


def _short(key: str) -> str:
    for prefix in _SHORTER:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _value(value: Any) -> str:
    text = f"[{','.join(str(v) for v in value)}]" if isinstance(value, tuple | list) else str(value)
    text = " ".join(text.split())  # one line, whatever the value holds
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"
