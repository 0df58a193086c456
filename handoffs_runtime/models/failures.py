"""Model failures said as what they are, each in one line that tells the person what is wrong.

An endpoint that cannot be reached, a key that is refused, a model or URL that does not exist, a
conversation longer than the model's context, a server that fails on the request every time, an answer
that breaks the protocol. Trying again in a moment does not fix these, so the person is told what is
wrong instead of getting the same apology on every line. Transient failures (timeouts, rate limits, an
overloaded server, a connection cut mid-answer) are not explained here: the usual apology ("try again
in a moment") fits them, and it is true. A streamed reply cut by its deadline is not disowned either: its
words stay, followed by :func:`cut_note`.

The person may be an anonymous web customer, so what they read is a plain sentence and nothing of the
endpoint (its URL, host and port, credentials) or of what the server said; whoever runs the team gets
that in :attr:`ModelProblem.detail`, credentials masked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from handoffs_runtime.errors import ContextOverflowError, ModelProtocolError
from handoffs_runtime.models.redaction import redact
from handoffs_runtime.text import printable

_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context window|context length|exceeds? the "
    r"(?:model's )?(?:available )?context|n_ctx|too many tokens|prompt is too long",
    re.IGNORECASE,
)
_LIMIT = re.compile(r"(?:context length|context window|context size|n_ctx)\D{0,20}(\d[\d,]*)", re.IGNORECASE)
_REQUESTED = re.compile(
    r"requested (\d[\d,]*) tokens|requested tokens \((\d[\d,]*)\)|n_prompt_tokens\D{0,5}(\d[\d,]*)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ModelProblem:
    """A failure of the model's configuration, in two registers.

    ``reason`` and ``summary`` are what the person reads: plain words, never the endpoint's URL, its
    host and port, a path, a credential or anything the server said (a web customer is a stranger).
    ``detail`` is what whoever runs the team reads (the console's owner, the operator console, the log):
    the endpoint, the status and the server's own words, with every credential masked
    (:func:`~handoffs_runtime.models.redaction.redact`). Two problems are the same when the person
    would read the same words.
    """

    reason: str  # the whole story, said once
    summary: str  # a reminder for the lines after
    detail: str = field(default="", compare=False)

    @property
    def first(self) -> str:
        return f"Sorry, I can't answer: {self.reason}."

    @property
    def again(self) -> str:
        return f"Sorry, I can't answer: {self.summary} (see above)."


_RUNS_IT = "; whoever runs this service has been told what is wrong"


def explain_model_error(exc: BaseException) -> ModelProblem | None:
    """What is wrong, when ``exc`` is a failure of the model's configuration; ``None`` otherwise."""
    try:
        import openai
    except ImportError:  # pragma: no cover - openai comes with autogen-ext[openai]
        return None
    if isinstance(exc, openai.APITimeoutError):
        return None
    if isinstance(exc, ContextOverflowError):
        holds = _holds(str(exc.__cause__ or ""))
        return ModelProblem(
            f"your last message is longer than the model can read{holds}, even with the earlier "
            "conversation left out; please say it in fewer words",
            "your last message is longer than the model can read",
            _masked(f"the model's context is too short for the last message alone: {_short(exc)}"),
        )
    where = _endpoint(exc)
    if isinstance(exc, openai.APIConnectionError):
        if not _never_connected(exc):  # reached, then cut off mid-answer: transient, the apology fits
            return None
        return _problem(
            "the language model this service uses cannot be reached",
            f"the model endpoint {where} is unreachable ({_root_cause(exc)}); check --base-url "
            "(or OPENAI_BASE_URL) and that the server is running",
        )
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return _problem(
            "the language model this service uses does not accept its credentials",
            f"the model endpoint {where} refused the API key ({exc.status_code}: {_short(exc)}); check "
            "OPENAI_API_KEY",
        )
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return _refused(exc, where)
    if isinstance(exc, openai.InternalServerError) and exc.status_code == 500:
        return _problem(
            "the language model fails on this request, also when it is tried again",
            f"the model server at {where} fails on this request (HTTP 500, also when tried again: "
            f"{_short(exc)}); its log says why",
        )
    if isinstance(exc, ModelProtocolError | ValueError):  # the client could not read the answer
        return _problem(
            "the language model's answer could not be read",
            f"the model server's answer could not be read ({_short(exc)}); the server may not support "
            "tool calls this way",
        )
    if isinstance(exc, openai.NotFoundError):
        return _problem(
            "the language model this service is set up to use was not found",
            f"the model endpoint {where} answered 404 not found; check the model name (--model) and "
            "--base-url",
        )
    return None


def _problem(summary: str, detail: str) -> ModelProblem:
    """A problem the person cannot fix: plain words for them, the masked ``detail`` for the operator."""
    return ModelProblem(summary + _RUNS_IT, summary, _masked(detail))


def _masked(detail: str) -> str:
    return redact(printable(detail, multiline=False))


def cut_note(deadline: float) -> str:
    """What follows a streamed reply the deadline cut (the client's, or the team's own): the person and
    the model both read it, so the words already shown stay in the conversation, marked as cut."""
    return f" [cut off: the reply took longer than the {deadline:g} s the model is given]"


def is_context_overflow(text: str) -> bool:
    """Whether a server's error text says the request is longer than the model's context."""
    return _OVERFLOW.search(text) is not None


def is_overflow_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a server's refusal of a request longer than the model's context."""
    status = getattr(exc, "status_code", None)
    if status not in (400, 413, 422) or not isinstance(exc, Exception):
        return False
    return getattr(exc, "code", None) == "context_length_exceeded" or is_context_overflow(str(exc))


def overflow_ratio(exc: BaseException) -> float | None:
    """How much of the refused request the model can read (its context over the tokens requested),
    when the server's error says both numbers; ``None`` when it does not."""
    text = str(exc)
    limit, requested = _LIMIT.search(text), _REQUESTED.search(text)
    if limit is None or requested is None:
        return None
    asked = int(next(g for g in requested.groups() if g).replace(",", ""))
    holds = int(limit.group(1).replace(",", ""))
    return holds / asked if 0 < holds < asked else None


def _refused(exc: BaseException, where: str) -> ModelProblem:
    """A 400/422: the conversation is too long for the model, or the server refuses the request."""
    if is_overflow_error(exc):
        return ModelProblem(
            f"this conversation has grown longer than the model can read{_holds(str(exc))}; please "
            "start a new conversation",
            "this conversation is longer than the model can read",
            _masked(f"the conversation is longer than the model's context: {_short(exc)}"),
        )
    status = getattr(exc, "status_code", 400)
    return _problem(
        "the language model refuses this request",
        f"the model server at {where} refuses the request (HTTP {status}: {_short(exc)})",
    )


def _holds(text: str) -> str:
    """`` (it reads at most N tokens)`` when the server's error says N."""
    limit = _LIMIT.search(text)
    return f" (it reads at most {limit.group(1)} tokens)" if limit else ""


def _short(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:160]


def _endpoint(exc: BaseException) -> str:
    """The endpoint's URL for the operator (its credentials are masked with the rest of the detail)."""
    request = getattr(exc, "request", None)
    url = str(getattr(request, "url", "") or "")
    path, query = url.partition("?")[::2]
    path = path.removesuffix("/chat/completions").removesuffix("/")
    return (f"{path}?{query}" if query else path) or "(unknown URL)"


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _never_connected(exc: BaseException) -> bool:
    """Whether the connection itself failed (refused, unknown host), not a reply that broke off. By the
    HTTP client's error name, since the ``openai`` client's transport differs between its releases."""
    connect_errors = ("ConnectError", "ConnectTimeout")
    return any(isinstance(e, OSError) or type(e).__name__ in connect_errors for e in _chain(exc)[1:])


def _root_cause(exc: BaseException) -> str:
    """The innermost reason (``connection refused``, a name that does not resolve...), in a few words."""
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return "host name not found"
    return next((str(e) for e in reversed(chain) if str(e)), "connection failed")[:200]


SLOW_MODEL_REPLY = (
    "Sorry, the model is too slow right now: it did not finish its answer in the time allowed, so it "
    "was stopped."
)
"""What the person reads when a call missed its deadline: the truth (the model is slow), not an
invitation to try again at once behind the same slow server."""

TURN_TIME_REPLY = (
    "Sorry, the model is too slow right now: it could not finish this in the time a turn is allowed, so "
    "it was stopped. The fault is on our side, not in what you said."
)
"""What the person reads when a turn spent its time (``TeamPolicy.turn_deadline``): the same truth, for
a turn of several calls; apart from :data:`SLOW_MODEL_REPLY` so that no engine tries such a turn again."""


def missed_its_deadline(exc: BaseException) -> bool:
    """Whether ``exc`` is a model call that ran out of time (ours, or the HTTP client's)."""
    if isinstance(exc, TimeoutError):
        return True
    try:
        import openai
    except ImportError:  # pragma: no cover - openai comes with autogen-ext[openai]
        return False
    return isinstance(exc, openai.APITimeoutError)
