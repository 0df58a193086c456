"""Secrets never reach a log: the API key and the deployment's tokens are masked in every log record.

An endpoint may echo the key it refused ("Incorrect API key provided: Bearer sk-..."), and an exception
may carry it in its text or its traceback; with ``-v`` that would be written to the log verbatim.
:func:`install_redaction` wraps the logging module's record factory, so every record of every logger
(ours, openai's, httpx's, gRPC's) has its message, exception and stack text masked when it is made, before
any handler or formatter sees it. Secrets are registered with :func:`add_secret` where they are read (the
model client's key, the credentials' tokens) and, at install, from the usual API-key variables.

Example::

    add_secret(api_key)
    install_redaction()
    logging.getLogger("x").warning("refused %s", api_key)   # logs "refused [redacted]"
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

MASK = "[redacted]"
SECRET_VARIABLES = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
_SHORTEST = 8
"""Shorter values are placeholders ("none", "x"), and masking them would garble ordinary words."""

_secrets: frozenset[str] = frozenset()
_lock = threading.Lock()
_installed = False


def add_secret(value: str | bytes | None) -> None:
    """Mask ``value`` in every log record from now on (ignored if empty or shorter than 8 characters)."""
    global _secrets
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    text = (text or "").strip()
    if len(text) >= _SHORTEST:
        with _lock:
            _secrets = _secrets | {text}


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``[redacted]`` (longest first)."""
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
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
        if _secrets:
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
