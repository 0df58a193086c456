"""The reply cap holds while a reply streams: a server that streams 300 MiB of text is read up to the cap
and no further, on the web page, the console and across a gRPC host, and the serving process stays small.

The local fake server makes the text as it sends it, so the test itself holds none of it; every process
is real (``handoffs serve``, ``handoffs chat``, a gRPC host and worker), and memory is read from
``/proc``: the peak resident size of the process that calls the model must stay under twice its size
when idle.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from handoffs_runtime import (
    QueueChannel,
    Reply,
    SQLiteSessionStore,
    TeamPolicy,
    openai_model,
)
from handoffs_runtime.agents.replies import stream_cut_note
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed import FrontEnd, launch_host, launch_worker
from handoffs_runtime.messages import Delta
from handoffs_runtime.teams.acme import acme_team

from .cli_support import cli_env
from .distributed_support import TIMEOUT, Process
from .fake_openai import FakeOpenAI, fake_openai
from .support import run_sessions, texts

HUGE = 300 * 1024 * 1024
"""Characters the hostile server would stream."""
CAP = 256 * 1024
"""``TeamPolicy.max_reply_chars``'s default."""
SENT_AT_MOST = 32 * 1024 * 1024
"""What the server may have sent by the time the client hangs up: the cap, and what the socket buffers
and the client's read-ahead hold."""


def capped_text(max_chars: int = CAP) -> str:
    """What the person reads of the endless reply: the text up to the cap, and the note."""
    note = stream_cut_note(max_chars)
    return "x" * (max_chars - len(note)) + note


def memory_kb(pid: int) -> dict[str, int]:
    """The resident size now (``VmRSS``) and at its peak (``VmHWM``) of process ``pid``, in kB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def hung_up(server: FakeOpenAI) -> bool:
    """Whether the client closed the endless stream (waiting a little for the server to notice)."""
    return server.hung_up.wait(TIMEOUT) and server.sent_chars < SENT_AT_MOST


async def test_a_stream_is_read_up_to_the_cap_then_closed(tmp_path: Path) -> None:
    store = SQLiteSessionStore(str(tmp_path / "s.sqlite3"))
    with fake_openai(["(endless)"]) as server:
        server.endless = HUGE
        channel = ScriptedChannel(customer={"s1": ["hi"]}, shows_progress=True)
        model = openai_model("m", base_url=server.url, api_key="k", max_retries=0)
        policy = TeamPolicy(stream=True, max_reply_chars=10_000)
        await run_sessions(acme_team(policy=policy), channel, model=model, store=store)
        assert await asyncio.to_thread(hung_up, server), server.sent_chars
    shown = "".join(e.text for e in channel.shown["s1"] if isinstance(e, Delta))
    assert shown == capped_text(10_000)  # the deltas end where the reply does, with the same note
    assert texts(channel) == [("TriageAgent", shown)]
    assert [e.text for e in await store.entries("s1") if e.kind == "reply"] == [shown]
    await store.close()


@contextmanager
def started(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "handoffs_runtime", *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=60)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def model_options(server: FakeOpenAI, tmp_path: Path) -> list[str]:
    return ["--model", "m", "--base-url", server.url, "--store", str(tmp_path / "s.sqlite3")]


async def test_the_page_gets_the_cut_reply_and_serve_stays_small(tmp_path: Path) -> None:
    env = cli_env({"OPENAI_API_KEY": "k"})
    with (
        fake_openai(["(endless)"]) as server,
        started(["serve", "--port", "0", *model_options(server, tmp_path)], env) as serve,
    ):
        assert serve.stdout is not None
        lines = [serve.stdout.readline() for _ in range(3)]
        url = lines[1].split()[-1].replace("http://", "ws://").rstrip("/")
        idle = memory_kb(serve.pid)["VmRSS"]
        server.endless = HUGE
        deltas: list[str] = []
        async with connect(url + "/ws", max_size=None) as socket:
            await socket.send(json.dumps({"type": "hello"}))
            await _until(socket, "question", deltas)  # the page may speak now
            await socket.send(json.dumps({"type": "say", "text": "hi"}))
            reply = await _until(socket, "reply", deltas)
        peak = memory_kb(serve.pid)["VmHWM"]
        assert await asyncio.to_thread(hung_up, server), server.sent_chars
    assert "".join(deltas) == reply["text"] == capped_text()
    assert peak < 2 * idle, f"serve grew from {idle} kB idle to a peak of {peak} kB"


async def _until(socket: Any, kind: str, deltas: list[str]) -> dict[str, Any]:
    """The next frame of type ``kind``; the text of the delta frames before it goes to ``deltas``."""
    while True:
        frame = json.loads(await asyncio.wait_for(socket.recv(), TIMEOUT))
        if frame["type"] == "delta":
            deltas.append(frame["text"])
            assert sum(map(len, deltas)) <= CAP, "deltas went past the cap"
        elif frame["type"] == kind:
            return dict(frame)


def test_the_console_prints_the_cut_reply_and_chat_stays_small(tmp_path: Path) -> None:
    env = cli_env({"OPENAI_API_KEY": "k"})
    with (
        fake_openai(["(endless)"]) as server,
        started(["chat", "--no-colour", *model_options(server, tmp_path)], env) as chat,
    ):
        assert chat.stdin is not None and chat.stdout is not None
        while "type 'exit' to leave" not in chat.stdout.readline():
            pass
        idle = memory_kb(chat.pid)["VmRSS"]
        server.endless = HUGE
        chat.stdin.write("hi\n")
        chat.stdin.flush()
        printed = _read_until(chat.stdout.fileno(), stream_cut_note(CAP).strip())
        peak = memory_kb(chat.pid)["VmHWM"]
        chat.stdin.close()
        assert hung_up(server), server.sent_chars
    label = "ACME assistant › "
    end = printed.index(stream_cut_note(CAP).strip())
    start = printed.rindex(label, 0, end) + len(label)  # the reply's label, after the greeting's
    assert printed[start:end] + stream_cut_note(CAP).strip() == capped_text().strip()
    assert peak < 2 * idle, f"chat grew from {idle} kB idle to a peak of {peak} kB"


def _read_until(fd: int, end: str, most: int = 4 * CAP) -> str:
    """What the process writing to ``fd`` prints up to ``end`` (and whatever came with it); failing once
    it printed ``most`` bytes without it."""
    pieces: list[bytes] = []
    size, mark, seen = 0, end.encode(), b""
    while mark not in seen:
        piece = os.read(fd, 1 << 16)
        assert piece, f"the output ended before {end!r}"
        pieces.append(piece)
        size += len(piece)
        assert size < most, f"{size:,} bytes printed, and still no end of the reply"
        seen = seen[-len(mark) :] + piece
    return b"".join(pieces).decode()


async def test_a_grpc_front_end_gets_the_cut_reply_and_the_worker_stays_small(
    processes: list[Process], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    store = SQLiteSessionStore(str(tmp_path / "front.sqlite3"))
    with fake_openai(["(endless)"]) as server:
        host, address = await launch_host()
        processes.append(host)
        worker = await launch_worker(address, options=["--model", "m", "--base-url", server.url])
        processes.append(worker)
        channel = QueueChannel(progress=True)
        async with FrontEnd(acme_team(), address, channel, store=store) as front:
            await front.open("s1")
            idle = memory_kb(worker.pid)["VmRSS"]
            server.endless = HUGE
            await channel.say("s1", "hi")
            deltas: list[str] = []
            while not isinstance(event := await channel.next_output("s1", TIMEOUT), Reply):
                if isinstance(event, Delta):
                    deltas.append(event.text)
                    assert sum(map(len, deltas)) <= CAP, "deltas went past the cap"
            peak = memory_kb(worker.pid)["VmHWM"]
            await channel.leave("s1")
            await front.wait("s1")
        assert await asyncio.to_thread(hung_up, server), server.sent_chars
    assert "".join(deltas) == event.text == capped_text()
    assert peak < 2 * idle, f"the worker grew from {idle} kB idle to a peak of {peak} kB"
    await store.close()


def test_reading_memory_of_a_process() -> None:
    """The measure the tests above rely on: this process's own sizes, peak at least current."""
    sizes = memory_kb(os.getpid())
    assert 0 < sizes["VmRSS"] <= sizes["VmHWM"]
