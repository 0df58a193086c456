"""The web by role: customers, operators and the pump apart, each module small enough to read at once."""

from __future__ import annotations

from pathlib import Path

from handoffs_runtime import web

MAX_WEB_LINES = 300


def test_no_module_of_the_web_is_over_300_lines() -> None:
    modules = sorted(Path(web.__file__).parent.rglob("*.py"))
    assert len(modules) > 10  # read from the package, not an empty folder
    long = {path.name: n for path in modules if (n := len(path.read_text().splitlines())) > MAX_WEB_LINES}
    assert not long, f"web modules over {MAX_WEB_LINES} lines (split them by role): {long}"
