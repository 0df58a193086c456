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
    ``end_after``: after that many text deltas, end the stream there (no finish reason, no ``[DONE]``).
    They apply to the next streamed answer with text only, then reset.
    ``endless``: the next streamed text answer is that many characters instead, made as they are sent
    (in 8 Ki-character deltas, so a test can ask for hundreds of megabytes); ``sent_chars`` counts the
    text sent, and ``hung_up`` is set when the client closes the connection before the end.

    Quirks of real servers, each off by default (a refused request uses no scripted answer):
    ``legacy_function_call``: a plain tool-call answer also carries the legacy ``function_call``;
    ``streams_tool_calls=False``: a streamed tool-call answer is ``200`` and then nothing (no data, no
    ``[DONE]``); ``refuses_null_content``: 500 to a request with an assistant ``"content": null``;
    ``refuses_empty_content``: 400 to a request with an assistant ``"content": ""`` beside tool calls;
    ``refuses_stream_options``: 400 to a request with ``stream_options``; ``context_chars``: 400
    ``context_length_exceeded`` to a request whose messages hold more characters than that.
    Streams report usage only when asked (``stream_options.include_usage``), as OpenAI does.
    ``statuses`` is the HTTP status of every answer, in order.
    """

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self._lock = threading.Lock()
        self.url = ""
        self.pause_after: int | None = None
        self.resume = threading.Event()
        self.cut_after: int | None = None
        self.end_after: int | None = None
        self.deltas_sent = 0
        self.endless: int | None = None
        self.sent_chars = 0
        self.hung_up = threading.Event()
        self.legacy_function_call = False
        self.streams_tool_calls = True
        self.refuses_null_content = False
        self.refuses_stream_options = False
        self.refuses_empty_content = False
        self.context_chars: int | None = None

    def next_answer(self, request: dict[str, Any]) -> Answer:
        with self._lock:
            self.requests.append(request)
            refused = self._refusal(request)
            if refused is not None:
                return refused
            if not self.answers:
                return 599
            return self.answers.pop(0)

    def _refusal(self, request: dict[str, Any]) -> dict[str, Any] | None:
        messages = request.get("messages") or []
        if self.refuses_null_content and any(
            m.get("role") == "assistant" and m.get("content", "") is None for m in messages
        ):
            return _error(500, "1 validation error: messages.1.content: Input should be a valid string")
        if self.refuses_empty_content and any(
            m.get("role") == "assistant" and m.get("tool_calls") and m.get("content") == "" for m in messages
        ):
            return _error(400, "messages: an assistant message with tool_calls must have null content")
        if self.refuses_stream_options and "stream_options" in request:
            return _error(400, "Unrecognized request argument supplied: stream_options")
        if self.context_chars is not None and len(json.dumps(messages)) > self.context_chars:
            message = (
                "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
                "(2100 in the messages, None in the completion). Please reduce the length of the messages."
            )
            return _error(400, message, code="context_length_exceeded")
        return None


def _error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """A refusal: the HTTP status and an OpenAI-style error body (``_status`` marks it)."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"_status": status, "error": {"message": message, "type": kind, "code": code}}


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


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler for a test's endpoint: it logs nothing (the test's output stays readable), reads
    a request's body whole and answers one with a known length."""

    def log_message(self, *args: Any) -> None:
        pass

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def read_json(self) -> Any:
        return json.loads(self.read_body())

    def answer(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def local_endpoint(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) in a thread until the block ends; yields the base
    URL an OpenAI client is given (``.../v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            answer = server.next_answer(body)
            n = len(server.requests)
            if isinstance(answer, int):
                self._send(answer, {"error": {"message": "scripted failure", "type": "server_error"}})
                return
            if isinstance(answer, dict) and "_status" in answer:
                self._send(answer["_status"], {"error": answer["error"]})
                return
            message = _message(answer, n)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            base = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": body.get("model", "m")}
            if not body.get("stream"):
                if server.legacy_function_call and message.get("tool_calls"):
                    message = {**message, "function_call": message["tool_calls"][0]["function"]}
                choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                self._send(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
                return
            if message.get("tool_calls") and not server.streams_tool_calls:
                server.statuses.append(200)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()  # and nothing more: the server failed after its headers
                return
            server.statuses.append(200)
            knobs = (server.pause_after, server.cut_after, server.end_after)
            pause, cut, end = knobs if message.get("content") else (None, None, None)
            if message.get("content"):
                server.pause_after = server.cut_after = server.end_after = None
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if cut is not None:  # promise more than is sent, so the client sees a broken stream
                self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            chunk = {**base, "object": "chat.completion.chunk"}
            endless = server.endless if message.get("content") else None
            if endless is not None:
                server.endless = None
                self._endless(chunk, endless)
                return
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
                if i - 1 == end:
                    return
                server.deltas_sent += bool(delta.get("content"))  # counted before the client can see it
                self._event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                self.wfile.flush()
            self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                self._event({**chunk, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")

        def _endless(self, chunk: dict[str, Any], chars: int) -> None:
            """``chars`` characters of text, made as they are sent, until the end or the client hangs up."""
            piece = 8 * 1024
            try:
                while server.sent_chars < chars:
                    text = "x" * min(piece, chars - server.sent_chars)
                    self._event({**chunk, "choices": [{"index": 0, "delta": {"content": text}}]})
                    server.sent_chars += len(text)
                stop = {"index": 0, "delta": {}, "finish_reason": "stop"}
                self._event({**chunk, "choices": [stop]})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except OSError:
                server.hung_up.set()

        def _event(self, data: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())

        def _send(self, status: int, data: dict[str, Any]) -> None:
            server.statuses.append(status)
            self.answer(status, "application/json", json.dumps(data).encode())

    return Handler


@contextmanager
def fake_openai(answers: list[Answer]) -> Iterator[FakeOpenAI]:
    """Serve ``answers`` in order on 127.0.0.1 (a free port); ``server.url`` is the base URL."""
    state = FakeOpenAI(answers)
    with local_endpoint(_handler(state)) as state.url:
        yield state
