"""A streamed call that fails before its first word is asked once more without streaming.

Some servers stream text but cannot stream a tool call: llama.cpp's Python server answers ``200`` and
then ends the stream with nothing in it whenever the model picks a tool. The model had chosen a handoff;
without this, the person would read an apology (or, before truncated streams were failures, "put it
another way"). Asked again without streaming, the same server answers with the tool call, so the
handoff happens. Only failures that another form of the request may fix are tried again; a refused key,
an unreachable host or a context overflow fail the same either way and are raised at once.

What failed is remembered for the endpoint (``streams_tool_calls``, see :mod:`.capabilities`): a stream
that came back empty and a plain call that then answered with tool calls show that the server cannot
stream them, so from then on a call that offers tools is made without streaming at once, instead of
costing a thrown-away streamed call on every round.

A stream whose reader stops early (the tool loop does at the reply cap) is closed, connection and all,
rather than left open for a server that may go on sending without end (``ClosingStreamClient``, which
replaces a private method of autogen-ext's client, does that behind the fence).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

import httpx2
import openai
from autogen_core.models import CreateResult

from handoffs_runtime.errors import ModelProtocolError
from handoffs_runtime.models.capabilities import EndpointCapabilities
from handoffs_runtime.private.autogen_openai import ClosingStreamClient

logger = logging.getLogger("handoffs_runtime")

_STREAM_ONLY_ARGS = ("max_consecutive_empty_chunk_tolerance", "include_usage")


def worth_a_plain_try(exc: BaseException) -> bool:
    """Whether a streamed call that failed with ``exc`` may work without streaming."""
    if isinstance(exc, ModelProtocolError | httpx2.RemoteProtocolError | openai.InternalServerError):
        return True
    if isinstance(exc, openai.APIStatusError | openai.APIConnectionError):
        return False  # refused or unreachable: the same without streaming
    # An error event inside the stream (openai.APIError), or a chunk the client could not read.
    return isinstance(exc, openai.APIError | ValueError)


class StreamFallbackClient(ClosingStreamClient):
    """autogen-ext's OpenAI client whose ``create_stream`` falls back to ``create`` once, before the
    first word (see the module docstring); ``endpoint`` holds what its endpoint can do."""

    def __init__(self, *, endpoint: EndpointCapabilities | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.endpoint = endpoint if endpoint is not None else EndpointCapabilities()

    async def create_stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[str | CreateResult, None]:
        plain = {k: v for k, v in kwargs.items() if k not in _STREAM_ONLY_ARGS}
        offers_tools = bool(kwargs.get("tools"))
        if offers_tools and not self.endpoint.streams_tool_calls:
            async for piece in self._in_one_piece(args, plain):
                yield piece
            return
        stream = super().create_stream(*args, **kwargs)
        spoke = False
        truncated = False
        try:
            async for chunk in stream:
                spoke = spoke or (isinstance(chunk, str) and bool(chunk))
                yield chunk
            return
        except Exception as exc:
            if spoke or not worth_a_plain_try(exc):
                raise
            truncated = isinstance(exc, ModelProtocolError)
            logger.warning(
                "streamed model call failed before its first word (%s); asking without streaming", exc
            )
        finally:
            await stream.aclose()
        async for piece in self._in_one_piece(args, plain):
            if (
                truncated
                and offers_tools
                and isinstance(piece, CreateResult)
                and isinstance(piece.content, list)
            ):
                logger.warning(
                    "the model server cannot stream tool calls: calls with tools go unstreamed now"
                )
                self.endpoint.streams_tool_calls = False
            yield piece

    async def _in_one_piece(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The answer of a plain call, as a stream would give it: its text in one piece, then the result."""
        result = await super().create(*args, **kwargs)
        if isinstance(result.content, str) and result.content:
            yield result.content  # the person reads the answer as if it had streamed, in one piece
        yield result
