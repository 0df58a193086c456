"""Model failures said as what they are, each in one line that tells the person what is wrong.

An endpoint that cannot be reached, a key that is refused, a model or URL that does not exist, a
conversation longer than the model's context, a server that fails on the request every time, an answer
that breaks the protocol. Trying again in a moment does not fix these, so the person is told what is
wrong instead of getting the same apology on every line. Transient failures (timeouts, rate limits, an
overloaded server, a connection cut mid-answer) are not explained here: the usual apology ("try again
in a moment") fits them, and it is true. A streamed reply cut by its deadline is not disowned either: its
words stay, followed by :func:`cut_note`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from handoffs_runtime.errors import ContextOverflowError, ModelProtocolError

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
    detail: str  # the whole story, said once
    summary: str  # a reminder for the lines after

    @property
    def first(self) -> str:
        return f"Sorry, I can't answer: {self.detail}."

    @property
    def again(self) -> str:
        return f"Sorry, I can't answer: {self.summary} (see above)."


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
        )
    where = _endpoint(exc)
    if isinstance(exc, openai.APIConnectionError):
        if not _never_connected(exc):  # reached, then cut off mid-answer: transient, the apology fits
            return None
        return ModelProblem(
            f"the model endpoint {where} is unreachable ({_root_cause(exc)}); check --base-url "
            "(or OPENAI_BASE_URL) and that the server is running",
            f"the model endpoint {where} is unreachable",
        )
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return ModelProblem(
            f"the model endpoint {where} refused the API key ({exc.status_code}); check OPENAI_API_KEY",
            f"the model endpoint {where} refused the API key",
        )
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return _refused(exc, where)
    if isinstance(exc, openai.InternalServerError) and exc.status_code == 500:
        return ModelProblem(
            f"the model server at {where} fails on this request (HTTP 500, also when tried again); its "
            "log says why",
            f"the model server at {where} fails on this request (HTTP 500)",
        )
    if isinstance(exc, ModelProtocolError | ValueError):  # the client could not read the answer
        return ModelProblem(
            f"the model server's answer could not be read ({_short(exc)}); the server may not support "
            "tool calls this way",
            "the model server's answer could not be read",
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelProblem(
            f"the model endpoint {where} answered 404 not found; check the model name (--model) and "
            "--base-url",
            f"the model endpoint {where} answered 404 not found",
        )
    return None


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
        )
    status = getattr(exc, "status_code", 400)
    return ModelProblem(
        f"the model server at {where} refuses the request (HTTP {status}: {_short(exc)})",
        f"the model server at {where} refuses the request (HTTP {status})",
    )


def _holds(text: str) -> str:
    """`` (it reads at most N tokens)`` when the server's error says N."""
    limit = _LIMIT.search(text)
    return f" (it reads at most {limit.group(1)} tokens)" if limit else ""


def _short(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:160]


def _endpoint(exc: BaseException) -> str:
    request = getattr(exc, "request", None)
    url = str(getattr(request, "url", "") or "")
    return url.removesuffix("/chat/completions") or "(unknown URL)"


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
