"""Text shown to a person never carries control characters; the store and the JSON export keep it exactly.

A model's reply and a session id full of escape sequences (rename the window, clear the screen, move the
cursor up and draw a fake prompt) go through the real ``handoffs`` command: what the console, ``sessions
list``, ``sessions show`` and the Markdown export print shows them as ``\\x1b`` and never obeys them.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from handoffs_runtime.text import PrintableFormatter, inert_json, printable

from .cli_support import run_handoffs
from .fake_openai import fake_openai

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
FAKE_PROMPT = "\x1b[1A\x1b[2K\ryou › type your password:"
EIGHT_BIT_CSI = "\x9b31m"
REVERSED = "\u202etxt.exe"
REPLY = f"Hello{TITLE}{CLEAR} there.{FAKE_PROMPT} {EIGHT_BIT_CSI}red {REVERSED}\nsecond line\tend"
SESSION = "evil\x1b]0;id\x07\x1b[2J\nrow"

RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _assert_inert(text: str) -> None:
    assert not RAW_CONTROL.search(text), f"raw control characters in {text!r}"


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One real chat whose model answers ``REPLY``, in session ``SESSION``; the store and the output."""
    store = tmp_path_factory.mktemp("injection") / "s.db"
    with fake_openai([REPLY]) as server:
        result = run_handoffs(
            "chat", "--model", "m", "--base-url", server.url, "--store", str(store),
            "--session", SESSION, "--no-colour", stdin="hi\n",
            env={"OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return store, result.stdout


def test_the_console_shows_escape_sequences_instead_of_obeying_them(chat: tuple[Path, str]) -> None:
    _, out = chat
    _assert_inert(out)
    assert "ACME assistant › Hello\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H there." in out
    assert "\\x1b[1A\\x1b[2K\\ryou › type your password:" in out
    assert "\\x9b31mred \\u202etxt.exe\nsecond line\tend" in out  # newline and tab are kept
    assert "session evil\\x1b]0;id\\x07\\x1b[2J" in out


def test_sessions_list_and_show_print_inert_text(chat: tuple[Path, str]) -> None:
    store, _ = chat
    listing = run_handoffs("sessions", "list", "--store", str(store))
    assert listing.returncode == 0, listing.stderr
    _assert_inert(listing.stdout)
    _header, row = listing.stdout.splitlines()  # the newline in the id cannot forge a row
    assert row.startswith("evil\\x1b]0;id\\x07\\x1b[2J\\nrow  ")
    shown = run_handoffs("sessions", "show", SESSION, "--store", str(store))
    assert shown.returncode == 0, shown.stderr
    _assert_inert(shown.stdout)
    assert shown.stdout.startswith("session evil\\x1b]0;id\\x07\\x1b[2J\\nrow · ended")
    assert "ACME assistant › Hello\\x1b]0;pwned\\x07" in shown.stdout


def test_the_markdown_export_is_inert_and_the_json_export_is_exact(chat: tuple[Path, str]) -> None:
    store, _ = chat
    markdown = run_handoffs("sessions", "export", SESSION, "--format", "md", "--store", str(store))
    assert markdown.returncode == 0, markdown.stderr
    _assert_inert(markdown.stdout)
    assert markdown.stdout.startswith("# Session evil\\x1b]0;id\\x07\\x1b[2J\\nrow\n")
    exported = run_handoffs("sessions", "export", SESSION, "--format", "json", "--store", str(store))
    assert exported.returncode == 0, exported.stderr
    _assert_inert(exported.stdout)
    document = json.loads(exported.stdout)
    assert document["session"]["id"] == SESSION
    assert [m["body"]["content"] for m in document["messages"] if m["kind"] == "reply"] == [REPLY]


@pytest.mark.parametrize(
    ("raw", "multiline", "shown"),
    [
        ("a\x1b[2Jb", True, "a\\x1b[2Jb"),
        ("one\ntwo\tthree", True, "one\ntwo\tthree"),
        ("one\ntwo\tthree", False, "one\\ntwo\\tthree"),
        ("windows\r\nline", True, "windows\nline"),
        ("over\rwrite", True, "over\\rwrite"),
        ("bell\x07 del\x7f csi\x9b nul\x00", True, "bell\\x07 del\\x7f csi\\x9b nul\\x00"),
        ("\u202eevil\u2066", True, "\\u202eevil\\u2066"),
        ("plain ünïcode ↪ 🙂", True, "plain ünïcode ↪ 🙂"),
    ],
)
def test_printable(raw: str, multiline: bool, shown: str) -> None:
    assert printable(raw, multiline=multiline) == shown
    assert printable(shown, multiline=multiline) == shown  # once is enough


def test_inert_json_is_the_same_json_value() -> None:
    value = {"text": "\x1b[2J\x9b\x7f\u202e ok"}
    document = inert_json(json.dumps(value, ensure_ascii=False))
    _assert_inert(document)
    assert json.loads(document) == value


def test_log_lines_are_inert() -> None:
    formatter = PrintableFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord("m", logging.WARNING, __file__, 1, "bad reply %r", ("x",), None)
    record.msg = "bad reply \x1b]0;pwned\x07 from %s"
    record.args = ("model\x1b[2J",)
    assert formatter.format(record) == "WARNING bad reply \\x1b]0;pwned\\x07 from model\\x1b[2J"
