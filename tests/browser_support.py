"""Driving ``handoffs serve`` pages in the system's Chromium with Playwright (never a downloaded browser).

The ``browser`` fixture (in ``conftest.py``) launches it. Screenshots go to ``$HANDOFFS_ARTIFACTS``
(default: the test's temporary directory); CI keeps them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and os.path.exists(p)), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)"
)

WAIT_MS = 20_000


def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("HANDOFFS_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def send(page: object, text: str) -> None:
    await page.wait_for_selector("#text:enabled", timeout=WAIT_MS)  # type: ignore[attr-defined]
    await page.fill("#text", text)  # type: ignore[attr-defined]
    await page.click("#send")  # type: ignore[attr-defined]
