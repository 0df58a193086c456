"""``handoffs serve`` at the WebSocket level: a real uvicorn server on a free loopback port."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from autogen_core.models import LLMMessage
from websockets.exceptions import ConnectionClosed

from handoffs_runtime import (
    AgentSpec,
    TeamPolicy,
    TeamSpec,
    openai_model,
    requires_approval,
    tool_call,
)
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.customers import HELD_ELSEWHERE
from handoffs_runtime.web.operators import APPROVED
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL
from handoffs_runtime.web.waiting import PERSON_JOINED

from .fake_openai import fake_openai
from .web_support import (
    TOKEN,
    approve,
    client,
    customer,
    customer_back,
    escalated,
    escalation_in_view,
    http_get,
    operator,
    served,
    waiting_list,
)

TURN = {
    "type": "question",
    "session": None,
    "prompt": "you",
    "person": "customer",
    "turn": True,
    "choices": [],
}


ESCALATION_PROMPT = (
    "HumanAgent input (/handoff AGENT hands the conversation back "
    "(AGENT: IssuesAndRepairsAgent, SalesAgent, TriageAgent))"
)
"""What the operator is asked when the human agent takes a conversation (the way back included)."""


def kinds(messages: list[dict[str, object]]) -> list[object]:
    return [m["type"] for m in messages]


async def test_the_refund_path_over_a_websocket_in_order(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page, session = await customer(server)
        assert session["type"] == "session" and len(session["session"]) == 32 and len(session["key"]) == 64
        sid = session["session"]
        team = acme_team()
        assert await page.recv() == {"type": "history", "start": 0, "items": []}
        assert await page.recv() == {"type": "suggestions", "suggestions": list(team.suggestions)}
        greeting = {"type": "reply", "agent": "TriageAgent", "label": "ACME assistant", "text": team.greeting}
        assert await page.recv() == {**greeting, "session": sid}  # the page never opens blank
        turn = await page.recv()
        assert len(turn.pop("id")) == 16  # which question it is: a yes/no answer names it
        assert turn == {**TURN, "session": sid}
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        first = await page.until("question")
        assert kinds(first) == ["said", "handoff", "reply", "question"]
        assert first[1]["target"] == "IssuesAndRepairsAgent"
        assert first[2]["agent"] == "IssuesAndRepairsAgent"
        await page.send({"type": "say", "text": "yes", **page.answering()})
        second = await page.until("notice", text=WAITING_FOR_APPROVAL)  # a refund is the operator's
        assert await approve(server, sid) == {
            "session": sid,
            "kind": "approval",
            "prompt": 'Allow execute_refund(item_id="item_132612938", '
            'reason="I want a refund for my shoes")? y/n',
        }
        second += await page.until("question")
        assert kinds(second) == [
            "said",
            "tool_started",
            "tool_started",
            "notice",
            "notice",
            "reply",
            "question",
        ]
        assert second[1]["text"] == "ACME repairs is working on your request…"
        assert second[4]["text"] == APPROVED
        assert second[5]["text"] == "Done: look up item → item_132612938; execute refund → success."
        assert all(m["session"] == sid for m in first + second)
        await page.socket.close()


async def test_a_malformed_message_gets_one_clear_error_and_a_close_code(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        for bad, error, code in [
            ("{not json", "malformed message: expected one JSON object", 1008),
            ("[1, 2]", "malformed message: expected one JSON object", 1008),
            (b"\x00\x01", "malformed message: expected one JSON object", 1003),
            ({"type": "shout"}, "invalid message", 1008),
            ({"type": "hello", "extra": 1}, "invalid message", 1008),
            ({"type": "hello", "session": "../../etc/passwd", "key": "x"}, "invalid message", 1008),
            ({"type": "say", "text": "x" * 4001}, "invalid message: say.text: String should have", 1008),
        ]:
            async with client(server) as page:
                await page.send(bad)
                reply = await page.recv()
                assert reply["type"] == "error" and reply["message"].startswith(error), (bad, reply)
                assert "passwd" not in reply["message"]  # the browser's input is not echoed back
                with pytest.raises(ConnectionClosed) as closed:
                    await page.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == code, bad


async def test_a_message_out_of_place_gets_an_error_and_the_connection_goes_on(tmp_path: Path) -> None:
    async with served(tmp_path) as server, client(server) as page:
        await page.send({"type": "say", "text": "hi"})
        assert await page.recv() == {"type": "error", "message": "send hello first"}
        await page.send({"type": "hello"})
        assert (await page.recv())["type"] == "session"
        await page.send({"type": "hello"})
        assert (await page.until("error"))[-1]["message"] == "this connection is in a session already"


async def test_a_ten_megabyte_message_closes_only_that_connection(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        async with client(server) as page:
            with pytest.raises(ConnectionClosed) as closed:  # while sending, or right after
                await page.send(json.dumps({"type": "say", "text": "x" * (10 * 1024 * 1024)}))
                await page.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
        other, session = await customer(server)  # the server is fine
        assert session["type"] == "session"
        await other.socket.close()


def flipped(key: str) -> str:
    return key[:-1] + ("1" if key[-1] == "0" else "0")


async def test_another_sessions_id_gets_an_error_and_nothing_of_that_session(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        alice, session = await customer(server)
        await alice.until("question")
        await alice.send({"type": "say", "text": "my secret order number is 4711"})
        await alice.until("question")
        for hello in [
            {"type": "hello", "session": session["session"]},
            {"type": "hello", "session": session["session"], "key": "0" * 64},
            {"type": "hello", "session": session["session"], "key": flipped(session["key"])},
        ]:
            async with client(server) as mallory:
                await mallory.send(hello)
                reply = await mallory.recv()
                assert reply == {"type": "error", "message": "unknown session, or not yours: start a new one"}
                with pytest.raises(ConnectionClosed):
                    await mallory.recv()
                assert "4711" not in json.dumps(mallory.seen)
        await alice.socket.close()


async def test_writing_out_of_turn_is_refused(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page, _ = await customer(server)
        await page.until("question")
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        await page.send({"type": "say", "text": "and another thing"})
        got = await page.until("question")
        errors = [m for m in got if m["type"] == "error"]
        assert errors == [{"type": "error", "message": "please wait for the answer before writing again"}]
        await page.socket.close()


async def test_a_reload_resumes_the_session_from_the_store(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page, session = await customer(server)
        await page.until("question")
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        await page.until("question")
        await page.socket.close()
        again, resumed = await customer_back(server, session)
        assert resumed == session
        history = await again.recv()
        assert kinds(history["items"]) == ["said", "handoff", "reply"]
        assert history["items"][0]["text"] == "I want a refund for my shoes"
        assert (await again.recv())["type"] == "question"  # the question the closed page was asked
        await again.send({"type": "say", "text": "yes", **again.answering()})
        await again.until("notice", text=WAITING_FOR_APPROVAL)
        await approve(server, session["session"])
        got = await again.until("reply")
        assert "refund" in got[-1]["text"]
        await again.socket.close()


async def test_an_operator_takes_answers_and_hands_back(tmp_path: Path) -> None:
    """Which session waits and who took it is kept in the store too, for every server on it."""
    async with served(tmp_path) as server:
        store = server.hub.store
        ann = await operator(server)
        ready = await ann.recv()
        assert ready == {
            "type": "ready",
            "agents": ["TriageAgent", "SalesAgent", "IssuesAndRepairsAgent"],
            "labels": acme_team().labels,
        }
        assert await ann.recv() == {"type": "waiting", "sessions": []}
        page, sid = await escalated(server)
        [entry] = await waiting_list(ann, (sid, "escalation"))
        assert entry["last"] == "let me talk to a person" and entry["away"] is False
        assert isinstance(entry["waited"], int) and 0 <= entry["waited"] < 10
        [stored] = await store.operator_waits()
        assert (stored.session_id, stored.prompt, stored.taken_by) == (sid, ESCALATION_PROMPT, None)
        await ann.send({"type": "take", "session": sid})
        taken = (await ann.until("taken"))[-1]
        [stored] = await store.operator_waits()
        assert stored.session_id == sid and (stored.taken_by or "").startswith("operator-")
        assert kinds(taken["history"]) == ["said", "handoff"]
        assert taken["history"][0]["text"] == "let me talk to a person"
        assert taken["question"]["person"] == "operator"
        await waiting_list(ann)  # nobody else sees it waiting now
        assert (await page.until("notice"))[-1]["text"] == PERSON_JOINED
        lines = ["Hello, I am Ann. <b>How</b> can I help?", "One moment, I am looking at your account."]
        for line in lines:  # two in a row: the operator's question is open again at once
            await ann.send({"type": "say", "session": sid, "text": line})
            reply = (await page.until("reply"))[-1]
            assert reply["agent"] == "HumanAgent" and reply["text"] == line
            await ann.until("question", person="operator")
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        await ann.until("said", person="customer")
        assert [(m["person"], m["text"]) for m in ann.seen if m["type"] == "said"] == [
            *(("operator", line) for line in lines),
            ("customer", "I want a refund for my shoes"),
        ]
        assert [m["text"] for m in ann.seen if m["type"] == "reply"] == lines  # as the customer read them
        await ann.send({"type": "hand_back", "session": sid, "agent": "Nobody"})
        assert (await ann.until("error"))[-1]["message"].startswith(
            "unknown agent; choose one of: TriageAgent"
        )
        await ann.send({"type": "hand_back", "session": sid, "agent": "TriageAgent"})
        assert (await ann.until("released"))[-1] == {
            "type": "released",
            "session": sid,
            "text": "You handed the conversation back to ACME assistant.",
        }
        assert await store.operator_waits() == []
        back = await page.until("reply")
        handoffs = [(m["source"], m["target"]) for m in back if m["type"] == "handoff"]
        assert handoffs[0] == ("HumanAgent", "TriageAgent")
        await ann.send({"type": "say", "session": sid, "text": "too late"})
        assert (await ann.until("error"))[-1]["message"] == "take the session first"
        await page.socket.close()
        await ann.socket.close()


async def test_two_operators_never_take_the_same_session(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        ann, bob = await operator(server), await operator(server)
        page, sid = await escalated(server)
        for op in (ann, bob):
            await waiting_list(op, (sid, "escalation"))
        await asyncio.gather(*(op.send({"type": "take", "session": sid}) for op in (ann, bob)))
        outcomes = []
        for op in (ann, bob):
            await waiting_list(op)
            got = op.seen
            outcomes.append([m["type"] for m in got if m["type"] in ("taken", "error")])
        assert sorted(outcomes) == [["error"], ["taken"]]
        loser = bob if outcomes[0] == ["taken"] else ann
        assert [m["message"] for m in loser.seen if m["type"] == "error"] == [
            "another operator has already taken that session"
        ]
        await page.socket.close()
        for op in (ann, bob):
            await op.socket.close()


async def test_an_operator_who_leaves_puts_the_session_back_on_the_waiting_list(tmp_path: Path) -> None:
    async with escalation_in_view(tmp_path) as (server, ann, _, sid):
        await ann.send({"type": "take", "session": sid})
        await ann.until("taken")
        bob = await operator(server)
        await waiting_list(bob)
        await ann.socket.close()
        await waiting_list(bob, (sid, "escalation"))
        await bob.send({"type": "take", "session": sid})
        assert (await bob.until("taken"))[-1]["question"]["person"] == "operator"
        await bob.socket.close()


async def test_the_operator_console_and_the_sessions_view_need_the_token(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        for token, error in [
            ("wrong-token", "wrong operator token"),
            ("", "invalid message: hello.token: String should have at least 1 character"),
        ]:
            page = await operator(server, token)
            assert await page.recv() == {"type": "error", "message": error}
            with pytest.raises(ConnectionClosed):
                await page.recv()
        async with client(server, "/ws/operator") as page:
            await page.send({"type": "take", "session": "0" * 32})
            assert (await page.recv()) == {"type": "error", "message": "the operator token is required"}
        for token, error in [(None, "the operator token is required"), ("wrong", "wrong operator token")]:
            status, _, body = await asyncio.to_thread(http_get, server.url + "/api/sessions", token)
            assert (status, json.loads(body)) == (401, {"error": error})
        page, session = await customer(server)
        await page.until("question")
        await page.send({"type": "say", "text": "hello"})
        await page.until("question")
        status, _, body = await asyncio.to_thread(http_get, server.url + "/api/sessions", TOKEN)
        assert status == 200
        assert [s["session"] for s in json.loads(body)["sessions"]] == [session["session"]]
        url = f"{server.url}/api/sessions/{session['session']}"
        status, _, body = await asyncio.to_thread(http_get, url, TOKEN)
        assert status == 200 and kinds(json.loads(body)["items"]) == ["said", "reply"]
        await page.socket.close()


async def test_the_pages_are_served_from_the_package_with_a_strict_policy(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        for path, marker in [("/", b"chat.js"), ("/operator", b"operator.js"), ("/sessions", b"sessions.js")]:
            status, headers, body = await asyncio.to_thread(http_get, server.url + path)
            assert status == 200 and marker in body
            assert headers["content-security-policy"].startswith("default-src 'self'")
            assert b"http" not in body  # nothing is loaded from anywhere else
        status, _, _ = await asyncio.to_thread(http_get, server.url + "/static/chat.js")
        assert status == 200
        for path in ("/static/..%2F__init__.py", "/static/hub.py", "/static/%2e%2e%2fapp.py"):
            status, _, _ = await asyncio.to_thread(http_get, server.url + path)
            assert status == 404


async def test_a_streamed_reply_reaches_the_page_before_the_model_has_finished(tmp_path: Path) -> None:
    answer = "Hello! I am the ACME triage bot; how can I help?"
    with fake_openai([answer]) as model_server:
        model_server.pause_after = 2
        model = openai_model("gpt-4o-mini", base_url=model_server.url, api_key="k")
        team = acme_team(policy=TeamPolicy(stream=True))
        async with served(tmp_path, team=team, model=model) as server:
            page, _ = await customer(server)
            await page.until("question")
            await page.send({"type": "say", "text": "hi"})
            assert (await page.recv())["type"] == "said"
            first = await page.recv()
            assert first["type"] == "delta" and first["text"] == answer[:4]
            assert model_server.deltas_sent <= 2  # the model is still "writing"
            model_server.resume.set()
            rest = await page.until("reply")
            assert "".join(m["text"] for m in [first, *rest[:-1]]) == answer
            assert rest[-1]["text"] == answer
            await page.socket.close()


def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


async def test_an_operator_approves_and_refuses_tool_calls(tmp_path: Path) -> None:
    team = TeamSpec(
        name="shop",
        entry="Clerk",
        agents=[AgentSpec("Clerk", tools=[requires_approval(refund, person="operator")])],
    )
    results: list[object] = []

    def answer(text: str) -> Callable[[Sequence[LLMMessage], object], str]:
        def step(messages: Sequence[LLMMessage], tools: object) -> str:
            results.append(messages[-1].content[0].content)  # type: ignore[union-attr,index]
            return text

        return step

    model = ScriptedModel(
        [
            [tool_call("refund", {"order": "A1"})],
            answer("Your order A1 is refunded."),
            [tool_call("refund", {"order": "B2"})],
            answer("Sorry, I could not refund B2."),
        ]
    )
    async with served(tmp_path, team=team, model=model) as server:
        ann = await operator(server)
        page, session = await customer(server)
        sid = session["session"]
        for order, answer, result in [
            ("A1", "yes", "Your order A1 is refunded."),
            ("B2", "no", "Sorry, I could not refund B2."),
        ]:
            await page.until("question")
            await page.send({"type": "say", "text": f"please refund {order}"})
            prompt = f'Allow refund(order="{order}")? y/n'
            [entry] = await waiting_list(ann, (sid, "approval"))
            assert entry["prompt"] == prompt
            await ann.send({"type": "take", "session": sid})
            taken = (await ann.until("taken"))[-1]
            assert taken["question"]["choices"] == ["yes", "no"]
            await ann.send({"type": "say", "session": sid, "text": answer, **ann.answering()})
            await ann.until("released", session=sid)  # an approval answered: the agents carry on
            assert (await page.until("reply"))[-1]["text"] == result
        model.assert_done()
        assert results == ["refunded A1", "Refused: the operator did not approve running refund."]
        await page.socket.close()
        await ann.socket.close()


async def test_a_session_resumes_from_the_store_after_the_server_restarts(tmp_path: Path) -> None:
    """The key secret is kept in the store, not made from the token: a server started with a new token
    (as every start without a token file is) still knows its customers."""
    async with served(tmp_path) as server:
        page, session = await customer(server)
        await page.until("question")
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        await page.until("question")
        await page.socket.close()
    async with served(tmp_path, operator_token="another-operator-token-0123") as server:  # the same store
        again, resumed = await customer_back(server, session)
        assert resumed == session
        history = await again.recv()
        assert kinds(history["items"])[:3] == ["said", "handoff", "reply"]
        got = await again.until("question")
        assert not [m for m in got if m["type"] == "notice"]  # no retelling: the page shows the history
        await again.send({"type": "say", "text": "yes", **again.answering()})
        await again.until("notice", text=WAITING_FOR_APPROVAL)
        await approve(server, session["session"])
        reply = (await again.until("reply"))[-1]
        assert reply["agent"] == "IssuesAndRepairsAgent" and "refund" in reply["text"]
        await again.socket.close()


async def test_a_conversation_held_by_a_server_that_stopped_elsewhere_continues_when_its_lease_lapses(
    tmp_path: Path,
) -> None:
    """The page is asked to come back (1013) rather than shown an ended session it would forget."""
    async with served(tmp_path, idle_seconds=0.1) as server:
        page, session = await customer(server)
        await page.until("question")
        await page.say("I want a refund for my shoes")
        await page.socket.close()
        while server.hub.is_live(session["session"]):  # the page is gone: the session ends here
            await asyncio.sleep(0.05)
        conn = sqlite3.connect(tmp_path / "sessions.sqlite3")  # a server on another machine, then killed
        with conn:
            conn.execute(
                "INSERT INTO holders VALUES ('elsewhere', 4242, 'another-machine', ?)", (time.time() + 2,)
            )
            conn.execute("INSERT OR REPLACE INTO leases VALUES (?, 'elsewhere')", (session["session"],))
        conn.close()
        hello = {"type": "hello", "session": session["session"], "key": session["key"]}
        refused, _ = await customer(server, hello)
        assert await refused.recv() == {"type": "error", "message": HELD_ELSEWHERE}
        with pytest.raises(ConnectionClosed) as closed:
            await refused.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert [m["type"] for m in refused.seen] == ["session", "error"]  # no history, no ended session
        await asyncio.sleep(2)  # its lease lapses
        again, resumed = await customer(server, hello)
        assert resumed == session
        history = await again.recv()
        assert kinds(history["items"])[:3] == ["said", "handoff", "reply"]
        await again.until("question")
        await again.send({"type": "say", "text": "yes", **again.answering()})
        await again.until("notice", text=WAITING_FOR_APPROVAL)
        await approve(server, session["session"])
        assert "refund" in (await again.until("reply"))[-1]["text"]
        await again.socket.close()
