"""``handoffs chat`` with a streaming model: the first words are on screen before the model has finished."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time

from handoffs_runtime.agents.ai import MODEL_ERROR_REPLY
from handoffs_runtime.channels.console_stream import StreamingConsoleChannel
from handoffs_runtime.messages import Delta, HandoffEvent, Reply, ToolStarted
from handoffs_runtime.text import printable

from .fake_openai import fake_openai

ANSWER = "Hello! I am the ACME triage bot; how can I help?"


class Chat:
    """``handoffs chat`` as a subprocess, read as its output arrives."""

    def __init__(self, url: str, *options: str) -> None:
        command = [sys.executable, "-m", "handoffs_runtime", "chat", "--model", "m", "--base-url", url]
        command += ["--store", ":memory:", "--no-colour", *options]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.output = ""

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def read_until(self, text: str, timeout: float = 30) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert time.monotonic() < deadline, f"{text!r} never came; output so far: {self.output!r}"
            if select.select([fd], [], [], 0.5)[0]:
                chunk = os.read(fd, 4096)
                assert chunk, f"chat ended early; output: {self.output!r}"
                self.output += chunk.decode()

    def finish(self) -> None:
        self.type("exit")
        self.process.wait(timeout=30)
        assert self.process.stdout is not None
        self.output += self.process.stdout.read().decode()


def test_the_console_prints_the_first_words_before_the_last_chunk_is_sent() -> None:
    with fake_openai([ANSWER]) as server:
        server.pause_after = 2
        chat = Chat(server.url)
        try:
            chat.type("hi")
            chat.read_until("you › hi\nACME assistant › Hello! I")
            assert server.deltas_sent <= 2  # the rest of the reply has not been sent yet
            assert ANSWER not in chat.output
            server.resume.set()
            chat.read_until(ANSWER + "\n")
        finally:
            server.resume.set()
            chat.finish()
    assert chat.output.count(ANSWER) == 1  # printed once, in place, not again when complete


def test_a_stream_cut_in_the_middle_prints_the_apology_below_the_pieces() -> None:
    with fake_openai([ANSWER, "Still here."]) as server:
        server.cut_after = 3
        chat = Chat(server.url)
        try:
            chat.type("hi")
            chat.read_until(MODEL_ERROR_REPLY)
            chat.type("hello?")
            chat.read_until("ACME assistant › Still here.")
        finally:
            chat.finish()
    lines = chat.output.splitlines()
    cut = lines.index(f"ACME assistant › {ANSWER[:12].rstrip()}")  # trailing spaces wait for a word
    assert lines[cut + 1] == f"ACME assistant › {MODEL_ERROR_REPLY}"


def test_no_stream_prints_each_reply_whole() -> None:
    with fake_openai([ANSWER]) as server:
        chat = Chat(server.url, "--no-stream")
        try:
            chat.type("hi")
            chat.read_until(ANSWER)
        finally:
            chat.finish()
    assert not server.requests[0].get("stream")


def test_streamed_text_cannot_drive_the_terminal() -> None:
    shown = printable("red\x1b[31m alert\x07\r\nnext\tline")
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert shown.endswith("\nnext\tline")


async def test_the_next_agents_words_wait_for_the_line_that_hands_it_the_conversation() -> None:
    out = io.StringIO()
    console = StreamingConsoleChannel(stdin=io.StringIO(), stdout=out, colour=False)
    sales = "Robin from sales"
    await console.show("s1", Delta(agent="TriageAgent", text="Let me check."))  # its reply is not shown yet
    await console.show("s1", Delta(agent="SalesAgent", text="Rocket ", label=sales))  # before its line
    await console.show("s1", ToolStarted(agent="SalesAgent", tool="look_up", call_id="c", arguments="{}"))
    await console.show("s1", Delta(agent="SalesAgent", text="skates?", label=sales))
    event = HandoffEvent(session_id="s1", source="TriageAgent", target="SalesAgent", tool="t", hop=1)
    await console.show("s1", Reply(agent="TriageAgent", text="Let me check."))
    await console.show("s1", event.line({"SalesAgent": sales}))
    await console.show("s1", Reply(agent="SalesAgent", text="Rocket skates?", label=sales))
    assert out.getvalue().splitlines() == [
        "TriageAgent › Let me check.",
        "  ↪ Robin from sales has joined",
        "Robin from sales › Rocket skates?",
    ]
