"""The API key and the deployment's tokens never reach a log, even when an endpoint echoes them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from handoffs_runtime import HandoffsRuntime, register_team
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed.credentials import ClientCredentials, create_credentials
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.teams.acme import acme_team

from .fake_openai import QuietHandler, local_endpoint


@contextmanager
def echoing_endpoint() -> Iterator[str]:
    """An OpenAI-compatible endpoint that refuses every key, quoting it, as some servers do."""

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.read_body()
            given = self.headers.get("Authorization", "")
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {given}", "type": "auth"}})
            self.answer(401, "application/json", body.encode())

    with local_endpoint(Handler) as url:
        yield url


@pytest.mark.parametrize("verbosity", ["-v", "-vv"])
def test_a_401_that_echoes_the_key_leaves_no_key_in_the_log(tmp_path: Path, verbosity: str) -> None:
    key = f"sk-test-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HANDOFFS_"))}
    with echoing_endpoint() as url:
        result = subprocess.run(
            [sys.executable, "-m", "handoffs_runtime", "chat", verbosity, "--model", "some-model",
             "--base-url", url, "--store", str(tmp_path / "s.db")],
            input="hello\n",
            capture_output=True,
            text=True,
            timeout=60,
            env={**env, "OPENAI_API_KEY": key},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Incorrect API key provided: Bearer [redacted]" in result.stderr  # logged, masked
    assert key not in result.stderr and key not in result.stdout
    assert key[8:20] not in result.stderr  # nor a piece of it


async def test_register_team_masks_the_tokens_in_messages_and_tracebacks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    create_credentials(tmp_path / "creds")
    token = ClientCredentials.load(tmp_path / "creds", "worker").token.decode()
    await register_team(
        HandoffsRuntime(), acme_team(), model=ScriptedModel([]), channel=ScriptedChannel.for_sessions({})
    )
    log = logging.getLogger("handoffs_runtime.test")
    try:
        raise ValueError(f"refused token {token}")
    except ValueError:
        log.exception("call failed with %s", token)
    assert caplog.records and token not in caplog.text
    assert (
        "call failed with [redacted]" in caplog.text and "ValueError: refused token [redacted]" in caplog.text
    )
