"""Text that reaches a terminal is inert: control characters are shown, never obeyed.

Before that, text from a model is well formed (:func:`well_formed`): a lone surrogate (``\\ud800``, which
a JSON body may spell), a NUL or a non-character cannot be written as UTF-8, stored in every database
or printed, and one of them must never end a session; they become U+FFFD where the model's words
enter the runtime.

A model, a stored transcript, another process or a file can hold escape sequences (``ESC]0;title BEL``
renames the window, ``ESC[2J`` clears the screen, cursor moves draw fake prompts) and bidirectional
overrides that make text read differently from what it is. Every place that prints such text to a person
calls :func:`printable`; the store and the JSON export keep the exact text.
"""

from __future__ import annotations

import json
import logging
import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_CONTROLS_AND_LINE_BREAKS = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_LEFT_RAW_BY_JSON = re.compile(f"[\x7f-\x9f{_BIDI}]")


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_NOT_WRITABLE = re.compile("[\x00\ud800-\udfff\ufffe\uffff]")
REPLACEMENT = "\ufffd"


def well_formed(text: str) -> str:
    """``text`` as valid, storable Unicode: a surrogate pair spelt as two code points is joined, a lone
    surrogate, a NUL and the non-characters U+FFFE/U+FFFF become U+FFFD; anything else is kept as it is.
    """
    if text.isascii():
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    if _NOT_WRITABLE.search(text) is None:
        return text
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return _NOT_WRITABLE.sub(REPLACEMENT, joined)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = True) -> str:
    """``text`` with C0/C1 controls, DEL and bidi overrides written visibly (``ESC`` becomes ``\\x1b``).

    Newline and tab are kept when ``multiline`` (a Windows line end becomes a newline); a single-line
    field (a session id, a table cell) passes ``multiline=False`` so that it cannot start a forged line
    either. The result contains no control characters, so applying it twice changes nothing.
    """
    if multiline:
        shown = _CONTROLS.sub(_visible, text.replace("\r\n", "\n"))
    else:
        shown = _CONTROLS_AND_LINE_BREAKS.sub(_visible, text)
    return well_formed(shown)  # a stored lone surrogate would end the console at its first print


def inert_json(document: str) -> str:
    """JSON text (from ``json.dumps``, which escapes C0 controls) with DEL, C1 controls and bidi overrides
    escaped too (``\\u009b``): the same JSON value, exact when parsed, and inert on a terminal."""
    return _LEFT_RAW_BY_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


class PrintableFormatter(logging.Formatter):
    """Log lines for a terminal: a logged model reply or peer message cannot carry escape sequences."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def arguments_preview(arguments: str, limit: int = 200) -> str:
    """A short, single-line view of a tool call's JSON arguments for logs and transcripts."""
    try:
        text = json.dumps(json.loads(arguments or "{}"), ensure_ascii=False)
    except ValueError:
        text = arguments
    return text if len(text) <= limit else text[: limit - 1] + "…"
