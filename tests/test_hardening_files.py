"""Team files from a shared folder, run as the operator runs them: they plant no code and cost no more
than a team is worth. Each attack runs ``handoffs graph --team`` in a process with a memory and time
bound, so a loader that gives in fails the test instead of the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from handoffs_runtime.team.file_reading import MAX_DEPTH, MAX_FILE_BYTES

from .cli_support import cli_env

MEMORY_BOUND = 1024**3
"""The attacker's process gets a gibibyte: the loader needs a few dozen megabytes beyond the imports."""

TEAM = """\
name: shared
model: {provider: OpenAIChatCompletionClient, config: {model: gpt-4o-mini, api_key: not-used}}
agents:
- name: Desk
  handoffs: [Back]
- name: Back
"""

PLANTED = """\
import pathlib
pathlib.Path({marker!r}).write_text("ran as the operator")
raise SystemExit("planted code ran")
"""


def _graph(team: Path | str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``handoffs graph --team TEAM`` in ``cwd``, bounded in memory and time. ``-P``: as the installed
    ``handoffs`` command starts, without the current folder on the module path that ``-m`` adds."""

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))

    return subprocess.run(
        [sys.executable, "-P", "-m", "handoffs_runtime", "graph", "--team", str(team)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        cwd=cwd,
        preexec_fn=bounded,
    )


def _refused(done: subprocess.CompletedProcess[str], team: Path | str, words: str) -> None:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"handoffs: {team}: ") and words in line, line


# --- item 7: a team file plants no code ----------------------------------------------------------------


@pytest.mark.parametrize("planted_in", ["beside the team file", "the current folder"])
def test_a_module_planted_beside_a_team_file_or_in_the_current_folder_never_runs(
    tmp_path: Path, planted_in: str
) -> None:
    shared, work = tmp_path / "shared", tmp_path / "work"
    shared.mkdir()
    work.mkdir()
    (shared / "team.yaml").write_text(TEAM)
    marker = tmp_path / "planted-ran"
    folder = shared if planted_in == "beside the team file" else work
    for name in ("openai", "httpx", "yaml", "tiktoken"):
        (folder / f"{name}.py").write_text(PLANTED.format(marker=str(marker)))
    done = _graph(shared / "team.yaml", work)
    assert not marker.exists(), done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Desk" in done.stdout


def test_the_module_a_team_file_names_is_loaded_from_its_folder_and_its_helpers_too(tmp_path: Path) -> None:
    shared, work = tmp_path / "shared", tmp_path / "work"
    shared.mkdir()
    work.mkdir()
    (shared / "shophelpers.py").write_text("PREFIX = 'refunded '\n")
    (shared / "shoptools.py").write_text(
        textwrap.dedent('''
        from shophelpers import PREFIX

        def refund(order: str) -> str:
            """Refund an order."""
            return PREFIX + order
        ''')
    )
    (shared / "team.yaml").write_text("name: t\nagents:\n- name: Desk\n  tools: [shoptools:refund]\n")
    done = _graph(shared / "team.yaml", work)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_module_beside_the_file_with_an_installed_module_s_name_is_refused_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "planted-ran"
    (tmp_path / "json.py").write_text(PLANTED.format(marker=str(marker)))
    (tmp_path / "team.yaml").write_text("name: t\nagents:\n- name: Desk\n  tools: [json:dumps]\n")
    done = _graph(tmp_path / "team.yaml", tmp_path)
    assert not marker.exists()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "json.py beside the team file has the name of the installed module 'json'" in done.stderr


# --- item 11: bounded reading ---------------------------------------------------------------------------

ALIAS_BOMB = "\n".join(
    [
        "name: bomb",
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
        "agents: [{name: A, examples: *i}]",
    ]
)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        pytest.param(ALIAS_BOMB, "values once its aliases are followed", id="alias-bomb"),
        pytest.param("name: x\nagents: &a [*a]\n", "contains itself", id="recursive"),
        pytest.param(
            "name: x\nagents: &a [{name: A, examples: *a}]\n", "contains itself", id="recursive-in-a-mapping"
        ),
        pytest.param("agents: " + "[" * 5000 + "]" * 5000, f"{MAX_DEPTH} levels deep", id="deep-yaml"),
        pytest.param(
            "name: x\nagents: [" + "{a: " * 200 + "1" + "}" * 200 + "]", "levels deep", id="deep-flow"
        ),
    ],
)
def test_a_hostile_yaml_file_is_one_clear_line(tmp_path: Path, content: str, words: str) -> None:
    assert len(content.encode()) < 64 * 1024
    (tmp_path / "team.yaml").write_text(content)
    _refused(_graph("team.yaml", tmp_path), "team.yaml", words)


def test_deeply_nested_json_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "team.json").write_text('{"name": "x", "agents": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _refused(_graph("team.json", tmp_path), "team.json", "levels deep")


def test_a_team_file_linked_to_an_endless_device_is_refused_before_reading(tmp_path: Path) -> None:
    (tmp_path / "team.yaml").symlink_to("/dev/zero")
    _refused(_graph("team.yaml", tmp_path), "team.yaml", "not a regular file")


def test_a_team_file_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "team.yaml")
    _refused(_graph("team.yaml", tmp_path, timeout=30), "team.yaml", "not a regular file")


def test_an_oversized_team_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    with (tmp_path / "team.yaml").open("w") as file:
        file.write("name: big\nagents: [{name: A}]\n")
        file.write(("# padding\n" * 1024) * (MAX_FILE_BYTES // 10240 + 1))
    _refused(_graph("team.yaml", tmp_path), "team.yaml", f"at most {MAX_FILE_BYTES}")


def test_an_ordinary_anchor_still_works(tmp_path: Path) -> None:
    (tmp_path / "team.yaml").write_text(
        "name: x\nmodel: &m offline\nagents:\n- {name: A, model: *m, handoffs: [B]}\n- {name: B, model: *m}\n"
    )
    done = _graph("team.yaml", tmp_path)
    assert done.returncode == 0, done.stderr
