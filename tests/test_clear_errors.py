"""Errors that say what is wrong, in one line, as a person meets them on the command line."""

from __future__ import annotations

import socket

from handoffs_runtime import openai_model
from handoffs_runtime.agents.ai import MODEL_PROBLEM_NOTICE
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Notice
from handoffs_runtime.teams.acme import acme_team

from .cli_support import run_handoffs
from .fake_openai import fake_openai
from .support import run_sessions, texts


def closed_port() -> int:
    """A local port where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_base_url_is_explained_once_with_the_url(tmp_path: object) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = run_handoffs(
        "chat", "--model", "some-model", "--base-url", url, "--store", f"{tmp_path}/s.db",
        stdin="hello\nare you there?\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    notices = [line.strip() for line in lines if line.strip().startswith(f"{MODEL_PROBLEM_NOTICE}:")]
    assert notices == [  # the console's owner reads what is wrong, once
        f"{MODEL_PROBLEM_NOTICE}: the model endpoint {url} is unreachable (connection refused); check "
        "--base-url (or OPENAI_BASE_URL) and that the server is running"
    ]
    replies = [line for line in lines if line.startswith("ACME assistant › Sorry")]
    assert replies == [  # the reply itself is plain words, as any customer reads it
        "ACME assistant › Sorry, I can't answer: the language model this service uses cannot be reached; "
        "whoever runs this service has been told what is wrong.",
        "ACME assistant › Sorry, I can't answer: the language model this service uses cannot be reached "
        "(see above).",
    ]


async def test_a_refused_key_and_an_unknown_model_are_named() -> None:
    with fake_openai([401, 401, 404]) as server:
        model = openai_model("gpt-4o-mini", base_url=server.url, api_key="wrong", max_retries=0)
        channel = ScriptedChannel.for_sessions({"s1": ["hello", "hello?"], "s2": ["hi"]})
        await run_sessions(acme_team(), channel, model=model, sessions=["s1"])
        await run_sessions(acme_team(), channel, model=model, sessions=["s2"])
    assert [text for _, text in texts(channel, "s1")] == [
        "Sorry, I can't answer: the language model this service uses does not accept its credentials; "
        "whoever runs this service has been told what is wrong.",
        "Sorry, I can't answer: the language model this service uses does not accept its credentials "
        "(see above).",
    ]
    [refused] = [
        e.detail for e in channel.shown["s1"] if isinstance(e, Notice) and e.text == MODEL_PROBLEM_NOTICE
    ]
    assert refused.startswith(f"the model endpoint {server.url} refused the API key (401: ")
    assert refused.endswith("check OPENAI_API_KEY")
    [(_, unknown)] = texts(channel, "s2")
    assert "was not found" in unknown
    [missing] = [
        e.detail for e in channel.shown["s2"] if isinstance(e, Notice) and e.text == MODEL_PROBLEM_NOTICE
    ]
    assert "answered 404 not found; check the model name (--model)" in missing


def test_a_worker_with_no_host_exits_non_zero_with_one_line() -> None:
    address = f"127.0.0.1:{closed_port()}"
    result = run_handoffs("worker", "--host", address, "--connect-timeout", "1")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("handoffs: ")]
    assert len(errors) == 1 and f"cannot reach a handoffs host at {address}" in errors[0]
    assert "Task was destroyed" not in result.stderr


def test_a_front_end_with_a_model_option_needs_no_api_key() -> None:
    address = f"127.0.0.1:{closed_port()}"
    result = run_handoffs("chat", "--host", address, "--model", "gpt-4o-mini", "--connect-timeout", "1")
    assert "API key" not in result.stderr
    assert f"cannot reach a handoffs host at {address}" in result.stderr
