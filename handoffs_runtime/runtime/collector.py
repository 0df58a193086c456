"""What is built when a runtime starts is frozen out of the cyclic garbage collector's scans.

Modules, pydantic schemas, the team and the agents' classes live as long as the process. Left to the
collector, every full collection walks them again, and with thousands of sessions in flight that walk
is a large share of the CPU. ``gc.freeze()`` moves what exists now to a generation no collection scans;
objects freed by reference counting still go at once, so nothing built later is kept alive by it. It is
done once per process: what the first runtime to start finds is what start-up built.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_start_up() -> None:
    """Freeze what exists now, the first time a runtime starts in this process (see the module)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
