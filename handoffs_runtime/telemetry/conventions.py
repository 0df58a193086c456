"""Attribute and instrument names: OpenTelemetry's GenAI conventions, and ``handoffs.*`` for the rest.

``handoffs.*`` names what the conventions have no word for (turns, handoffs, loop stops, teams).
"""

from __future__ import annotations

import json
import os
from typing import Any

# GenAI semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/)
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

# The pattern's own vocabulary
TEAM = "handoffs.team"
HOP = "handoffs.hop"
ENTRY_AGENT = "handoffs.turn.agent"
REPLIED_BY = "handoffs.turn.replied_by"
HANDOFF_SOURCE = "handoffs.handoff.source"
HANDOFF_TARGET = "handoffs.handoff.target"
HANDOFF_TOOL = "handoffs.handoff.tool"
HANDOFF_OUTCOME = "handoffs.handoff.outcome"
HANDOFF_REASON = "handoffs.handoff.reason"
HANDOFF_INPUT = "handoffs.handoff.input"

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' opt-in for recording message content; off unless set to ``true``."""

MAX_CONTENT_CHARS = 16_384
"""Recorded content is cut here: a span attribute must not carry a whole conversation of unbounded size."""


def content_opted_in() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def as_content(value: Any) -> str:
    """``value`` as JSON text for a content attribute (inert text, bounded in size)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…[truncated]"
