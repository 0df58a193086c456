"""Stored entries read back as typed values (one union, told apart by the entry's kind), on SQLite and
on PostgreSQL; a body that is not what its kind says is a :class:`CorruptEntryError` naming the entry."""

from __future__ import annotations

import json
import pickle

import pytest
from autogen_core import FunctionCall
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)

from handoffs_runtime.errors import CorruptEntryError, StoreError
from handoffs_runtime.messages import HandoffEvent
from handoffs_runtime.sessions.entries import (
    ENTRY_KINDS,
    HandoffBody,
    NoticeBody,
    QuestionBody,
    ReplyBody,
    SystemBody,
    ToolCallsBody,
    ToolResultsBody,
    UserBody,
)
from handoffs_runtime.sessions.store import (
    NewEntry,
    StoredEntry,
    entry_for_event,
    entry_for_message,
    notice_entry,
    question_entry,
)
from handoffs_runtime.sessions.transcript import stored_usage
from handoffs_runtime.usage import Usage

from .store_backends import Backend

HI = UserMessage(content="hi", source="User")
CALL = FunctionCall(id="c1", name="look_up", arguments='{"order": "42"}')
CALLS = AssistantMessage(content=[CALL], source="Sales")
RESULTS = FunctionExecutionResultMessage(
    content=[FunctionExecutionResult(content="shipped", name="look_up", call_id="c1", is_error=False)]
)
RULES = SystemMessage(content="be brief")
EVENT = HandoffEvent(session_id="s1", source="Triage", target="Sales", tool="transfer_to_sales", kind="why")
USAGE = {"Sales": [120, 7]}


def _reply_with_usage() -> NewEntry:
    reply = entry_for_message(AssistantMessage(content="it shipped", source="Sales"))
    return NewEntry(reply.agent, reply.kind, {**reply.body, "usage": USAGE})


async def test_every_kind_reads_back_as_its_typed_body(backend: Backend) -> None:
    store = backend.make()
    await store.open_session("s1", agent="Triage")
    written = [
        entry_for_message(HI, agent="Triage"),
        entry_for_event(EVENT),
        entry_for_message(CALLS),
        entry_for_message(RESULTS, agent="Sales"),
        _reply_with_usage(),
        entry_for_message(RULES, agent="Sales"),
        notice_entry("the session resumed"),
        question_entry("Confirm order? y/n", "customer", "yes", asker="Sales"),
    ]
    await store.append("s1", written)
    await store.close()
    store = backend.make(read_only=True)
    entries = await store.entries("s1")
    await store.close()
    assert {e.kind for e in entries} == ENTRY_KINDS  # every kind, each read as its own type:
    user, handoff, calls, results, reply, system, notice, question = (e.value for e in entries)
    assert isinstance(user, UserBody) and user.message == HI and user.usage == Usage.EMPTY
    assert isinstance(handoff, HandoffBody) and handoff.event == EVENT and handoff.event.kind == "why"
    assert isinstance(calls, ToolCallsBody) and calls.message == CALLS
    assert isinstance(results, ToolResultsBody) and results.message == RESULTS
    assert isinstance(reply, ReplyBody) and reply.message.content == "it shipped"
    assert reply.usage == Usage.from_json(USAGE) and stored_usage(entries) == Usage.from_json(USAGE)
    assert isinstance(system, SystemBody) and system.message == RULES
    assert isinstance(notice, NoticeBody) and notice.text == "the session resumed"
    assert isinstance(question, QuestionBody)
    assert (question.prompt, question.person, question.answer) == ("Confirm order? y/n", "customer", "yes")
    assert [e.message() for e in entries] == [HI, None, CALLS, RESULTS, reply.message, RULES, None, None]
    assert [e.event() for e in entries] == [None, EVENT, *[None] * 6]
    assert entries[4].body["usage"] == USAGE  # the body as stored, for exports, is kept as it was


MALFORMED = [
    (
        "user",
        AssistantMessage(content="hello", source="Triage").model_dump(mode="json"),
        "a user body: message.type: Input should be 'UserMessage'",
    ),
    ("reply", CALLS.model_dump(mode="json"), "a reply body: a reply whose content is not text"),
    (
        "tool_calls",
        AssistantMessage(content="text", source="S").model_dump(mode="json"),
        "a tool_calls body: tool calls whose content is text",
    ),
    ("handoff", {"source": "Triage"}, "a handoff body: event.session_id: Field required"),
    ("notice", {"text": 3}, "a notice body: text: Input should be a valid string"),
    ("question", {"prompt": "Confirm?", "person": "someone", "answer": None}, "a question body: person"),
]


@pytest.mark.parametrize(("kind", "body", "reason"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_a_malformed_body_is_a_corrupt_entry_error_naming_it(
    backend: Backend, kind: str, body: dict[str, object], reason: str
) -> None:
    """Well-formed JSON, even a valid message, that is not what the entry's kind says."""
    store = backend.make()
    await store.open_session("s1", agent="T")
    await store.append(
        "s1", [notice_entry("before it"), notice_entry("scribbled over"), notice_entry("after it")]
    )
    await store.close()
    backend.execute("UPDATE messages SET kind = ?, body = ? WHERE seq = 2", (kind, json.dumps(body)))
    store = backend.make(read_only=True)
    with pytest.raises(CorruptEntryError) as caught:
        await store.entries("s1")
    error = caught.value
    assert isinstance(error, StoreError) and (error.session_id, error.seq) == ("s1", 2)
    assert f"entry 2 of session 's1' is damaged in the store ({reason}" in str(error)
    assert str(error).endswith("or delete the session (`handoffs sessions delete s1`)")
    assert [e.text for e in await store.entries("s1", after=2)] == ["after it"]  # the rest still reads
    assert store.failure is error
    await store.close()


def test_a_corrupt_entry_error_keeps_what_it_names_across_processes() -> None:
    error = CorruptEntryError("s1", 4, "a notice body: text: Field required")
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again), again.session_id, again.seq) == (
        CorruptEntryError,
        str(error),
        "s1",
        4,
    )


def test_an_entry_made_in_code_is_checked_too() -> None:
    with pytest.raises(CorruptEntryError, match=r"entry 1 of session 's1'.*a question body: answer"):
        StoredEntry("s1", 1, "Sales", "question", {"prompt": "Confirm?", "person": "customer"}, 0.0)
