"""Secrets never reach a log: credentials are masked in every log record and in failures' detail.

An endpoint may echo the key it refused ("Incorrect API key provided: Bearer sk-..."), quote a piece of
it, reversed or upper-cased, or put a database URL with its password in an error body; an exception may
carry the endpoint's URL with its user and password or an ``api-key`` in its query. With ``-v`` all of
that would be written to the log verbatim. :func:`redact` masks two kinds of secret:

- by shape, whatever their value: a URL's userinfo (``scheme://[redacted]@host``), the values of query
  keys such as ``api-key``, ``key``, ``token`` and ``sig``, ``password=`` pairs, ``Bearer``/``Basic``
  credentials and ``sk-`` style keys;
- by value, the secrets registered with :func:`add_secret` (the model client's key, the credentials'
  tokens) and, at install, the usual API-key variables: the value itself and its echoes (each half,
  reversed, in any letter case).

:func:`install_redaction` wraps the logging module's record factory, so every record of every logger
(ours, openai's, httpx's, gRPC's) has its message, exception and stack text masked when it is made, before
any handler or formatter sees it.

Example::

    add_secret(api_key)
    install_redaction()
    logging.getLogger("x").warning("refused %s", api_key)   # logs "refused [redacted]"
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any

MASK = "[redacted]"
SECRET_VARIABLES = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
_SHORTEST = 8
"""Shorter values are placeholders ("none", "x"), and masking them would garble ordinary words."""

_QUERY_KEYS = (
    r"api[-_]?key|key|token|access[-_]?token|id[-_]?token|refresh[-_]?token|sig|signature|secret|"
    r"client[-_]?secret|password|passwd|pwd|auth|code|x-amz-signature|x-amz-credential|sv|se"
)
_BY_SHAPE = (
    # scheme://user:password@host -> scheme://[redacted]@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{1,20}://)[^\s/?#@\"'<>]+@"), rf"\1{MASK}@"),
    # ?api-key=... &sig=... -> the value masked
    (re.compile(rf"(?i)([?&;](?:{_QUERY_KEYS})=)[^&#\s\"'<>]*"), rf"\1{MASK}"),
    # password=..., "api_key": "..." in a DSN, a JSON body or a config dump
    (
        re.compile(
            r"(?i)\b((?:password|passwd|pwd|api[-_]?key|secret|token)[\"']?\s*[=:]\s*[\"']?)[^\s\"'&,;}]+"
        ),
        rf"\1{MASK}",
    ),
    # Bearer xyz; Authorization: Basic xyz (any scheme)
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{6,}"), rf"\1 {MASK}"),
    (re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?[A-Za-z]+)\s+[^\s\"']+"), rf"\1 {MASK}"),
    # keys in the usual provider format (sk-..., sk-proj-...)
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), MASK),
)

_secrets: frozenset[str] = frozenset()
_echoes: re.Pattern[str] | None = None
_lock = threading.Lock()
_installed = False


def add_secret(value: str | bytes | None) -> None:
    """Mask ``value`` and its echoes in every log record from now on (ignored if empty or shorter than 8
    characters)."""
    global _secrets, _echoes
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    text = (text or "").strip()
    if len(text) < _SHORTEST:
        return
    with _lock:
        if text in _secrets:
            return
        _secrets = _secrets | {text}
        variants = {v for s in _secrets for v in _echoes_of(s) if len(v) >= _SHORTEST}
        alternatives = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
        _echoes = re.compile(alternatives, re.IGNORECASE)


def _echoes_of(secret: str) -> tuple[str, ...]:
    """The forms a secret is echoed in: itself, reversed, and the halves of both (any letter case is
    matched by the pattern itself)."""
    backwards = secret[::-1]
    half = len(secret) // 2
    return (secret, backwards, secret[:half], secret[half:], backwards[:half], backwards[half:])


def redact(text: str) -> str:
    """``text`` with every credential (by shape) and every registered secret's echo replaced by
    ``[redacted]``."""
    echoes = _echoes
    if echoes is not None:
        text = echoes.sub(MASK, text)
    for pattern, replacement in _BY_SHAPE:
        text = pattern.sub(replacement, text)
    return text


def install_redaction() -> None:
    """Register the API-key variables' values and mask secrets in every log record; idempotent."""
    global _installed
    for name in SECRET_VARIABLES:
        add_secret(os.environ.get(name))
    with _lock:
        if _installed:
            return
        _installed = True
        make = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        _mask(record)
        return record

    logging.setLogRecordFactory(masked_record)


def _mask(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit: logging reports it, with nothing of ours
        return
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
