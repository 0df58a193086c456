"""The ``handoffs`` command as a person uses it: a subprocess with piped input on the offline model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from handoffs_runtime.teams.acme import ITEM_ID

from .cli_support import run_handoffs


def test_chat_with_piped_input_runs_the_refund_path_and_exits_cleanly() -> None:
    result = run_handoffs("chat", stdin="I want a refund for my shoes\nyes\nexit\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "offline" in out.splitlines()[0]
    assert "you › I want a refund for my shoes" in out  # piped input is echoed
    assert "↪ ACME repairs has joined" in out
    assert f"ACME repairs › Done: look up item → {ITEM_ID}; execute refund → success." in out
    assert "ended" in out.splitlines()[-1]
    assert "\033[" not in out  # no colour when piped


def test_end_of_input_ends_the_session_with_status_0() -> None:
    result = run_handoffs("chat", stdin="I'd like to buy rocket skates\n")
    assert result.returncode == 0, result.stderr
    assert "ACME sales › I can execute order" in result.stdout


def test_order_confirmation_is_asked_in_the_chat() -> None:
    result = run_handoffs("chat", stdin="buy an anvil for 30 dollars\nyes\ny\n")
    assert "Confirm order? y/n › y" in result.stdout
    assert "Done: execute order → Success." in result.stdout


def test_unreachable_model_configuration_is_a_clear_error() -> None:
    result = run_handoffs("chat", "--model", "gpt-4o-mini")
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["default", "ignored"])
def test_ctrl_c_ends_the_session_cleanly(inherited: signal.Handlers) -> None:
    """Also when the chat starts with SIGINT ignored, as a script's background job does: a SIGINT sent
    on purpose ends it (it used to wait for its input forever)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HANDOFFS_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "handoffs_runtime", "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, inherited),
    )
    assert proc.stdout is not None and proc.stdin is not None
    for _ in range(2):  # banner and session line: the chat is up and waiting for input
        proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)  # stdin stays open: closing it would race the signal with an end of input
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "interrupted" in out


@pytest.mark.parametrize(
    "stdin",
    ["I'd like to buy rocket skates\nyes\n", "let me talk to a person\n"],
    ids=["leaves-at-confirmation", "leaves-before-the-operator-answers"],
)
def test_end_of_input_during_a_question_ends_the_session(stdin: str) -> None:
    result = run_handoffs("chat", "--store", ":memory:", stdin=stdin, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "ended" in result.stdout.splitlines()[-1]


def test_piped_input_shows_the_handoff_line_before_the_operators_prompt_it_leads_to() -> None:
    """The line that says who has the conversation comes first, then that agent's question, once."""
    result = run_handoffs(
        "chat", "--store", ":memory:", stdin="let me talk to a person\n\nHello, Sam here.\nexit\n"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    handoff = lines.index("  ↪ ACME operator has joined")
    asked = [i for i, line in enumerate(lines) if line.startswith("HumanAgent input")]
    assert handoff == asked[0] - 1  # no prompt printed before the line, none left dangling
    assert lines[asked[0]].endswith("› ")  # the operator's empty Enter: asked again
    assert lines[asked[1]].endswith("› Hello, Sam here.") and len(asked) == 2
    assert lines[asked[1] + 1] == "ACME operator › Hello, Sam here."
    assert "No human operator" not in result.stdout
