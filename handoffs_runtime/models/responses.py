"""A model server's answers, read by the project before the client sees them.

The ``openai`` client and autogen-ext's model client trust a server to answer as OpenAI does. Real
OpenAI-compatible servers do not, and two of their habits made every routed turn fail:

- a tool call that also carries the legacy ``function_call`` field: autogen-ext refuses the whole answer
  (``ValueError: function_call is deprecated``). Here it is dropped when ``tool_calls`` is there, and
  turned into a tool call when it is alone;
- a stream that ends without a finish reason and without ``[DONE]`` (a server that cannot stream what
  the model chose): the client would read it as an empty answer, and the person would be asked to put
  it another way. Here it raises :class:`~handoffs_runtime.errors.ModelProtocolError`: a failed call.

Both work on the bytes of the answer (see :class:`~handoffs_runtime.models.compat.CompatTransport`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from handoffs_runtime.errors import ModelProtocolError

_legacy_ids = itertools.count(1)

MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest line of a stream that is read: one event, far longer than any chunk a server sends."""

TRUNCATED_STREAM = "the model server's stream ended before the answer did (no finish reason, no [DONE])"


def fix_completion(data: object) -> bool:
    """Repair a chat completion (parsed JSON) in place; whether anything changed."""
    changed = False
    for choice in _choices(data):
        message = choice.get("message")
        if isinstance(message, dict) and _fix_legacy_call(message):
            changed = True
            if message.get("tool_calls"):
                choice["finish_reason"] = "tool_calls"
        if choice.get("finish_reason") == "function_call":
            choice["finish_reason"] = "tool_calls"
            changed = True
    return changed


def fix_chunk(data: object) -> bool:
    """Repair one streamed chunk in place; whether anything changed.

    A delta's legacy ``function_call`` beside ``tool_calls`` goes; a ``function_call`` finish reason
    (which autogen-ext refuses) becomes ``tool_calls``.
    """
    changed = False
    for choice in _choices(data):
        delta = choice.get("delta")
        if isinstance(delta, dict) and "function_call" in delta and delta.get("tool_calls"):
            del delta["function_call"]
            changed = True
        if choice.get("finish_reason") == "function_call":
            choice["finish_reason"] = "tool_calls"
            changed = True
    return changed


def _choices(data: object) -> list[dict[str, Any]]:
    choices = data.get("choices") if isinstance(data, dict) else None
    return [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []


def _fix_legacy_call(message: dict[str, Any]) -> bool:
    if "function_call" not in message:
        return False
    legacy = message.pop("function_call")
    if not message.get("tool_calls") and isinstance(legacy, dict) and legacy.get("name"):
        args = legacy.get("arguments")
        function = {
            "name": legacy["name"],
            "arguments": args if isinstance(args, str) else json.dumps(args or {}),
        }
        message["tool_calls"] = [
            {"id": f"call_legacy_{next(_legacy_ids)}", "type": "function", "function": function}
        ]
    return True


class CheckedStream(httpx2.AsyncByteStream):
    """A server-sent-events body passed on line by line, chunks repaired, and its end checked.

    The stream must say it is complete (a finish reason or ``[DONE]``); one that just stops raises
    :class:`~handoffs_runtime.errors.ModelProtocolError` where the client would have seen its end, and so
    does a line longer than ``MAX_LINE_BYTES`` (a stream with no line breaks is not held in memory).
    """

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner
        self.complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = b""
        async for piece in self._inner:
            pending += piece
            *lines, pending = pending.split(b"\n")
            if len(pending) > MAX_LINE_BYTES:
                raise ModelProtocolError(
                    f"a line of the model server's stream is longer than {MAX_LINE_BYTES:,} bytes"
                )
            if lines:
                yield b"".join(self._line(line) + b"\n" for line in lines)
        if pending:
            yield self._line(pending)
        if not self.complete:
            raise ModelProtocolError(TRUNCATED_STREAM)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def _line(self, line: bytes) -> bytes:
        """The line as the client gets it; a ``data:`` line is read for completeness and repaired."""
        if not line.startswith(b"data:"):
            return line
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.complete = True
            return line
        text = payload.decode("utf-8", "replace")  # invalid UTF-8 is read as U+FFFD, not refused
        try:
            data = json.loads(text)
        except ValueError:
            return line  # the client reports what it cannot parse
        if any(choice.get("finish_reason") for choice in _choices(data)):
            self.complete = True
        if not fix_chunk(data) and "\ufffd" not in text:  # valid UTF-8: passed on as it came
            return line
        end = b"\r" if line.endswith(b"\r") else b""
        return b"data: " + json.dumps(data).encode() + end
