"""Every code block of README.md and of the guide in docs/ works as written: YAML and JSON blocks load,
Python blocks run as scripts of their own, and README's first own team answers on the offline model.

A newcomer copies these blocks first; a block that no longer parses or runs is a broken promise. Shell
blocks (``bash``, ``console``) are commands for a person and are not run here; the ones the tests can
afford are run by the tests of their commands.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from .cli_support import run_handoffs

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.DOTALL | re.MULTILINE)
BLOCK_SECONDS = 120
"""A bound per Python block: each runs a team on the offline model in a fresh interpreter."""


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and its text."""

    page: Path
    line: int
    lang: str
    body: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, each with the line its fence opens on."""
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, text.count("\n", 0, match.start()) + 1, match["lang"], match["body"])
        for match in FENCE.finditer(text)
    ]


BLOCKS = [block for page in PAGES for block in blocks_of(page)]
DATA = [block for block in BLOCKS if block.lang in ("yaml", "yml", "json")]
PYTHON = [block for block in BLOCKS if block.lang == "python"]


def block_named(lang: str, first_line: str) -> str:
    """README's block of a language whose first line is ``first_line`` (a file name in a comment)."""
    found = [b.body for b in BLOCKS if b.page.name == "README.md" and b.lang == lang]
    matches = [body for body in found if body.splitlines()[0] == first_line]
    assert len(matches) == 1, f"README has no single {lang} block starting {first_line!r}"
    return matches[0]


def run_script(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    script = folder / "block.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=BLOCK_SECONDS,
        cwd=folder,
        check=False,
    )


def test_blocks_are_found_on_every_page_that_has_them() -> None:
    """The fence pattern reads every block: as many blocks as fences, in pairs, on every page."""
    for page in PAGES:
        fences = sum(1 for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("```"))
        assert fences == 2 * len(blocks_of(page)), f"{page.name}: a fence the test does not read"
    assert len(PYTHON) >= 7 and len(DATA) >= 4


def test_the_fence_pattern_reads_the_language_and_the_line(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# T\n\n```yaml\na: 1\n```\n\ntext\n\n```python\nprint(1)\n```\n", encoding="utf-8")
    found = [(b.line, b.lang, b.body) for b in blocks_of(page)]
    assert found == [(3, "yaml", "a: 1\n"), (9, "python", "print(1)\n")]


@pytest.mark.parametrize("block", DATA, ids=[b.name for b in DATA])
def test_each_yaml_and_json_block_loads(block: Block) -> None:
    try:
        value = json.loads(block.body) if block.lang == "json" else yaml.safe_load(block.body)
    except (ValueError, yaml.YAMLError) as exc:
        pytest.fail(f"{block.name}: the {block.lang} block does not load: {exc}\n{block.body}")
    assert isinstance(value, dict | list), f"{block.name}: loads as {value!r}, not a mapping or a list"


@pytest.mark.parametrize("block", PYTHON, ids=[b.name for b in PYTHON])
def test_each_python_block_runs_as_a_script(block: Block, tmp_path: Path) -> None:
    done = run_script(block.body, tmp_path)
    assert done.returncode == 0, f"{block.name}\n{block.body}\n--- stderr:\n{done.stderr}"


def test_the_library_example_talks_to_the_team(tmp_path: Path) -> None:
    """The guide's first complete script does what its text says: routed by the singular "invoice"."""
    (example,) = [b for b in PYTHON if b.page.name == "library.md"][:1]
    done = run_script(example.body, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "you: I have a question about my invoice"
    assert lines[1].startswith("Billing: ")
    assert lines[-1] == "Billing: Done: look up invoice → invoice INV-1001: paid."


def test_readmes_first_team_runs_on_the_console_as_it_says(tmp_path: Path) -> None:
    """The two files README asks a newcomer to save, and the conversation it suggests trying."""
    folder = tmp_path / "bikes"
    folder.mkdir()
    (folder / "bike_tools.py").write_text(block_named("python", "# bikes/bike_tools.py"), encoding="utf-8")
    (folder / "team.yaml").write_text(block_named("yaml", "# bikes/team.yaml"), encoding="utf-8")
    graph = run_handoffs("graph", "--team", "bikes/team.yaml", cwd=tmp_path)
    assert graph.returncode == 0, graph.stderr
    assert "Workshop" in graph.stdout and "Owner" in graph.stdout
    said = "is my bike ready?\nRT-1001\nyes\nexit\n"
    chat = run_handoffs("chat", "--team", "bikes/team.yaml", "--store", ":memory:", stdin=said, cwd=tmp_path)
    assert chat.returncode == 0, chat.stderr
    assert "Kim at the desk › Hello! I can check on a repair or cancel one." in chat.stdout
    assert "Lee in the workshop has joined" in chat.stdout
    assert "RT-1001: new chain fitted, ready to collect" in chat.stdout
