"""``handoffs serve --host``: the web server as a front end of a real gRPC host, whose worker process runs
the agents. Streamed words cross the host to the page; a session that ended resumes on the same server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from handoffs_runtime.distributed import launch_worker
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL

from .distributed_support import TIMEOUT, Process, start_host, start_worker
from .fake_openai import fake_openai
from .test_serve_cli import serve
from .web_support import approve, customer, customer_back, served

ANSWER = "Hello! I am the ACME triage bot; how can I help?"


def kinds(messages: list[dict[str, object]]) -> list[object]:
    return [m["type"] for m in messages]


async def test_streamed_words_cross_the_host_to_the_page(
    tmp_path: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the worker's client wants one; the local server ignores it
    with fake_openai([ANSWER]) as model_server:
        model_server.pause_after = 2
        host, address = await start_host()
        processes.append(host)
        model = ["--model", "gpt-4o-mini", "--base-url", model_server.url]
        processes.append(await launch_worker(address, options=model))
        async with served(tmp_path, host=address) as server:
            page, _ = await customer(server)
            await page.until("question")
            await page.send({"type": "say", "text": "hi"})
            assert (await page.recv())["type"] == "said"
            first = await page.recv()
            assert first["type"] == "delta" and first["text"] == ANSWER[:4]
            assert model_server.deltas_sent <= 2  # the model is still "writing"
            model_server.resume.set()
            rest = await page.until("reply")
            assert "".join(m["text"] for m in [first, *rest[:-1]]) == ANSWER
            assert rest[-1] == {**rest[-1], "agent": "TriageAgent", "text": ANSWER}
            await page.socket.close()


@pytest.mark.parametrize("remote", [True, False], ids=["via a host", "in process"])
async def test_a_session_that_ended_resumes_on_the_same_server(
    remote: bool, tmp_path: Path, processes: list[Process]
) -> None:
    address = None
    if remote:
        host, address = await start_host()
        processes.append(host)
        team = "TriageAgent,IssuesAndRepairsAgent,SalesAgent,HumanAgent"
        processes.append(await start_worker(address, team))
    async with served(tmp_path, host=address, idle_seconds=0.1) as server:
        page, session = await customer(server)
        await page.until("question")
        await page.send({"type": "say", "text": "I want a refund for my shoes"})
        assert kinds(await page.until("question")) == ["said", "handoff", "reply", "question"]
        await page.socket.close()

        async def ended() -> None:
            while server.hub.is_live(session["session"]):
                await asyncio.sleep(0.02)

        await asyncio.wait_for(ended(), TIMEOUT)  # the page stayed away: the session ended
        again, resumed = await customer_back(server, session)
        assert resumed == session
        history = await again.recv()
        assert kinds(history["items"]) == ["said", "handoff", "reply"]
        await again.until("question")
        await again.send({"type": "say", "text": "yes", **again.answering()})
        if not remote:  # in this process a refund waits for the operator; a host's workers run it as is
            await again.until("notice", text=WAITING_FOR_APPROVAL)
            await approve(server, session["session"])
        got = await again.until("reply")
        assert got[-1]["agent"] == "IssuesAndRepairsAgent" and "refund" in got[-1]["text"]
        await again.socket.close()


async def test_serve_host_starts_as_a_front_end_of_that_host(
    tmp_path: Path, processes: list[Process]
) -> None:
    host, address = await start_host()
    processes.append(host)

    def banner() -> list[str]:
        with serve(tmp_path, "--host", address) as (_, lines):
            return lines

    lines = await asyncio.to_thread(banner)
    assert lines[0] == f"handoffs serve · ACME Inc. customer service · front end of the host at {address}"


def test_serve_credentials_without_a_host_is_one_clear_error(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "handoffs_runtime", "serve", "--credentials", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "handoffs: --credentials is for --host: the credentials of the gRPC host to join"
    )
