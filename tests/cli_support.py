"""Running the ``handoffs`` command as a person does: a subprocess, with no credentials of the caller."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without model settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HANDOFFS_"))}
    return {**env, **(extra or {})}


def run_handoffs(
    *args: str,
    stdin: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``handoffs ARGS`` with ``stdin`` piped in (in ``cwd``); output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "handoffs_runtime", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(env),
        cwd=cwd,
    )
