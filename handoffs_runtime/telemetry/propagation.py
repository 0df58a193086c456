"""The trace context that travels inside ``UserTask``, ``AgentResponse`` and ``WorkerTask``.

autogen-core links the spans of a message's publisher and handler instead of nesting them, and its
runtimes hand every message to a new task, so the turn's context would be lost at each hop. Here it rides
in the message itself (W3C ``traceparent``/``tracestate``), through any runtime and across the gRPC host.
A carrier from another process is untrusted: anything but a small dict of strings is ignored.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span, get_current_span, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TraceCarrier = dict[str, str]

_PROPAGATOR = TraceContextTextMapPropagator()
_MAX_CARRIER_CHARS = 1024  # traceparent is 55 characters; W3C caps tracestate at 512


def carrier_of(span: Span | None = None) -> TraceCarrier | None:
    """The W3C carrier of ``span`` (default: the current span), or ``None`` when there is none."""
    carrier: TraceCarrier = {}
    _PROPAGATOR.inject(carrier, set_span_in_context(span) if span is not None else None)
    return carrier or None


def context_of(carrier: Any) -> Context | None:
    """The parent context a carrier names, or ``None`` for a missing, malformed or oversized one."""
    if not isinstance(carrier, dict) or not carrier:
        return None
    size = 0
    for key, value in carrier.items():
        if not isinstance(key, str) or not isinstance(value, str):
            return None
        size += len(key) + len(value)
    if size > _MAX_CARRIER_CHARS:
        return None
    context = _PROPAGATOR.extract(carrier)
    return context if get_current_span(context).get_span_context().is_valid else None


def passed_on(carrier: Any) -> TraceCarrier | None:
    """What of a received carrier an agent carries on: its two W3C fields when it names a valid parent."""
    if context_of(carrier) is None:
        return None
    return {key: carrier[key] for key in _PROPAGATOR.fields if key in carrier}
