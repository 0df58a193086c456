"""The guide builds as a MkDocs site with ``mkdocs build --strict``, and README stays a short front page.

Strict mode turns every warning into a failure: a page left out of the navigation, a link to a page or
an anchor that does not exist. The tests run it so that CI, which runs README's test command, builds it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 250
BUILD_SECONDS = 180


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mkdocs", reason="MkDocs is in the dev extra: pip install -e '.[dev]'")
    pytest.importorskip("material", reason="the Material theme is in the dev extra: pip install -e '.[dev]'")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
        cwd=project,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )


def test_the_guide_builds_strict_with_navigation_and_search(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    pages = sorted(p.stem for p in (ROOT / "docs").glob("*.md") if p.stem != "index")
    for page in pages:
        assert (tmp_path / "site" / page / "index.html").is_file(), f"docs/{page}.md was not built"
    assert (tmp_path / "site" / "search" / "search_index.json").is_file()
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "md-nav" in home and "Durable sessions" in home  # Material's navigation, with every section


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    """The configuration's own promise: a link to a heading that does not exist stops the build."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    with (tmp_path / "docs" / "quick-start.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the ledger](effects.md#no-such-heading).\n")
    done = build(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr


def test_the_readme_is_a_short_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move sections into docs/"


def test_every_relative_link_of_the_readme_exists() -> None:
    """README is read outside the site (on a forge, in an editor), so mkdocs does not check its links."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    relative = [link for link in links if "://" not in link]
    assert len(relative) >= 10
    missing = [link for link in relative if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
