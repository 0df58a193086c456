"""``handoffs chat --store/--session`` and ``handoffs sessions list | show | export | delete``."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from handoffs_runtime.cli import main as cli
from handoffs_runtime.sessions.sqlite.schema import SCHEMA_VERSION


def _chat(monkeypatch: pytest.MonkeyPatch, store: Path, session: str, *lines: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    assert cli.main(["chat", "--store", str(store), "--session", session, "--no-colour"]) == 0


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store with two sessions, made by the real chat command on the offline model."""
    path = tmp_path / "sessions.sqlite3"
    _chat(monkeypatch, path, "refund", "I want a refund for my shoes", "yes")
    _chat(monkeypatch, path, "buy", "I'd like to buy rocket skates")
    capsys.readouterr()
    return path


def test_list_shows_every_session(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "sessions", "list", "--store", str(store))
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["session", "updated", "status", "messages", "tokens", "active", "agent"]
    assert [r.split()[0] for r in rows] == ["buy", "refund"]
    assert rows[1].split()[-4:] == ["ended", "11", "0", "IssuesAndRepairsAgent"]  # the offline model: 0


def test_show_prints_the_transcript(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "sessions", "show", "refund", "--store", str(store))
    assert code == 0
    assert out.splitlines()[0] == "session refund · ended · active agent IssuesAndRepairsAgent · team acme"
    assert "you › I want a refund for my shoes" in out
    assert "↪ ACME repairs has joined" in out
    assert "result of execute_refund: success" in out


def test_export_markdown_and_json_to_a_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "sessions", "export", "buy", "--format", "md", "--store", str(store))
    assert code == 0 and out.startswith("# Session buy\n") and "**you** (" in out
    target = tmp_path / "buy.json"
    code, out, _ = _run(
        capsys, "sessions", "export", "buy", "--format", "json", "-o", str(target), "--store", str(store)
    )
    assert code == 0 and out == ""
    document = json.loads(target.read_text())
    assert document["session"]["active_agent"] == "SalesAgent"
    assert document["messages"][0]["kind"] == "user"


def test_delete_removes_one_session(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "sessions", "delete", "buy", "--store", str(store))[:2] == (
        0,
        "deleted session buy\n",
    )
    _, out, _ = _run(capsys, "sessions", "list", "--store", str(store))
    assert [r.split()[0] for r in out.splitlines()[1:]] == ["refund"]


@pytest.mark.parametrize("action", [["show", "nope"], ["export", "nope"], ["delete", "nope"]])
def test_an_unknown_session_is_a_clear_error(
    store: Path, capsys: pytest.CaptureFixture[str], action: list[str]
) -> None:
    code, out, err = _run(capsys, "sessions", *action, "--store", str(store))
    assert code == 2 and out == ""
    assert err == "handoffs: no session 'nope' in the store; `handoffs sessions list` shows the ids\n"


def test_reading_commands_never_create_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.sqlite3"
    assert _run(capsys, "sessions", "list", "--store", str(missing))[:2] == (
        0,
        f"no sessions: there is no store at {missing} yet\n",
    )
    code, _, err = _run(capsys, "sessions", "show", "x", "--store", str(missing))
    assert code == 2 and "there is no store at" in err
    assert not missing.exists()


def test_chat_refuses_a_newer_store_and_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "newer.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    code, out, err = _run(capsys, "chat", "--store", str(path))
    assert code == 2 and "handoffs chat" not in out
    assert "was written by a newer handoffs-runtime" in err and "choose another --store path" in err
    assert path.read_bytes() == before


def test_chat_uses_the_default_store_under_xdg_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    assert cli.main(["chat", "--session", "d1"]) == 0
    assert "session d1" in capsys.readouterr().out
    assert _run(capsys, "sessions", "list")[1].splitlines()[1].split()[0] == "d1"
    assert (tmp_path / "handoffs-runtime" / "sessions.sqlite3").exists()


def test_a_memory_store_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _chat(monkeypatch, Path(":memory:"), "m1", "hello")
    assert "ACME assistant › Hello" in capsys.readouterr().out
    assert _run(capsys, "sessions", "list", "--store", ":memory:")[1] == "no sessions stored\n"


@pytest.mark.parametrize("command", [["sessions", "list"], ["chat"]])
def test_a_corrupt_store_is_a_clear_error_and_left_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    path = tmp_path / "corrupt.sqlite3"
    path.write_bytes(b"\x00garbage" * 512)
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    code, _, err = _run(capsys, *command, "--store", str(path))
    assert code == 2
    assert err.startswith(f"handoffs: session store {path} is not a readable session store")
    assert path.read_bytes() == b"\x00garbage" * 512


def test_the_transcript_keeps_the_confirmation_that_authorised_an_order_and_the_one_that_cancelled_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "sessions.sqlite3"
    _chat(
        monkeypatch,
        path,
        "orders",
        "I'd like to buy rocket skates",
        "yes",
        "y",
        "buy an anvil",
        "yes",
        "no thanks",
    )
    capsys.readouterr()
    code, out, _ = _run(capsys, "sessions", "show", "orders", "--store", str(path))
    assert code == 0
    lines = [line.split(maxsplit=3)[3] for line in out.splitlines() if line[:4].strip().isdigit()]
    confirmed = "Order summary: rocket skates for $100. Confirm order? y/n › y"
    cancelled = "Order summary: anvil for $100. Confirm order? y/n › no thanks"
    assert confirmed in lines and cancelled in lines
    assert lines.index(confirmed) < lines.index(
        'ACME sales called execute_order({"product": "rocket skates", "price": 100})'
    )
    assert lines.index(cancelled) < lines.index("result of execute_order: User cancelled order.")

    code, out, _ = _run(capsys, "sessions", "export", "orders", "--format", "json", "--store", str(path))
    questions = [m for m in json.loads(out)["messages"] if m["kind"] == "question"]
    assert [(q["agent"], q["body"]["answer"], q["body"]["person"]) for q in questions] == [
        ("SalesAgent", "y", "customer"),
        ("SalesAgent", "no thanks", "customer"),
    ]
    code, out, _ = _run(capsys, "sessions", "export", "orders", "--format", "md", "--store", str(path))
    assert f"*{confirmed}*" in out
