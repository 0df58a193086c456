"""How a confirmation is worded: the one place that says what a call will do, each argument named.

Every question that asks a person to let an action happen is worded here, whoever asks it and whichever
channel shows it (a console, the customer's page, the operator console, a front end across gRPC), so the
person reads the same words everywhere:

- a proposal to the customer names each argument, one as much as several, in words (``I can cancel
  booking with booking ref “SKY456”. Shall I go ahead? (yes/no)``): a person reads neither tool names nor
  JSON, and an argument left unnamed is one they cannot check;
- an approval (:func:`approval`, ``requires_approval``'s question) shows exactly what will run, the whole
  arguments by their names, code as numbered lines, never cut: the one approving may be asked to let code
  run, where only the exact text will do;
- the question about an earlier action whose outcome is unknown (:func:`again`), naming it as
  :func:`action` does (the effect ledger's ``EffectKey.described``).

Example::

    proposal("change_flight", [("booking_ref", "SKY456"), ("new_date", "20 December")])
    # 'I can change flight with booking ref “SKY456” and new date “20 December”. Shall I go ahead? (yes/no)'
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from handoffs_runtime.text import printable

ASK_CONFIRMATION = "Shall I go ahead? (yes/no)"
"""How a proposal ends: the customer's next line is its answer (a channel offers yes/no buttons)."""


def in_words(name: str) -> str:
    """A tool's or a parameter's name as a person reads it: ``booking_ref`` → ``booking ref``."""
    return name.replace("_", " ").strip()


def action(tool: str, arguments: Sequence[tuple[str, Any]] = (), *, about: str = "") -> str:
    """What a call will do, each argument by its name: ``change flight with booking ref “SKY456” and new
    date “20 December”``; with no argument known yet (a look-up will find it), the object as the person
    wrote it: ``execute refund for “shoes”``."""
    if arguments:
        named = [f"{in_words(name)} {_shown(value)}" for name, value in arguments]
        said = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        return f"{in_words(tool)} with {said}"
    return f"{in_words(tool)} for “{about}”" if about else in_words(tool)


def proposal(tool: str, arguments: Sequence[tuple[str, Any]] = (), *, about: str = "") -> str:
    """The customer's confirmation of a call (see :func:`action`), ending in :data:`ASK_CONFIRMATION`."""
    return f"I can {action(tool, arguments, about=about)}. {ASK_CONFIRMATION}"


def again(described: str) -> str:
    """The question about an action asked for again whose earlier run may or may not have happened."""
    return (
        f"Your earlier request, {described}, may already have happened: the session stopped while it ran, "
        "and nobody can tell whether it went through. Do it again anyway (a second one)? y/n"
    )


def _shown(value: Any) -> str:
    return f"“{value}”" if isinstance(value, str) else str(value)


def approval(name: str, args: Mapping[str, Any], *, inline_limit: int = 20_000) -> str:
    """The question that shows the person exactly what will run; never a silent cut.

    Short one-line arguments stay on one line: ``Allow delete_file(path="a.txt")? y/n``. Text of several
    lines or long text (code) is shown whole as numbered lines, with its size. Arguments longer in total
    than ``inline_limit`` characters are written, numbered, to a new private file, and the question
    names it and says how long they are. Control characters are shown visibly, so the text cannot redraw
    what the person reads.
    """
    if all(_fits_on_a_line(value) for value in args.values()):
        shown = ", ".join(f"{key}={_literal(value)}" for key, value in args.items())
        return printable(f"Allow {name}({shown})? y/n", multiline=False)
    blocks = [_block(str(key), value) for key, value in args.items()]
    body = "\n".join(blocks)
    if len(body) <= inline_limit:
        return f"Allow {name} to run with these arguments?\n{body}\nAllow {name}? y/n"
    sizes = "; ".join(_summary(str(key), value) for key, value in args.items())
    where = _write_for_reading(name, body)
    return (
        f"Allow {name} to run with arguments too long to show here ({sizes})?\n"
        f"They are written in full, with line numbers, to {where} on {socket.gethostname()}: "
        f"read them there before answering.\nAllow {name} as written in that file? y/n"
    )


_SHORT = 120


def _fits_on_a_line(value: Any) -> bool:
    return len(_literal(value)) <= _SHORT and "\n" not in _text(value)


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _lines(value: Any) -> list[str]:
    lines = _text(value).split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    return lines


def _size(value: Any) -> str:
    count = len(_lines(value))
    return f"{count:,} line{'' if count == 1 else 's'}, {len(_text(value)):,} characters"


def _summary(key: str, value: Any) -> str:
    shown = _literal(value) if _fits_on_a_line(value) else _size(value)
    return f"{printable(key, multiline=False)}: {printable(shown, multiline=False)}"


def _block(key: str, value: Any) -> str:
    """``key``'s whole value: on its line when short, else as numbered lines under a line with its size."""
    if _fits_on_a_line(value):
        return f"  {_summary(key, value)}"
    lines = _lines(value)
    width = len(str(len(lines)))
    numbered = "\n".join(f"    {n:>{width}} │ {printable(line)}" for n, line in enumerate(lines, 1))
    return f"  {printable(key, multiline=False)}: {_size(value)}, in full:\n{numbered}"


def _write_for_reading(name: str, text: str) -> str:
    """Write ``text`` to a new file only this user can read, kept after the question; return its path."""
    folder = tempfile.mkdtemp(prefix="handoffs-approval-")
    path = os.path.join(folder, f"{printable(name, multiline=False).replace(os.sep, '_')}.txt")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as file:
        file.write(text + "\n")
    return path
