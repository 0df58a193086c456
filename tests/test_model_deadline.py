"""A model call has a total deadline (connect plus the whole body or stream), not only a per-read timeout.

A real local HTTP server trickles its answer one byte (or one stream chunk) at a time, quickly enough
that no single read ever waits long; the real ``openai`` client must still give up at the deadline.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage

from handoffs_runtime import ModelConfigError, TeamPolicy, openai_model
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.messages import WorkerResult
from handoffs_runtime.models.deadline import SLOW_MODEL_REPLY, cut_note
from handoffs_runtime.models.local import LocalModel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.team.spec import MODEL_TIMEOUT_MARGIN, call_deadline, model_timeout_team
from handoffs_runtime.teams.acme import acme_team

from .cli_support import run_handoffs
from .fake_openai import QuietHandler, local_endpoint
from .support import ask_worker, run_sessions, texts

TRICKLE_SECONDS = 0.02
"""Between two bytes (or chunks): far below any per-read timeout, so only a total deadline ends it."""


class Trickler:
    """Answers the first request a byte at a time (about ten seconds in all), later ones at once."""

    def __init__(self) -> None:
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self.sent_all = False
        self.dropped = threading.Event()
        self.url = ""


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    base = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
    return {**base, "choices": [choice], "usage": usage}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    data = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
    return f"data: {json.dumps(data)}\n\n".encode()


def _handler(state: Trickler) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            state.requests += 1
            state.bodies.append(body)
            first = state.requests == 1
            stream = bool(body.get("stream"))
            self.send_response(200)
            if stream:
                self.send_header("Content-Type", "text/event-stream")
                pieces = [_chunk({"role": "assistant", "content": ""})]
                words = ["slow "] * 500 if first else ["fast answer"]
                pieces += [_chunk({"content": w}) for w in words]
                pieces += [_chunk({}, "stop"), b"data: [DONE]\n\n"]
            else:
                text = "slow answer" + " " * 500 if first else "fast answer"
                payload = json.dumps(_completion(text)).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                pieces = [payload[i : i + 1] for i in range(len(payload))] if first else [payload]
            self.end_headers()
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    if first:
                        time.sleep(TRICKLE_SECONDS)
            except OSError:  # the client hung up
                state.dropped.set()
                return
            if first:
                state.sent_all = True

    return Handler


@contextmanager
def trickling_server() -> Iterator[Trickler]:
    state = Trickler()
    with local_endpoint(_handler(state)) as state.url:
        yield state


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_trickling_endpoint_ends_at_the_deadline_and_the_session_goes_on(stream: bool) -> None:
    with trickling_server() as server:
        model = openai_model("m", base_url=server.url, api_key="k", timeout=1.0, max_retries=2)
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "again"]})
        policy = TeamPolicy(stream=stream, model_timeout=None)  # the client's own deadline does it
        await run_sessions(acme_team(policy=policy), channel, model=model)
        # The client hung up on the trickle: the server notices at one of its next writes.
        dropped = await asyncio.to_thread(server.dropped.wait, 30)
    first, second = texts(channel)
    if stream:  # the person read the first words: they stay, marked as cut, in what the model reads next
        assert first[1].startswith("slow slow ") and first[1].endswith(cut_note(1.0))
        assert server.bodies[1]["messages"][-2] == {"role": "assistant", "content": first[1]}
    else:
        assert first[1] == SLOW_MODEL_REPLY
    assert second == ("TriageAgent", "fast answer")
    assert dropped and not server.sent_all
    assert server.requests == 2  # no retry after the deadline: it covers the retries too


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_the_deadline_must_be_a_positive_number(bad: float) -> None:
    with pytest.raises(ModelConfigError, match="timeout"):
        openai_model("m", base_url="http://127.0.0.1:9/v1", timeout=bad)
    with pytest.raises(TeamConfigError, match="model_timeout"):
        TeamPolicy(model_timeout=bad)


async def test_a_worker_applies_the_policy_timeout_to_each_model_call() -> None:
    class Hanging(ScriptedModel):
        answers_promptly = False

        async def create(self, *args: object, **kwargs: object) -> Any:  # type: ignore[override]
            await asyncio.sleep(3600)

    config = WorkerAgentConfig(
        name="W",
        system_message=SystemMessage(content="Work."),
        model=Hanging([]),
        policy=TeamPolicy(model_timeout=0.05),
    )
    result = await ask_worker(config, "do it", timeout=3600)
    assert result == WorkerResult(text="W's model failed: TimeoutError: no answer within 0.05 s", ok=False)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_model_timeout_option_sets_the_deadline_and_a_cut_streamed_reply_is_kept(stream: bool) -> None:
    with trickling_server() as server:  # about ten seconds of answer, well within the usual 30 s
        options = ["--model", "m", "--base-url", server.url, "--model-timeout", "1", "--no-colour"]
        result = run_handoffs("chat", *options, *([] if stream else ["--no-stream"]), stdin="hello\n")
    assert result.returncode == 0, result.stderr
    if stream:  # printed once, as it came, and the note after it
        assert result.stdout.count(cut_note(1.0)) == 1
        assert f"slow slow {cut_note(1.0)}\n" in result.stdout
    else:
        assert SLOW_MODEL_REPLY in result.stdout and "slow slow" not in result.stdout
    assert server.requests == 1


def test_model_timeout_option_must_be_positive() -> None:
    url = "http://127.0.0.1:9/v1"
    result = run_handoffs("chat", "--model", "m", "--base-url", url, "--model-timeout", "0")
    assert result.returncode == 2
    assert "--model-timeout must be a positive number of seconds, got 0" in result.stderr


def test_a_long_model_timeout_moves_the_teams_own_limit_past_it() -> None:
    """Else the team's limit (45 s) would cut a 60 s call first, and could only apologise."""
    team = model_timeout_team(acme_team(), 60)
    assert team.policy.model_timeout is not None and team.policy.model_timeout > 60


def test_the_team_files_model_timeout_is_the_deadline_without_the_option(tmp_path: Path) -> None:
    team = tmp_path / "team.yaml"
    agents = "- {name: Front, system_message: Be brief.}"
    team.write_text(f"name: t\npolicy: {{model_timeout: 1}}\nagents:\n{agents}\n")
    with trickling_server() as server:  # about ten seconds of answer, well within the usual limit
        options = ["--team", str(team), "--model", "m", "--base-url", server.url, "--no-colour"]
        result = run_handoffs("chat", *options, stdin="hello\n")
    assert result.returncode == 0, result.stderr
    assert "Front › slow slow " in result.stdout and f"slow {cut_note(1.0)}\n" in result.stdout
    assert result.stdout.count(cut_note(1.0)) == 1
    assert server.requests == 1


def test_the_option_wins_over_the_team_file() -> None:
    team = acme_team(policy=TeamPolicy(model_timeout=90))
    assert call_deadline(team, None) == 90
    assert call_deadline(team, 5) == 5
    assert model_timeout_team(team, 5).policy.model_timeout == 5 + MODEL_TIMEOUT_MARGIN
    assert model_timeout_team(team, None).policy.model_timeout == 90 + MODEL_TIMEOUT_MARGIN


async def test_a_streamed_reply_the_teams_own_limit_cuts_is_kept_marked_as_cut() -> None:
    """A model client without a deadline of its own (an autogen client from a team file): the team's
    ``model_timeout`` ends the call, and the words already shown stay, marked as cut."""

    class Slow(LocalModel):
        answers_promptly = False

        def __init__(self) -> None:
            super().__init__()
            self.seen: list[list[LLMMessage]] = []

        async def create_stream(  # type: ignore[override]
            self, messages: Sequence[LLMMessage], **kwargs: object
        ) -> AsyncIterator[str]:
            self.seen.append(list(messages))
            for _ in range(1000):
                yield "slow "
                await asyncio.sleep(0.01)
            raise AssertionError("the stream should have been cut")

    model = Slow()
    channel = ScriptedChannel.for_sessions({"s1": ["hello", "again"]})
    policy = TeamPolicy(stream=True, model_timeout=0.3)
    await run_sessions(acme_team(policy=policy), channel, models={"TriageAgent": model})
    first, second = texts(channel)
    assert first[1].startswith("slow slow") and first[1].endswith(cut_note(0.3).strip())
    assert second[1].endswith(cut_note(0.3).strip())
    said = model.seen[1][-2]  # what the model reads next: the words and the note, as its own reply
    assert isinstance(said, AssistantMessage) and said.content == first[1]
