"""Others' private parts, fenced: autogen-ext's OpenAI client, with a stream that closes when dropped.

A module of its own so that only what talks to an OpenAI-compatible endpoint imports OpenAI: the rest of
the fence (``handoffs_runtime.private``) is imported by every module, and stays cheap. It checks, at
import, that the private method it replaces is still there with the parameters it was written for.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import openai
from autogen_core import CancellationToken
from autogen_ext.models.openai import BaseOpenAIChatCompletionClient, OpenAIChatCompletionClient
from openai.types.chat import ChatCompletionChunk

from handoffs_runtime.private import require, stored_attributes

STREAM_CHUNKS_PARAMETERS = ["self", "tool_params", "oai_messages", "create_args", "cancellation_token"]
"""The parameters of autogen-ext's private ``_create_stream_chunks``, which ``ClosingStreamClient``
replaces."""


class ClosingStreamClient(OpenAIChatCompletionClient):
    """autogen-ext's OpenAI client whose HTTP stream is closed when its reader stops early (the tool loop
    does at the reply cap): autogen-ext's leaves it open, the server sending on into a connection nobody
    reads."""

    async def _create_stream_chunks(
        self,
        tool_params: list[Any],
        oai_messages: list[Any],
        create_args: dict[str, Any],
        cancellation_token: CancellationToken | None,
    ) -> AsyncGenerator[ChatCompletionChunk, None]:
        """autogen-ext's own, except that the stream is closed however its reader stops."""
        created = asyncio.ensure_future(
            self._client.chat.completions.create(
                messages=oai_messages,
                stream=True,
                tools=tool_params if tool_params else openai.omit,
                **create_args,
            )
        )
        if cancellation_token is not None:
            cancellation_token.link_future(created)
        stream = await created
        if not isinstance(stream, openai.AsyncStream):  # pragma: no cover - stream=True answers a stream
            raise TypeError(f"expected a stream, got {type(stream).__name__}")
        try:
            while True:
                chunk = asyncio.ensure_future(anext(stream))
                if cancellation_token is not None:
                    cancellation_token.link_future(chunk)
                try:
                    yield await chunk
                except StopAsyncIteration:
                    return
        finally:
            await stream.close()


def _stream_chunks_parameters() -> list[str]:
    replaced = getattr(OpenAIChatCompletionClient, "_create_stream_chunks", None)
    return list(inspect.signature(replaced).parameters) if callable(replaced) else []


PRIVATE_PARTS: Mapping[str, Callable[[], bool]] = {
    "BaseOpenAIChatCompletionClient keeps the OpenAI client in _client": lambda: (
        "_client" in stored_attributes(BaseOpenAIChatCompletionClient.__init__)
    ),
    "OpenAIChatCompletionClient has _create_stream_chunks(tool_params, oai_messages, create_args, "
    "cancellation_token)": lambda: _stream_chunks_parameters() == STREAM_CHUNKS_PARAMETERS,
}
"""What ``ClosingStreamClient`` relies on, each a sentence that must hold (checked at import)."""

require(PRIVATE_PARTS)
