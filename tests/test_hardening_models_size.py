"""A model server cannot fill the memory with one answer: no body is read past a bound.

An answer of tens of megabytes (a plain 200, an error's body, a stream with no line breaks) is read up to
its bound and the connection closed; the person gets a plain sentence and the session goes on. What the
server managed to send before the client hung up shows the body was not read whole.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from handoffs_runtime import TeamPolicy, openai_model
from handoffs_runtime.agents.ai import MODEL_ERROR_REPLY
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.teams.acme import acme_team

from .fake_openai import QuietHandler, local_endpoint
from .support import run_sessions, texts

HUGE = 128 * 1024 * 1024  # four times the most of an answer that is read
PIECE = b"x" * (1024 * 1024)


@dataclass
class Flood:
    """Answers ``status`` with ``kind`` and a body of ``HUGE`` bytes (``head`` then filler), then a
    plain answer to every later request; ``sent`` counts the flood's bytes that left the server."""

    status: int
    kind: str
    head: bytes
    url: str = ""
    sent: int = 0
    floods: int = 1
    done: threading.Event = field(default_factory=threading.Event)


PLAIN = b'{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, ' + (
    b'"message": {"role": "assistant", "content": "Back again."}, "finish_reason": "stop"}]}'
)

STREAMED_KIND = "text/event-stream"
STREAMED = (
    b'data: {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": '
    b'0, "delta": {"role": "assistant", "content": "Back again."}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


@contextmanager
def flooding(flood: Flood) -> Iterator[Flood]:
    class Handler(QuietHandler):
        def do_POST(self) -> None:
            streamed = bool(self.read_json().get("stream"))
            if flood.floods <= 0:
                self.answer(200, *((STREAMED_KIND, STREAMED) if streamed else ("application/json", PLAIN)))
                return
            flood.floods -= 1
            self.send_response(flood.status)
            self.send_header("Content-Type", flood.kind)
            self.send_header("Content-Length", str(HUGE))
            self.end_headers()
            try:
                self.wfile.write(flood.head)
                flood.sent += len(flood.head)
                while flood.sent < HUGE:
                    self.wfile.write(PIECE)
                    flood.sent += len(PIECE)
            except OSError:
                pass  # the client hung up: what it read is counted
            finally:
                flood.done.set()
                self.close_connection = True

    with local_endpoint(Handler) as flood.url:
        yield flood


FLOODS = {
    "answer": (200, "application/json", b'{"id": "c", "choices": [{"message": {"content": "', False),
    "error": (400, "application/json", b'{"error": {"message": "', False),
    "stream": (200, "text/event-stream", b'data: {"choices": [{"delta": {"content": "', True),
}


@pytest.mark.parametrize("case", sorted(FLOODS))
async def test_a_huge_answer_is_not_read_whole_and_the_session_goes_on(case: str) -> None:
    status, kind, head, stream = FLOODS[case]
    with flooding(Flood(status, kind, head)) as flood:
        model = openai_model("m", base_url=flood.url, api_key="k", max_retries=0, timeout=60)
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "hello again"]})
        await run_sessions(acme_team(policy=TeamPolicy(stream=stream)), channel, model=model)
        assert flood.done.wait(10)
    (_, first), second = texts(channel)
    # A plain answer is a failure; a stream is asked again without streaming, and answered.
    assert first == ("Back again." if stream else first) and "x" * 100 not in first
    assert first.startswith("Sorry") or stream
    assert second == ("TriageAgent", "Back again.")
    assert flood.sent < HUGE // 2, f"{flood.sent:,} of {HUGE:,} bytes were sent: the body was read whole"


async def test_a_cut_error_body_is_still_read_for_what_it_says() -> None:
    with flooding(Flood(500, "application/json", b'{"error": {"message": "')) as flood:
        model = openai_model("m", base_url=flood.url, api_key="k", max_retries=0, timeout=60)
        channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
        await run_sessions(acme_team(), channel, model=model)
    [(_, said)] = texts(channel)
    assert said != MODEL_ERROR_REPLY and "fails on this request" in said
