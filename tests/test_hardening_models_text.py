"""Text a model sends that is not valid Unicode (a lone surrogate, a NUL) never ends or hangs a session.

A JSON body may spell ``\\ud800``: Python reads it as a lone surrogate, which cannot be written as
UTF-8, stored, printed on a console or sent to a page. It becomes U+FFFD where the model's words enter
the runtime, so the console chat, the web session and the store go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from handoffs_runtime import SQLiteSessionStore, TeamPolicy, openai_model
from handoffs_runtime.agents.replies import read_reply
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.text import printable

from .cli_support import run_handoffs
from .fake_openai import QuietHandler, fake_openai, local_endpoint
from .support import run_sessions, texts
from .web_support import customer, served

BROKEN = "Hi \ud800 there\x00, and \udfff."
SHOWN = "Hi \ufffd there\ufffd, and \ufffd."
TO_SALES: dict[str, Any] = {
    "role": "assistant",
    "content": "Passing you on \ud83d",
    "tool_calls": [
        {
            "id": "call_\ud800",
            "type": "function",
            "function": {"name": "transfer_to_sales_agent", "arguments": '{"why": "\ud800\x00"}'},
        }
    ],
}


def test_a_console_chat_shows_a_reply_with_a_lone_surrogate_and_goes_on(tmp_path: Path) -> None:
    with fake_openai([BROKEN, "second answer"]) as server:
        result = run_handoffs(
            "chat", "--model", "m", "--base-url", server.url, "--store", str(tmp_path / "s.db"),
            "--no-colour", stdin="hi\nagain\n", env={"OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"ACME assistant › {SHOWN}" in result.stdout
    assert "ACME assistant › second answer" in result.stdout
    assert "can't answer" not in result.stdout


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_web_session_gets_the_reply_and_the_next_turn(tmp_path: Path, stream: bool) -> None:
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite3"))
    with fake_openai([BROKEN, TO_SALES, "Sales here."]) as model_server:
        model = openai_model("gpt-4o-mini", base_url=model_server.url, api_key="k", max_retries=0)
        team = acme_team(policy=TeamPolicy(stream=stream))
        async with served(tmp_path, team=team, model=model, store=store) as server:
            page, session = await customer(server)
            await page.until("question")
            replies = [m for m in await page.say("hello") if m["type"] == "reply"]
            assert [m["text"] for m in replies] == [SHOWN]
            replies = [m for m in await page.say("I want to buy") if m["type"] == "reply"]
            assert replies[-1]["text"] == "Sales here."
            await page.socket.close()
            stored = [e.text for e in await store.entries(session["session"])]
    assert SHOWN in stored and "Sales here." in stored


def test_read_reply_makes_every_string_of_a_response_well_formed() -> None:
    result = SimpleNamespace(
        content=[{"id": "c\ud800", "name": "look\x00up", "arguments": '{"a": "\udc00"}'}],
        thought="thinking \ud800",
    )
    reply = read_reply(result, 1000)
    assert not isinstance(reply, str)
    [call] = reply.calls
    assert (call.id, call.name, call.arguments) == ("c\ufffd", "look\ufffdup", '{"a": "\ufffd"}')
    assert reply.thought == "thinking \ufffd"
    for text in (call.id, call.name, call.arguments, reply.thought):
        text.encode()


def test_well_formed_keeps_valid_text_and_joins_split_pairs() -> None:
    from handoffs_runtime.text import well_formed  # new with this check: the tests above run without it

    assert well_formed("\ud83d\ude00 ok") == "\U0001f600 ok"
    text = "héllo, wörld"
    assert well_formed(text) is text
    assert printable("a\x00\ud800") == "a\\x00\ufffd"  # a stored surrogate cannot end a console either


def invalid_utf8(streamed: bool) -> tuple[str, bytes]:
    """An answer whose text holds bytes that are not UTF-8: its content type and body."""
    if not streamed:
        message = b'{"role": "assistant", "content": "caf\xff\xfe ok"}'
        return (
            "application/json",
            b'{"id": "c", "object": "chat.completion", "created": 1, "model": "m", '
            + (b'"choices": [{"index": 0, "message": ' + message + b', "finish_reason": "stop"}]}'),
        )
    chunk = b'{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", ' + (
        b'"choices": [{"index": 0, '
    )
    return "text/event-stream", (
        b"data: "
        + chunk
        + b'"delta": {"role": "assistant", "content": "caf\xff\xfe ok"}, "finish_reason": null}]}\n\n'
        b"data: " + chunk + b'"delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    )


@contextmanager
def answering_invalid_utf8() -> Iterator[str]:
    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.answer(200, *invalid_utf8(bool(self.read_json().get("stream"))))

    with local_endpoint(Handler) as url:
        yield url


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_invalid_utf8_from_the_endpoint_is_read_as_replacement_characters(stream: bool) -> None:
    with answering_invalid_utf8() as url:
        model = openai_model("m", base_url=url, api_key="k", max_retries=0)
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "again"]})
        await run_sessions(acme_team(policy=TeamPolicy(stream=stream)), channel, model=model)
    assert texts(channel) == [("TriageAgent", "caf\ufffd\ufffd ok")] * 2
