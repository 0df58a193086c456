"""What counts as new in a reply (also when filters rewrote the history), and the export formats."""

from __future__ import annotations

import json

import pytest
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

from handoffs_runtime import remove_all_tools, tool_call
from handoffs_runtime.handoffs.filters import nesting_filter
from handoffs_runtime.handoffs.handoff import HandoffInputData, InputFilter
from handoffs_runtime.messages import HandoffEvent, HandoffLine, Reply, Said, ToolFinished, ToolStarted
from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import SessionState, StoredEntry, entry_for_event, entry_for_message
from handoffs_runtime.sessions.transcript import entry_events, export, last_exchanges, new_messages

Q1 = UserMessage(content="where is my order?", source="User")
A1 = AssistantMessage(content="Let me check.", source="Triage")
Q2 = UserMessage(content="I want a refund", source="User")
CALL = AssistantMessage(content=[tool_call("transfer_to_issues", call_id="c1")], source="Triage")
RESULT = FunctionExecutionResultMessage(
    content=[FunctionExecutionResult(call_id="c1", name="transfer_to_issues", content="Transferred")]
)
REPLY = AssistantMessage(content="Refund done.", source="Issues")


def _handed_over(data_filter: InputFilter) -> list[LLMMessage]:
    """The context a reply carries when ``data_filter`` ran at the handoff from Triage to Issues."""
    data = HandoffInputData((Q1, A1, Q2), (CALL, RESULT), "Triage", "Issues", "s1")
    return [*data_filter(data).all_items, REPLY]


def test_plain_append_is_the_suffix() -> None:
    assert new_messages([Q1, A1, Q2], [Q1, A1, Q2, CALL, RESULT, REPLY]) == [CALL, RESULT, REPLY]


def test_tool_filter_keeps_the_agents_words() -> None:
    assert new_messages([Q1, A1, Q2], _handed_over(remove_all_tools)) == [REPLY]


def test_nested_history_is_not_taken_for_new_messages() -> None:
    received = _handed_over(nesting_filter())
    assert received[0] not in (Q1, A1, Q2)  # the summary block
    assert new_messages([Q1, A1, Q2], received) == [REPLY]


def test_a_filter_that_drops_the_persons_message_falls_back_to_unseen_messages() -> None:
    def drop_history(data: HandoffInputData) -> HandoffInputData:
        return data.replace(history=())

    assert new_messages([Q1, A1, Q2], _handed_over(drop_history)) == [CALL, RESULT, REPLY]


async def _record(messages: list[LLMMessage]) -> tuple[SessionState, list[StoredEntry]]:
    """Store ``messages`` in session s1, with a handoff event after the first four."""
    store = SQLiteSessionStore(":memory:")
    await store.open_session("s1", agent="Triage", team="acme")
    event = HandoffEvent(session_id="s1", source="Triage", target="Issues", tool="transfer_to_issues")
    await store.append("s1", [entry_for_message(m) for m in messages[:4]] + [entry_for_event(event)])
    await store.append("s1", [entry_for_message(m) for m in messages[4:]], active_agent="Issues")
    state, entries = await store.get_session("s1"), await store.entries("s1")
    await store.close()
    return state, entries


async def test_last_exchanges_counts_the_persons_messages() -> None:
    _, entries = await _record([Q1, A1, Q2, CALL, RESULT, REPLY])
    assert [e.text for e in last_exchanges(entries, 1)] == ["I want a refund", "Refund done."]
    assert len(last_exchanges(entries, 5)) == 4
    assert last_exchanges(entries, 0) == []


async def test_a_stored_conversation_renders_to_the_events_a_live_one_shows() -> None:
    _, entries = await _record([Q1, A1, Q2, CALL, RESULT, REPLY])
    events = [event for entry in entries for event in entry_events(entry)]
    assert events == [
        Said(text="where is my order?"),
        Reply(agent="Triage", text="Let me check."),
        Said(text="I want a refund"),
        ToolStarted(agent="Triage", tool="transfer_to_issues", call_id="c1", arguments="{}"),
        HandoffLine(source="Triage", target="Issues", tool="transfer_to_issues"),
        ToolFinished(agent="tool_results", tool="transfer_to_issues", call_id="c1", result="Transferred"),
        Reply(agent="Issues", text="Refund done."),
    ]


async def test_markdown_export_reads_as_a_conversation() -> None:
    text = export(*await _record([Q1, A1, Q2, CALL, RESULT, REPLY]), "md")
    assert text.startswith("# Session s1\n")
    assert "- active agent: Issues" in text and "- team: acme" in text
    lines = [line for line in text.splitlines() if line.startswith("*")]
    assert lines[0].startswith("**you** (") and lines[0].endswith("): where is my order?")
    assert lines[1].startswith("**Triage** (") and lines[1].endswith("Let me check.")
    assert lines[3].startswith("*Triage called transfer\\_to\\_issues({})*")
    assert lines[4].startswith("*↪ Issues has joined*")
    assert lines[5].startswith("*result of transfer\\_to\\_issues: Transferred*")
    assert lines[6].endswith("Refund done.")


async def test_json_export_holds_every_entry_as_stored() -> None:
    document = json.loads(export(*await _record([Q1, A1, Q2, CALL, RESULT, REPLY]), "json"))
    assert document["session"]["id"] == "s1" and document["session"]["messages"] == 7
    assert [m["seq"] for m in document["messages"]] == list(range(1, 8))
    kinds = [m["kind"] for m in document["messages"]]
    assert kinds == ["user", "reply", "user", "tool_calls", "handoff", "tool_results", "reply"]
    assert document["messages"][3]["body"]["content"][0]["name"] == "transfer_to_issues"
    assert document["messages"][0]["created_at"].endswith("Z")


async def test_unknown_export_format_is_refused() -> None:
    state, entries = await _record([Q1])
    with pytest.raises(ValueError, match="use one of md, json"):
        export(state, entries, "html")  # type: ignore[arg-type]
