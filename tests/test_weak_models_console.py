"""The console and weak models: a streamed reply that starts with a newline is printed once."""

from __future__ import annotations

import io

import pytest

from handoffs_runtime.channels.console_stream import StreamingConsoleChannel
from handoffs_runtime.messages import Delta, Reply


@pytest.mark.parametrize("first", ["\n", "\n\n  ", " \n"])
async def test_a_streamed_reply_that_starts_with_a_newline_is_printed_once(first: str) -> None:
    out = io.StringIO()
    console = StreamingConsoleChannel(stdin=io.StringIO(), stdout=out, colour=False)
    for piece in (first, "Hello! ", "How can I help?\n"):
        await console.show("s1", Delta(agent="TriageAgent", text=piece))
    await console.show("s1", Reply(agent="TriageAgent", text="Hello! How can I help?"))
    assert out.getvalue().splitlines() == ["TriageAgent › Hello! How can I help?"]
