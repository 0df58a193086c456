"""``Telemetry``: the tracer, the instruments, and the spans of the handoffs pattern.

One object holds them; :mod:`.instrument` wraps a team's models, tools and agents in traced variants
that report to it. With no ``Telemetry`` nothing is wrapped at all.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from autogen_core.models import CreateResult, LLMMessage
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from handoffs_runtime.messages import HandoffEvent
from handoffs_runtime.models.local import current_model_call
from handoffs_runtime.telemetry import conventions as c
from handoffs_runtime.usage import Usage

SessionEndHook = Callable[[str], None]

_SCOPE = "handoffs_runtime"


class Telemetry:
    """Spans and metrics for one or more teams.

    ``tracer_provider`` / ``meter_provider`` default to OpenTelemetry's global ones. ``capture_content``
    records messages, tool arguments and results and handoff input on spans; by default it follows
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` and is off.

    Example::

        telemetry = Telemetry(tracer_provider=provider)
        await register_team(runtime, team, model=model, channel=channel, telemetry=telemetry)
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
    ) -> None:
        self.capture_content = c.content_opted_in() if capture_content is None else capture_content
        self.tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(_SCOPE)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(_SCOPE)
        self.turns = meter.create_counter(
            "handoffs.turns", "{turn}", "Turns answered (person's message to reply)"
        )
        self.turn_duration = meter.create_histogram(
            "handoffs.turn.duration", "s", "Time from the person's message to the reply"
        )
        self.handoffs = meter.create_counter(
            "handoffs.handoffs", "{handoff}", "Handoff decisions by source, target and outcome"
        )
        self.loop_stops = meter.create_counter("handoffs.loop_stops", "{stop}", "Handoff loops stopped")
        self.tool_calls = meter.create_counter("handoffs.tool.calls", "{call}", "Tool calls")
        self.tool_errors = meter.create_counter("handoffs.tool.errors", "{call}", "Tool calls that raised")
        self.active_sessions = meter.create_up_down_counter(
            "handoffs.sessions.active", "{session}", "Sessions open in this process"
        )
        self.model_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", "s", "Duration of model calls"
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", "{token}", "Tokens per model call, by gen_ai.token.type"
        )

    # --- sessions ----------------------------------------------------------------------------------

    def counting_sessions(self, hook: SessionEndHook | None, team: str) -> SessionEndHook:
        """``hook``, preceded by taking the ended session off ``handoffs.sessions.active``."""

        def ended(session_id: str) -> None:
            self.active_sessions.add(-1, {c.TEAM: team})
            if hook is not None:
                hook(session_id)

        return ended

    # --- spans ------------------------------------------------------------------------------------

    @contextmanager
    def agent_span(
        self, agent: str, session: str, team: str, parent: Context | None, hop: int
    ) -> Iterator[Span]:
        """``invoke_agent <agent>``: one agent's handling of a turn (model calls, tools, handoff inside)."""
        attributes: dict[str, Any] = {
            c.OPERATION: "invoke_agent",
            c.AGENT_NAME: agent,
            c.CONVERSATION: session,
            c.TEAM: team,
        }
        if hop:
            attributes[c.HOP] = hop
        with self.tracer.start_as_current_span(
            f"invoke_agent {agent}", parent, SpanKind.INTERNAL, attributes
        ) as span:
            yield span

    def start_turn(self, session: str, team: str, agent: str, text: str) -> Span:
        """The root of a turn's trace, from the person's message until the reply reaches the ``UserAgent``."""
        attributes: dict[str, Any] = {c.CONVERSATION: session, c.TEAM: team, c.ENTRY_AGENT: agent}
        if self.capture_content:
            attributes[c.INPUT_MESSAGES] = c.as_content([{"role": "user", "content": text}])
        return self.tracer.start_span("turn", Context(), SpanKind.SERVER, attributes)

    def end_turn(
        self,
        span: Span,
        team: str,
        replied_by: str,
        error: str | None,
        started: float,
        tokens: Usage | None,
    ) -> None:
        """End the turn's span with who replied, the tokens of the whole turn (all agents), or the error."""
        span.set_attribute(c.REPLIED_BY, replied_by)
        if tokens is not None:
            span.set_attribute(c.INPUT_TOKENS, tokens.input)
            span.set_attribute(c.OUTPUT_TOKENS, tokens.output)
        outcome = "ok"
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
            span.set_attribute(c.ERROR_TYPE, "undeliverable")
            outcome = "undeliverable"
        span.end()
        labels = {c.TEAM: team, c.REPLIED_BY: replied_by, "handoffs.turn.outcome": outcome}
        self.turns.add(1, labels)
        self.turn_duration.record(time.monotonic() - started, labels)

    def record_handoff(self, event: HandoffEvent, team: str) -> None:
        """A ``HandoffEvent`` as a span under the agent that decided it; refusals and loop stops: errors."""
        attributes: dict[str, Any] = {
            c.CONVERSATION: event.session_id,
            c.TEAM: team,
            c.HANDOFF_SOURCE: event.source,
            c.HANDOFF_TARGET: event.target,
            c.HANDOFF_TOOL: event.tool,
            c.HANDOFF_OUTCOME: event.outcome,
            c.HOP: event.hop,
        }
        reason = event.reason if self.capture_content else event.kind  # a reason may quote the input
        if reason:
            attributes[c.HANDOFF_REASON] = reason
        if event.arguments is not None and self.capture_content:
            attributes[c.HANDOFF_INPUT] = c.as_content(event.arguments)
        span = self.tracer.start_span(f"handoff {event.source} -> {event.target}", attributes=attributes)
        if event.outcome != "handoff":
            span.set_status(Status(StatusCode.ERROR, reason or event.outcome))
            span.set_attribute(c.ERROR_TYPE, event.outcome)
        span.end()
        labels = {
            c.TEAM: team,
            c.HANDOFF_SOURCE: event.source,
            c.HANDOFF_TARGET: event.target,
            c.HANDOFF_OUTCOME: event.outcome,
        }
        self.handoffs.add(1, labels)
        if event.outcome == "loop_stopped":
            self.loop_stops.add(1, {c.TEAM: team, c.AGENT_NAME: event.source})

    def model_call(self, model: str, provider: str, messages: Sequence[LLMMessage]) -> ModelCallRecord:
        """Start a ``chat <model>`` span (not made current: a model call has no children)."""
        attributes: dict[str, Any] = {c.OPERATION: "chat", c.PROVIDER: provider, c.REQUEST_MODEL: model}
        caller = current_model_call()
        if caller is not None:
            attributes[c.AGENT_NAME] = caller.agent
            attributes[c.CONVERSATION] = caller.session_id
        if self.capture_content:
            attributes[c.INPUT_MESSAGES] = c.as_content([m.model_dump(mode="json") for m in messages])
        span = self.tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)
        return ModelCallRecord(self, span, model, provider)

    @contextmanager
    def tool_span(self, name: str, call_id: str | None, args: Mapping[str, Any]) -> Iterator[Span]:
        """``execute_tool <name>``, current while the tool runs; a tool that raises marks it an error."""
        attributes: dict[str, Any] = {c.OPERATION: "execute_tool", c.TOOL_NAME: name}
        if call_id:
            attributes[c.TOOL_CALL_ID] = call_id
        if self.capture_content:
            attributes[c.TOOL_ARGUMENTS] = c.as_content(dict(args))
        labels = {c.TOOL_NAME: name}
        self.tool_calls.add(1, labels)
        with self.tracer.start_as_current_span(
            f"execute_tool {name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except Exception as exc:
                record_error(span, exc, self.capture_content)
                self.tool_errors.add(1, {**labels, c.ERROR_TYPE: type(exc).__name__})
                raise


class ModelCallRecord:
    """One model call in flight: ends its span with the result or the error, and records the metrics."""

    __slots__ = ("_model", "_provider", "_span", "_started", "_telemetry")

    def __init__(self, telemetry: Telemetry, span: Span, model: str, provider: str) -> None:
        self._telemetry = telemetry
        self._span = span
        self._model = model
        self._provider = provider
        self._started = time.monotonic()

    def _labels(self) -> dict[str, str]:
        return {c.OPERATION: "chat", c.PROVIDER: self._provider, c.REQUEST_MODEL: self._model}

    def succeeded(self, result: CreateResult, response_model: str | None) -> None:
        span, labels = self._span, self._labels()
        span.set_attribute(c.FINISH_REASONS, [result.finish_reason])
        if response_model:
            span.set_attribute(c.RESPONSE_MODEL, response_model)
        usage = result.usage
        span.set_attribute(c.INPUT_TOKENS, usage.prompt_tokens)
        span.set_attribute(c.OUTPUT_TOKENS, usage.completion_tokens)
        if self._telemetry.capture_content:
            output = (
                result.content
                if isinstance(result.content, str)
                else [call.model_dump(mode="json") for call in result.content if hasattr(call, "model_dump")]
            )
            span.set_attribute(c.OUTPUT_MESSAGES, c.as_content([{"role": "assistant", "content": output}]))
        span.end()
        telemetry = self._telemetry
        telemetry.model_duration.record(time.monotonic() - self._started, labels)
        telemetry.token_usage.record(usage.prompt_tokens, {**labels, c.TOKEN_TYPE: "input"})
        telemetry.token_usage.record(usage.completion_tokens, {**labels, c.TOKEN_TYPE: "output"})

    def failed(self, exc: BaseException) -> None:
        span = self._span
        error = type(exc).__name__
        record_error(span, exc, self._telemetry.capture_content)
        span.end()
        self._telemetry.model_duration.record(
            time.monotonic() - self._started, {**self._labels(), c.ERROR_TYPE: error}
        )


def record_error(span: Span, exc: BaseException, with_message: bool) -> None:
    """Mark ``span`` failed with ``exc``. Its message may quote content (pydantic quotes the input it
    rejected), so without the content opt-in only the type and the stack frames are recorded."""
    error = type(exc).__name__
    span.set_attribute(c.ERROR_TYPE, error)
    if with_message:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{error}: {exc}"))
        return
    frames = "".join(traceback.format_tb(exc.__traceback__))
    span.add_event("exception", {"exception.type": error, "exception.stacktrace": frames})
    span.set_status(Status(StatusCode.ERROR, error))
