"""Requests a real OpenAI-compatible server accepts, learnt per endpoint, and its answers read by us.

What OpenAI accepts, other servers may refuse, and the ``openai`` client sends the OpenAI form:

- an assistant message with tool calls has ``"content": null``; llama.cpp's Python server answers 500 to
  every call after a tool call for it. With ``tool_call_content="auto"`` (the default) such a message is
  sent with ``""``, which OpenAI accepts too, so probing costs no refusal; a server that refuses ``""``
  gets the request again with ``null``, and ``null`` from then on. ``"empty"`` always sends ``""``,
  ``"null"`` always ``null``.
- streamed requests ask for token usage (``stream_options.include_usage``), so streamed turns count
  tokens; a server that refuses the field (4xx) gets the request again without it, and never again.

What is learnt is kept per endpoint for the process (see :mod:`.capabilities`), so nothing the server
refused is sent to it a second time. Answers go through
:mod:`~handoffs_runtime.models.responses` (legacy ``function_call``, truncated streams).

It is an httpx transport wrapping the real one: it sees every request of the client, streamed or not,
and copies nothing of the client.
"""

from __future__ import annotations

import json
import logging
import urllib.request
import zlib
from collections.abc import Callable
from typing import Any

import httpx2

from handoffs_runtime.errors import ModelProtocolError
from handoffs_runtime.models.capabilities import EndpointCapabilities, ToolCallContent
from handoffs_runtime.models.failures import is_context_overflow
from handoffs_runtime.models.responses import CheckedStream, fix_completion

logger = logging.getLogger("handoffs_runtime")

Adapt = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""A change to a request body, or ``None`` when it does not apply to that body."""

MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""The most of a non-streamed answer that is read: far above any reply the loop keeps (it cuts replies at
the policy's ``max_reply_chars``), far below what would strain the process."""
MAX_ERROR_BYTES = 64 * 1024
"""The most of an error's body that is read; the rest is cut (the client only quotes its message)."""

ServerCompat = EndpointCapabilities
"""The former name of :class:`~handoffs_runtime.models.capabilities.EndpointCapabilities`."""

__all__ = ["CompatTransport", "ServerCompat", "ToolCallContent", "endpoint_transport"]


def _with_null_content(body: dict[str, Any]) -> dict[str, Any] | None:
    """``body`` with ``null`` for the ``""`` content of assistant tool-call messages; ``None`` if none."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    fixed = [
        {**m, "content": None}
        if isinstance(m, dict)
        and m.get("role") == "assistant"
        and m.get("tool_calls")
        and m.get("content") == ""
        else m
        for m in messages
    ]
    if all(a is b for a, b in zip(fixed, messages, strict=True)):
        return None
    return {**body, "messages": fixed}


def _with_empty_content(body: dict[str, Any]) -> dict[str, Any] | None:
    """``body`` with ``""`` for the null content of assistant tool-call messages; ``None`` if it had none."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    fixed = [
        {**m, "content": ""}
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("content", "") is None
        else m
        for m in messages
    ]
    if all(a is b for a, b in zip(fixed, messages, strict=True)):
        return None
    return {**body, "messages": fixed}


def _without_stream_options(body: dict[str, Any]) -> dict[str, Any] | None:
    if "stream_options" not in body:
        return None
    return {k: v for k, v in body.items() if k != "stream_options"}


class CompatTransport(httpx2.AsyncBaseTransport):
    """Adapts chat-completion requests to what the endpoint accepts, and reads the answers (see module)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, compat: EndpointCapabilities | None = None) -> None:
        self._inner = inner
        self.compat = compat if compat is not None else EndpointCapabilities()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = _chat_body(request)
        if body is None:
            return await self._inner.handle_async_request(request)
        sent = self._adapted(body)
        response = await self._send(request, body, sent)
        for change, learn in await self._fallbacks(response):
            retry = change(sent)
            if retry is None:
                continue
            await response.aclose()
            logger.warning(
                "the model server refused a request (%d); sending it adapted", response.status_code
            )
            sent = retry
            response = await self._send(request, body, sent)
            if response.status_code < 400:
                learn()
                break
        return await _read(response, streamed=bool(sent.get("stream")))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def _adapted(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.compat.empty_content:
            body = _with_empty_content(body) or body
        if body.get("stream") and self.compat.usage_in_streams and "stream_options" not in body:
            body = {**body, "stream_options": {"include_usage": True}}
        return body

    async def _fallbacks(self, response: httpx2.Response) -> list[tuple[Adapt, Callable[[], None]]]:
        """What the server may have refused in a request it answered ``response`` to, in the order it is
        tried again without it; nothing when the refusal is not about the form of the request."""
        status = response.status_code
        if status < 400 or status in (401, 403, 404, 408, 429):
            return []
        if is_context_overflow((await response.aread()).decode(errors="replace")):
            return []  # too long as it is: no other form of it is shorter
        tries: list[tuple[Adapt, Callable[[], None]]] = []
        if self.compat.tool_call_content == "auto":
            tries.append((_with_null_content, self._learn_null_content))
        if status < 500 and self.compat.usage_in_streams:
            tries.append((_without_stream_options, self._learn_no_stream_options))
        return tries

    def _learn_null_content(self) -> None:
        logger.warning('the model server refuses "" beside tool calls: sending null content from now on')
        self.compat.tool_call_content = "null"

    def _learn_no_stream_options(self) -> None:
        logger.warning("the model server refuses stream_options: streamed calls will not report usage")
        self.compat.usage_in_streams = False

    async def _send(
        self, request: httpx2.Request, body: dict[str, Any], sent: dict[str, Any]
    ) -> httpx2.Response:
        """Send ``sent`` as ``request``, asking for an unencoded answer (whose size is what is read); an
        error's body is read at once, cut at ``MAX_ERROR_BYTES``, so it can be read again."""
        request.headers["accept-encoding"] = "identity"
        if sent is body:
            response = await self._inner.handle_async_request(request)
        else:
            headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
            adapted = httpx2.Request(
                request.method, request.url, headers=headers, json=sent, extensions=request.extensions
            )
            response = await self._inner.handle_async_request(adapted)
        if response.status_code < 300:
            return response
        return _replayed(response, await read_bounded(response, MAX_ERROR_BYTES, cut=True))


def _chat_body(request: httpx2.Request) -> dict[str, Any] | None:
    """The JSON body of a chat-completions request, or ``None`` for anything else (passed on untouched)."""
    if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    return body if isinstance(body, dict) else None


async def _read(response: httpx2.Response, *, streamed: bool) -> httpx2.Response:
    """The answer as the client gets it: a 2xx body read by the project (see ``responses``), and never
    more of any body than a bound (an error's beyond ``MAX_ERROR_BYTES`` is cut, an answer's beyond
    ``MAX_ANSWER_BYTES`` is a failure), so a server cannot fill the memory with one answer."""
    encoded = response.headers.get("content-encoding", "identity") != "identity"
    if streamed and response.status_code < 300:
        if encoded or "text/event-stream" not in response.headers.get("content-type", ""):
            return response  # asked for identity (see ``_send``): a server that encodes anyway is not read
        return httpx2.Response(
            response.status_code,
            headers=_identity(response),
            stream=CheckedStream(_stream_of(response)),
            extensions=response.extensions,
        )
    if response.status_code >= 300:
        return response  # its body is already read, cut (see ``_send``)
    raw = await read_bounded(response, MAX_ANSWER_BYTES)
    text = raw.decode("utf-8", "replace")  # invalid UTF-8 is read as U+FFFD, not refused
    try:
        data = json.loads(text)
    except ValueError:
        return _replayed(response, raw)
    repaired = fix_completion(data) or "\ufffd" in text
    return _replayed(response, json.dumps(data).encode() if repaired else raw)


async def read_bounded(response: httpx2.Response, limit: int, *, cut: bool = False) -> bytes:
    """At most ``limit`` bytes of ``response``'s body, decoded (gzip and deflate, also bounded): the rest
    is left unread and the connection closed. Past the limit: the first ``limit`` bytes when ``cut``,
    else :class:`~handoffs_runtime.errors.ModelProtocolError`."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in _DECODERS:
        await response.aclose()
        raise ModelProtocolError(f"the model server's answer is encoded as {encoding!r}, which is not read")
    decoder = _DECODERS[encoding]()
    body = bytearray()
    try:
        async for chunk in response.aiter_raw():
            body += decoder.decompress(chunk, limit + 1 - len(body)) if decoder else chunk
            if len(body) > limit:
                if cut:
                    return bytes(body[:limit])
                raise ModelProtocolError(f"the model server's answer is longer than {limit:,} bytes")
    finally:
        await response.aclose()
    return bytes(body)


def _no_decoder() -> None:
    return None


def _gzip() -> zlib._Decompress:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)


def _deflate() -> zlib._Decompress:
    return zlib.decompressobj()


_DECODERS: dict[str, Callable[[], zlib._Decompress | None]] = {
    "identity": _no_decoder,
    "": _no_decoder,
    "gzip": _gzip,
    "deflate": _deflate,
}


def _identity(response: httpx2.Response) -> list[tuple[str, str]]:
    """The headers of a body passed on decoded: no content encoding, no length (it may differ)."""
    drop = ("content-length", "content-encoding")
    return [(k, v) for k, v in response.headers.multi_items() if k.lower() not in drop]


def _stream_of(response: httpx2.Response) -> httpx2.AsyncByteStream:
    stream = response.stream
    if not isinstance(stream, httpx2.AsyncByteStream):  # pragma: no cover - an async transport's body
        raise TypeError(f"expected an async byte stream, got {type(stream).__name__}")
    return stream


def _replayed(response: httpx2.Response, content: bytes) -> httpx2.Response:
    return httpx2.Response(
        response.status_code, headers=_identity(response), content=content, extensions=response.extensions
    )


def endpoint_transport(base_url: str | None, compat: EndpointCapabilities) -> CompatTransport:
    """A transport to ``base_url`` (through the proxy the environment names for it, as httpx would)."""
    url = httpx2.URL(base_url or "https://api.openai.com/v1")
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if proxy and urllib.request.proxy_bypass(url.host):
        proxy = None
    return CompatTransport(httpx2.AsyncHTTPTransport(proxy=proxy), compat)
