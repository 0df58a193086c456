"""Without the content opt-in no span holds what a customer said or a validator quoted: a refused
handoff's reason is recorded as its kind (``validation failed: account``), in attributes and status."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from handoffs_runtime import AgentSpec, HandoffContext, TeamSpec, handoff, tool_call
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.scripted import ScriptedModel

from .support import run_sessions
from .test_telemetry import Recorder

SECRET = "ACCT-SECRET-998877"
WORDS = "my mother's maiden name is Quigglesworth"


class Transfer(BaseModel):
    account: str

    @field_validator("account")
    @classmethod
    def known(cls, value: str) -> str:
        raise ValueError(f"unknown account {value!r}")  # quotes what it rejects, as validators do


def file_complaint(ctx: HandoffContext) -> None:
    said = ctx.conversation[0].content
    raise RuntimeError(f"the CRM rejected the complaint {said!r}")  # quotes the customer


def team() -> TeamSpec:
    """A front desk whose two handoffs fail on what the customer said: the text must not reach a span."""
    to_transfers = handoff("Transfers", input_type=Transfer)
    to_complaints = handoff("Complaints", on_handoff=file_complaint)
    specialists = [
        AgentSpec("Transfers", description="Moves money."),
        AgentSpec("Complaints", description="Files complaints."),
    ]
    front = AgentSpec("Front", handoffs=[to_transfers, to_complaints])
    return TeamSpec(name="bank", entry="Front", agents=[front, *specialists])


async def refused_handoff_spans(capture: bool) -> list[Any]:
    recorder = Recorder(capture_content=capture)
    front = ScriptedModel(
        [
            [tool_call("transfer_to_transfers", {"account": SECRET})],
            "Which account?",
            [tool_call("transfer_to_complaints")],
        ]
    )
    channel = ScriptedChannel.for_sessions({"s1": [WORDS, "file it"]})
    await run_sessions(team(), channel, models={"Front": front}, telemetry=recorder.telemetry)
    return recorder.finished()


def _everything_recorded(span: Any) -> str:
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return repr((span.name, dict(span.attributes or {}), span.status.description, events))


async def test_without_the_opt_in_no_span_holds_a_quoted_value_or_the_customers_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    spans = await refused_handoff_spans(capture=False)
    recorded = "\n".join(_everything_recorded(s) for s in spans)
    assert SECRET not in recorded and "Quigglesworth" not in recorded
    refused = {s.name: s for s in spans if s.name.startswith("handoff ")}
    transfer, complaint = refused["handoff Front -> Transfers"], refused["handoff Front -> Complaints"]
    assert transfer.attributes["handoffs.handoff.reason"] == "validation failed: account"
    assert transfer.status.description == "validation failed: account"
    assert complaint.attributes["handoffs.handoff.reason"] == "on_handoff failed: RuntimeError"
    assert complaint.status.description == "on_handoff failed: RuntimeError"


async def test_with_the_opt_in_the_whole_reason_is_recorded() -> None:
    spans = await refused_handoff_spans(capture=True)
    refused = {s.name: s for s in spans if s.name.startswith("handoff ")}
    assert SECRET in refused["handoff Front -> Transfers"].attributes["handoffs.handoff.reason"]
    assert "Quigglesworth" in (refused["handoff Front -> Complaints"].status.description or "")
