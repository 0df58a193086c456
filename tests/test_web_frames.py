"""Every frame a page receives is a declared one: the pages' scripts handle exactly the declared types,
and each frame a real session sends (an operator round trip, a reload) reads back as one, byte for byte."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from pydantic import ValidationError

from handoffs_runtime.web import frames
from handoffs_runtime.web.frames import CUSTOMER_FRAMES, OPERATOR_FRAMES, frame_json

from .web_support import customer_back, escalated, operator, served, waiting_list

STATIC = Path(frames.__file__).parent / "static"
CUSTOMER_PAGE = ("chat.js", "waiting.js")
OPERATOR_PAGE = ("operator.js", "waitlist.js")
SHARED = ("common.js",)


def declared(union: Any) -> set[str]:
    """The ``type`` of every frame in ``union`` (a frame carrying an event: every event it may carry)."""
    found: set[str] = set()
    for member in get_args(get_args(union)[0]):
        model = get_args(member)[0]
        hints = get_type_hints(model)
        if "event" in hints:
            found |= {t for event in get_args(hints["event"]) for t in type_of(event)}
        else:
            found |= type_of(model)
    return found


def type_of(model: type) -> set[str]:
    return set(get_args(get_type_hints(model)["type"]))


def handled(*scripts: str) -> tuple[set[str], set[str]]:
    """The frame types ``scripts`` handle by name, and the prefixes they handle (``startsWith``)."""
    text = "\n".join((STATIC / name).read_text() for name in scripts)
    names = set(re.findall(r'case "([a-z_]+)"', text)) | set(re.findall(r'ev\.type === "([a-z_]+)"', text))
    for listed in re.findall(r"\[([^\]]*)\]\.includes\(ev\.type\)", text):
        names |= set(re.findall(r'"([a-z_]+)"', listed))
    return names, set(re.findall(r'ev\.type\.startsWith\("([a-z_]+)"\)', text))


def test_the_pages_handle_every_declared_frame_and_no_other() -> None:
    customer, operator_ = declared(frames.CustomerFrame), declared(frames.OperatorFrame)
    assert {"session", "history", "queue", "reply", "tool_started"} <= customer  # read from the source
    assert "tool_finished" not in customer and "tool_finished" in operator_  # a customer sees no results
    for page, union in ((CUSTOMER_PAGE, customer), (OPERATOR_PAGE, operator_)):
        own, prefixes = handled(*page)
        assert own <= union, f"{page} handles frames nobody sends: {sorted(own - union)}"
        assert all(any(t.startswith(p) for t in union) for p in prefixes), prefixes
        everything, _ = handled(*page, *SHARED)
        assert union <= everything, f"{page} receives frames it never handles: {sorted(union - everything)}"
    shared, _ = handled(*SHARED)
    assert shared <= customer | operator_, sorted(shared - customer - operator_)


@pytest.mark.parametrize(
    ("adapter", "frame"),
    [
        (
            CUSTOMER_FRAMES,
            {"type": "ready", "agents": [], "labels": {}},
        ),  # the operator's, not the customer's
        (
            CUSTOMER_FRAMES,
            {"type": "tool_started", "agent": "A", "text": "t", "tool": "look_up"},
        ),  # internals
        (CUSTOMER_FRAMES, {"type": "notice", "session": "s", "text": "t", "detail": "/srv/s.db"}),
        (OPERATOR_FRAMES, {"type": "queue", "session": "s", "state": "waiting"}),
        (OPERATOR_FRAMES, {"type": "released", "session": "s"}),
        (OPERATOR_FRAMES, {"type": "gossip", "session": "s"}),
    ],
)
def test_a_frame_not_declared_for_a_page_is_refused(adapter: Any, frame: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        adapter.validate_python(frame)


def read_back(adapter: Any, sent: list[dict[str, Any]]) -> set[str]:
    """Each frame read as a declared one, and written again exactly as it was sent; their types."""
    for frame in sent:
        assert frame_json(adapter.validate_python(frame)) == frame
    return {frame["type"] for frame in sent}


async def test_every_frame_of_a_session_with_an_operator_round_trip_is_declared(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        ann = await operator(server)
        page, sid = await escalated(server)
        await waiting_list(ann, (sid, "escalation"))
        await ann.send({"type": "take", "session": sid})
        await ann.until("taken")
        await ann.send({"type": "say", "session": sid, "text": "Hello, I am Ann."})
        await page.until("reply", agent="HumanAgent")
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        await ann.until("said", person="customer")
        await ann.send({"type": "hand_back", "session": sid, "agent": "Nobody"})
        await ann.until("error")
        await ann.send({"type": "hand_back", "session": sid, "agent": "TriageAgent"})
        await ann.until("released")
        await page.until("handoff", source="HumanAgent", target="TriageAgent")
        await page.until("reply")  # the agents take the conversation on
        session = page.seen[0]
        again, _ = await customer_back(server, session)  # a reload: the stored transcript
        await again.until("history")
        await again.send({"type": "earlier", "before": 1})
        await again.until("earlier")
        for socket in (page, again, ann):
            await socket.socket.close()
    customer_types = read_back(CUSTOMER_FRAMES, [*page.seen, *again.seen])
    operator_types = read_back(OPERATOR_FRAMES, ann.seen)
    assert {
        "session",
        "history",
        "earlier",
        "queue",
        "notice",
        "question",
        "reply",
        "handoff",
    } <= customer_types
    assert {"ready", "waiting", "taken", "said", "reply", "error", "released"} <= operator_types
