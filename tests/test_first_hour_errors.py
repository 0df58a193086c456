"""Issue 35: errors and help a newcomer can act on: each error one line and exit 2, a wrong option the
command's own usage, every command's help with a description, the forms of ``--team`` and two examples;
the README's team-file example is valid YAML and YAML's error hints at quoting."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
import yaml

from handoffs_runtime.cli.helptext import COMMANDS
from handoffs_runtime.cli.main import main, parser
from handoffs_runtime.team.files import TeamFileError, load_team

from .cli_support import run_handoffs

README = Path(__file__).resolve().parent.parent / "README.md"


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_serve_on_a_busy_port_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_handoffs("serve", "--port", str(port), "--store", ":memory:", timeout=60)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line and "Errno" not in line


@pytest.mark.parametrize("command", ["chat", "serve"])
def test_a_base_url_without_scheme_is_refused_at_start_with_the_url_meant(command: str) -> None:
    extra = ("--port", "0", "--store", ":memory:") if command == "serve" else ()
    done = run_handoffs(command, "--model", "llama3.2", "--base-url", "localhost:11434", *extra, timeout=60)
    assert done.returncode == 2
    assert "did you mean http://localhost:11434" in one_line(done.stderr)


def test_a_base_url_from_the_environment_is_checked_too() -> None:
    done = run_handoffs("chat", "--model", "llama3.2", env={"OPENAI_BASE_URL": "localhost:8080/v1"})
    assert done.returncode == 2
    assert "$OPENAI_BASE_URL" in one_line(done.stderr) and "http://localhost:8080/v1" in done.stderr


def commands() -> dict[str, object]:
    sub = next(a for a in parser()._actions if a.dest == "command")
    return dict(sub.choices)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_wrong_option_prints_that_commands_usage_and_exit_2(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, *(["list"] if command == "sessions" else []), "--no-such-option"]
    if command == "credentials":
        argv = [command, "create", "dir", "--no-such-option"]
    if command == "worker":
        argv = [command, "--host", "127.0.0.1:1", "--no-such-option"]
    if command in ("a2a", "temporal"):  # commands of subcommands: the wrong option goes to one of them
        argv = [command, "serve" if command == "a2a" else "dev", "--no-such-option"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: handoffs {command}") and "unrecognized arguments: --no-such-option" in err


def test_every_command_is_described() -> None:
    assert set(commands()) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_commands_help_has_a_description_the_team_forms_and_two_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = capsys.readouterr().out
    assert COMMANDS[command][0].split(":")[0].split()[0] in shown
    examples = re.findall(r"^  handoffs .+$", shown.split("examples:")[-1], re.MULTILINE)
    assert len(examples) == 2
    if command not in ("credentials",):
        assert ".py" in shown and "module:attribute" in shown and "team.yaml" in shown


def test_the_guides_team_file_example_is_valid_yaml() -> None:
    guide = README.parent / "docs" / "your-team.md"  # the example the README once held
    blocks = re.findall(r"```yaml\n(.*?)```", guide.read_text(encoding="utf-8"), re.DOTALL)
    example = next(b for b in blocks if "suggestions:" in b)
    assert yaml.safe_load(example)["suggestions"] == ["Do you have The Hobbit?", "Where is my order BK-1001?"]


def test_yaml_that_needs_quotes_says_so_with_the_line_quoted(tmp_path: Path) -> None:
    team = tmp_path / "team.yaml"
    team.write_text(
        "name: shop\nsuggestions: [Do you have The Hobbit?, Where is my order?]\nagents:\n- name: A\n"
    )
    with pytest.raises(TeamFileError) as refused:
        load_team(str(team))
    said = str(refused.value)
    assert "line 2" in said and "quote" in said
    assert 'suggestions: ["Do you have The Hobbit?", "Where is my order?"]' in said
