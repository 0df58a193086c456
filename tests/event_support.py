"""Drive sessions through an ``EventChannel`` on the real runtime, answering questions from scripts."""

from __future__ import annotations

from collections.abc import Iterable

from autogen_core.models import ChatCompletionClient

from handoffs_runtime import HandoffsRuntime, TeamSpec, register_team, start_session
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.messages import Event, HandoffLine, Question
from handoffs_runtime.sessions.store import SessionStore

REFUND_HANDOFF = HandoffLine(
    source="TriageAgent",
    target="IssuesAndRepairsAgent",
    tool="transfer_to_issues_and_repairs",
    hop=1,
    source_label="ACME assistant",
    target_label="ACME repairs",
)
"""The handoff line of ACME's refund path, as a console or a gRPC front end is shown it."""


async def started(
    team: TeamSpec, model: ChatCompletionClient, *, store: SessionStore | None = None
) -> tuple[HandoffsRuntime, EventChannel]:
    channel = EventChannel()
    runtime = HandoffsRuntime()
    await register_team(
        runtime, team, model=model, channel=channel, on_session_end=channel.ended, store=store
    )
    runtime.start()
    return runtime, channel


async def drive(
    channel: EventChannel, session: str, customer: Iterable[str], operator: Iterable[str] = ()
) -> list[Event]:
    """Read the session's events to the end; each question gets the next scripted line (none: leave)."""
    scripts = {"customer": list(customer), "operator": list(operator)}
    seen: list[Event] = []
    async for event in channel.events(session):
        seen.append(event)
        if isinstance(event, Question):
            lines = scripts[event.person]
            if lines:
                await channel.answer(session, lines.pop(0), person=event.person)
            else:
                await channel.leave(session, person=event.person)
    return seen


async def run_events(
    team: TeamSpec, model: ChatCompletionClient, customer: Iterable[str], operator: Iterable[str] = ()
) -> list[Event]:
    runtime, channel = await started(team, model)
    await start_session(runtime, "s1")
    try:
        return await drive(channel, "s1", customer, operator)
    finally:
        await runtime.stop_when_idle()
