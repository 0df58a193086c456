"""What a model endpoint can do to a web customer: whatever it does, they read plain words.

Sessions of a real server's WebSockets against an endpoint that fails, one that answers hostile bodies
(URLs, paths, credentials, a database URL, a key echoed in pieces) and one that cannot be reached at a URL
holding a user, a password and an ``api-key``; every frame a customer receives is scanned. The operator
console and the log still get the detail, with every credential masked.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from handoffs_runtime import TeamPolicy, openai_model
from handoffs_runtime.models.failures import explain_model_error
from handoffs_runtime.models.redaction import MASK, add_secret, redact
from handoffs_runtime.teams.acme import acme_team

from .cli_support import run_handoffs
from .distributed_support import free_port
from .fake_openai import QuietHandler, fake_openai, local_endpoint
from .web_support import Client, customer, served

KEY = "sk-live-Q7pX2vR9tW4yZ8aB3cD6eF1gH5jK0mN"
"""The endpoint's API key: hostile bodies echo it whole, in halves, reversed and upper-cased."""
MARK = "UPSTREAM-BODY-4Q8"
"""Text only the endpoint's own error bodies hold."""
DATABASE = "postgresql://admin:S3cretPw@db.internal:5432/prod"
SECRETS = (KEY, KEY[: len(KEY) // 2], KEY[len(KEY) // 2 :], KEY[::-1], KEY.upper(), "S3cretPw", "Pass1234")

HOSTILE: list[tuple[int, str, bytes]] = [
    (400, "application/json", json.dumps({"error": {"message": f"{MARK} at {DATABASE}"}}).encode()),
    (
        401,
        "application/json",
        json.dumps(
            {"error": {"message": f"{MARK} bad key Bearer {KEY} / {KEY[::-1]} / {KEY.upper()}"}}
        ).encode(),
    ),
    (
        500,
        "text/html",
        f"<pre>{MARK} Traceback: File /srv/app/llm/server.py, line 3 {DATABASE}</pre>".encode(),
    ),
    (
        422,
        "application/json",
        json.dumps({"detail": f"{MARK} see https://10.0.0.7:8443/debug?token=t0k3n"}).encode(),
    ),
    (
        404,
        "application/json",
        json.dumps({"error": {"message": f"{MARK} /var/lib/models/x not found"}}).encode(),
    ),
    (200, "application/json", f"{MARK} not json, from /etc/llm.conf with {KEY[:20]}".encode()),
    (200, "application/json", json.dumps({"choices": f"{MARK} {DATABASE}"}).encode()),
    (
        503,
        "application/json",
        json.dumps({"error": {"message": f"{MARK} overloaded at 10.1.2.3:9000"}}).encode(),
    ),
    (200, "text/event-stream", f'data: {{"error": {{"message": "{MARK} {DATABASE}"}}}}\n\n'.encode()),
]
"""Status, content type and body, answered in turn (each failure, then the next)."""


@contextmanager
def hostile_endpoint() -> Iterator[str]:
    """An OpenAI-compatible endpoint whose every answer is one of ``HOSTILE``, in turn."""
    answers = iter(HOSTILE * 4)

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.read_body()
            self.answer(*next(answers, HOSTILE[0]))

    with local_endpoint(Handler) as url:
        yield url


URL = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
HOST_PORT = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b|\blocalhost\b|[\w.-]+:\d{2,5}\b|\.internal\b")
PATH = re.compile(r"(?<![\w:/])/(?:[\w.-]+/)+[\w.-]*")
UPSTREAM = (MARK, "scripted failure", "Traceback", "Error code", "Incorrect API key", "not json", "Bearer")


def customer_leaks(frame: str) -> list[str]:
    """Whatever in a customer's frame is a URL, a host:port, a path, a credential or an endpoint's words."""
    found = [m.group() for pattern in (URL, HOST_PORT, PATH) for m in pattern.finditer(frame)]
    return found + [word for word in (*SECRETS, *UPSTREAM) if word.lower() in frame.lower()]


async def talk(page: Client, lines: int) -> None:
    await page.until("question")
    for n in range(lines):
        await page.send({"type": "say", "text": f"hello {n}"})
        await page.until("question")


def scanned(pages: list[Client]) -> dict[str, list[str]]:
    frames = [json.dumps(m, ensure_ascii=False) for page in pages for m in page.seen]
    assert any(json.loads(f)["type"] == "reply" for f in frames)  # the customers were answered
    return {frame: found for frame in frames if (found := customer_leaks(frame))}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_no_customer_frame_shows_what_a_failing_hostile_or_unreachable_endpoint_said(
    tmp_path: Path, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    add_secret(KEY)
    unreachable = f"http://user:Pass1234@127.0.0.1:{free_port()}/v1?api-key={KEY}"
    team = acme_team(policy=TeamPolicy(stream=stream))
    pages: list[Client] = []
    with fake_openai([500, 400, 401, 404, 429, 422]) as failing, hostile_endpoint() as hostile:
        for base_url, lines in ((failing.url, 6), (hostile, len(HOSTILE)), (unreachable, 2)):
            model = openai_model("gpt-4o-mini", base_url=base_url, api_key=KEY, max_retries=0, timeout=10)
            folder = tmp_path / str(len(pages))
            folder.mkdir()
            async with served(folder, team=team, model=model) as server:
                page, _ = await customer(server)
                pages.append(page)
                await talk(page, lines)
                await page.socket.close()
    leaks = scanned(pages)
    assert not leaks, json.dumps(leaks, indent=1)
    logged = caplog.text
    assert "the model endpoint http://[redacted]@127.0.0.1:" in logged  # the operator's detail, masked
    assert not [secret for secret in SECRETS if secret.lower() in logged.lower()]


def test_the_operator_detail_names_the_endpoint_with_its_credentials_masked() -> None:
    import httpx
    import openai

    url = f"http://user:Pass1234@127.0.0.1:9/v1?api-key={KEY}&x=1"
    request = httpx.Request("POST", url)
    try:
        raise ConnectionRefusedError("Connection refused")
    except ConnectionRefusedError as cause:
        try:
            raise openai.APIConnectionError(request=request) from cause
        except openai.APIConnectionError as exc:
            problem = explain_model_error(exc)
    assert problem is not None
    assert problem.first == (
        "Sorry, I can't answer: the language model this service uses cannot be reached; whoever runs this "
        "service has been told what is wrong."
    )
    assert f"http://{MASK}@127.0.0.1:9/v1?api-key={MASK}&x=1" in problem.detail
    assert "Pass1234" not in problem.detail and KEY not in problem.detail


def test_a_registered_key_is_masked_in_halves_reversed_and_in_any_case() -> None:
    key = "sk-echo-ZyXwVu0123456789AbCdEf"
    add_secret(key)
    half = len(key) // 2
    for echo in (key, key[:half], key[half:], key[::-1], key.upper(), key.lower(), key[::-1][:half]):
        assert redact(f"refused {echo}.") == f"refused {MASK}.", echo


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("http://user:Pass@h:1/v1?api-key=K1&key=K2", f"http://{MASK}@h:1/v1?api-key={MASK}&key={MASK}"),
        ("GET /x?sig=abc&token=def&page=2", f"GET /x?sig={MASK}&token={MASK}&page=2"),
        ("Authorization: Bearer abc.def-123", f"Authorization: Bearer {MASK}"),
        ("dsn host=db password=hunter2 user=x", f"dsn host=db password={MASK} user=x"),
        ("a basic request for 12 tokens", "a basic request for 12 tokens"),
    ],
)
def test_credentials_are_masked_by_their_shape(text: str, masked: str) -> None:
    assert redact(text) == masked


def test_a_log_record_with_an_echoed_key_is_masked(caplog: pytest.LogCaptureFixture) -> None:
    from handoffs_runtime.models.redaction import install_redaction

    key = "sk-verbose-Lm3Nq8Rs2Tu7Vw1Xy6Za"
    add_secret(key)
    install_redaction()
    with caplog.at_level(logging.DEBUG, logger="openai"):
        logging.getLogger("openai").debug("echo %s and %s", key.upper(), key[::-1])
    assert caplog.records and key.upper() not in caplog.text and key[::-1] not in caplog.text


@pytest.mark.parametrize("verbosity", ["-v", "-vv"])
def test_a_verbose_console_log_holds_no_echo_of_the_key(tmp_path: Path, verbosity: str) -> None:
    with hostile_endpoint() as url:
        result = run_handoffs(
            "chat", verbosity, "--model", "m", "--base-url", url, "--store", str(tmp_path / "s.db"),
            "--no-colour", stdin="one\ntwo\nthree\n", env={"OPENAI_API_KEY": KEY},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "model call failed" in result.stderr  # the log has the failures, with their tracebacks
    output = (result.stdout + result.stderr).lower()
    assert not [secret for secret in SECRETS if secret.lower() in output]
