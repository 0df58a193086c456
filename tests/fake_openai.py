"""A local OpenAI-compatible chat-completions server for tests: scripted answers, plain or streamed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = str | list[tuple[str, dict[str, Any]]] | int | dict[str, Any]
"""Text, tool calls as (name, arguments), an HTTP error status to return, or a raw assistant message
(a dict sent as it is, to script malformed answers)."""


class FakeOpenAI:
    """Scripted answers. Streamed text goes out in 4-character deltas; two knobs for streaming tests:

    ``pause_after``: after that many text deltas, wait until ``resume`` is set before sending the rest
    (so a test can see the first words arrive while the model is still "writing");
    ``cut_after``: after that many text deltas, close the connection without finishing the stream.
    Both apply to the next streamed answer with text only, then reset.
    """

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.url = ""
        self.pause_after: int | None = None
        self.resume = threading.Event()
        self.cut_after: int | None = None
        self.deltas_sent = 0

    def next_answer(self, request: dict[str, Any]) -> Answer:
        with self._lock:
            self.requests.append(request)
            if not self.answers:
                return 599
            return self.answers.pop(0)


def _message(answer: Answer, n: int) -> dict[str, Any]:
    if isinstance(answer, dict):
        return answer
    if isinstance(answer, str):
        return {"role": "assistant", "content": answer}
    calls = [
        {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(answer)  # type: ignore[union-attr]
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            answer = server.next_answer(body)
            n = len(server.requests)
            if isinstance(answer, int):
                self._send(answer, {"error": {"message": "scripted failure", "type": "server_error"}})
                return
            message = _message(answer, n)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            base = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": body.get("model", "m")}
            if not body.get("stream"):
                choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                self._send(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
                return
            pause, cut = (server.pause_after, server.cut_after) if message.get("content") else (None, None)
            if message.get("content"):
                server.pause_after = server.cut_after = None
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if cut is not None:  # promise more than is sent, so the client sees a broken stream
                self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            chunk = {**base, "object": "chat.completion.chunk"}
            deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
            if message.get("content"):
                text = message["content"]
                deltas += [{"content": text[i : i + 4]} for i in range(0, len(text), 4)]
            for i, call in enumerate(message.get("tool_calls") or []):
                deltas.append({"tool_calls": [{"index": i, **call}]})
            for i, delta in enumerate(deltas):
                if i - 1 == pause:
                    server.resume.wait(30)
                if i - 1 == cut:
                    self.close_connection = True
                    return
                server.deltas_sent += bool(delta.get("content"))  # counted before the client can see it
                self._event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                self.wfile.flush()
            self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            self._event({**chunk, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")

        def _event(self, data: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())

        def _send(self, status: int, data: dict[str, Any]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def fake_openai(answers: list[Answer]) -> Iterator[FakeOpenAI]:
    """Serve ``answers`` in order on 127.0.0.1 (a free port); ``server.url`` is the base URL."""
    state = FakeOpenAI(answers)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
