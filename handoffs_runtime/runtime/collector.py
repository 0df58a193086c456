"""The cyclic garbage collector kept out of the hot path: start-up frozen, young collections rarer.

Modules, pydantic schemas, the team and the agents' classes live as long as the process. Left to the
collector, every full collection walks them again. ``gc.freeze()`` moves what exists when the first
runtime starts to a generation no collection scans; objects freed by reference counting still go at once,
so nothing built later is kept alive by it.

With thousands of sessions in flight, the collector's young collections (every 700 allocations by
default) each walk the objects of every session in flight, and promote them into full collections that
walk them again: about half of the CPU at 5000 sessions. A finished session leaves no reference cycle
(a test checks it), so reference counting frees it and the collector finds nothing there to collect.
So the first runtime to start raises the young generation's threshold to ``YOUNG_THRESHOLD``, unless the
application set thresholds of its own (then they are left as they are).

The middle generation's threshold matters as much: each of its collections moves the objects of the
sessions still in flight to the old generation, and the full collections that follow walk all of them, so
with the default (a middle collection every ten young ones) a session cost about a third more CPU with
5000 in flight than with 1000. Every ``MIDDLE_THRESHOLD`` young collections instead, most sessions end
before their objects are moved, and the cost per session no longer grows with the sessions in flight.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
"""Allocations between young collections once a runtime started (Python's default is 700)."""
MIDDLE_THRESHOLD = 100
"""Young collections between collections of the middle generation (Python's default is 10)."""
_PYTHON_DEFAULT = (700, 10, 10)

_done = False


def freeze_start_up() -> None:
    """Freeze what exists now and make young collections rarer, once per process (see the module)."""
    global _done
    if _done:
        return
    _done = True
    gc.freeze()
    if gc.get_threshold() == _PYTHON_DEFAULT:
        gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, _PYTHON_DEFAULT[2])
