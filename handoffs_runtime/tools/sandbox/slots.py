"""At most so many sandboxed runs at once in a process; one past that is refused in plain words.

Each run is a supervisor and a tree of processes with a memory budget of its own, so runs at once
multiply it: one model response of 300 code calls made 832 processes and 2.8 GiB. A run past
``MAX_RUNS_AT_ONCE`` is not queued (a queue would only hold the turn, and the processes, for longer); it
is refused at once with a sentence the model can act on, and the runs already going are untouched.
"""

from __future__ import annotations

import threading
from collections.abc import Coroutine
from typing import Any, Protocol

MAX_RUNS_AT_ONCE = 8
"""Sandboxed runs one process allows at the same time (every session, agent and response together)."""


class _Rendered(Protocol):
    def render(self) -> str: ...


class SandboxSlots:
    """A count of runs going, bounded by ``most`` (a setting: change it before runs start)."""

    def __init__(self, most: int = MAX_RUNS_AT_ONCE) -> None:
        self.most = most
        self.running = 0
        self._lock = threading.Lock()

    def busy(self) -> str:
        return (
            f"not run: {self.most} programs are already running, the most this service runs at once; "
            "try again when the earlier ones have finished, or do without running code"
        )

    async def run(self, run: Coroutine[Any, Any, _Rendered]) -> str:
        """``run``'s rendered result when a slot is free, else the refusal (``run`` never starts)."""
        with self._lock:
            free = self.running < self.most
            self.running += free
        if not free:
            run.close()
            return self.busy()
        try:
            return (await run).render()
        finally:
            with self._lock:
                self.running -= 1


SLOTS = SandboxSlots()
"""The process's slots, shared by every ``execute_python_code`` tool."""
