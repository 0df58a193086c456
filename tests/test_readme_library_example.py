"""The README's library example runs as written: extracted from README.md and run as a script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def library_example() -> str:
    """The first Python block of the README's "Using it as a library" section."""
    section = README.read_text(encoding="utf-8").split("## Using it as a library", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the library section has no Python block"
    return match.group(1)


def test_the_library_example_runs_and_talks_to_the_team(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(library_example(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "you: I have a question about my invoice"
    assert lines[1].startswith("Billing: ")  # routed by the singular "invoice"
    assert lines[-1] == "Billing: Done: look up invoice → invoice INV-1001: paid."
