"""Model failures a person can act on, each said in one line that tells them what to check.

An endpoint that cannot be reached, a key that is refused, a model or URL that does not exist. Retrying
does not fix these, so the person is told what to check instead of getting the same apology on every
line. Transient failures (timeouts, server errors) are not explained here: the usual apology fits them,
and the next line may well work.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    if isinstance(exc, openai.NotFoundError):
        return ModelProblem(
            f"the model endpoint {where} answered 404 not found; check the model name (--model) and "
            "--base-url",
            f"the model endpoint {where} answered 404 not found",
        )
    return None


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
