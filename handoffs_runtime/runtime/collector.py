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

Even so, each young collection walks the objects of the sessions in flight once, finds nothing, and moves
them on: about a sixth of a session's CPU, and more per session with 5000 in flight than with 1000 (a
larger heap misses the caches more). So the young threshold adapts: every young collection that finds no
garbage doubles it, up to ``YOUNG_CEILING`` (about what 10,000 sessions in flight hold), and the first
collection that finds any brings it back to ``YOUNG_THRESHOLD``. A program whose sessions leave no cycles
stops paying for young collections once warm; one that makes cyclic garbage keeps them frequent, and at
worst garbage waits ``YOUNG_CEILING`` allocations for its collection, once.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
"""Allocations between young collections once a runtime started (Python's default is 700)."""
YOUNG_CEILING = 640_000
"""The most allocations between young collections while they keep finding no garbage."""
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
        gc.callbacks.append(adapt)


def adapt(phase: str, info: dict[str, int]) -> None:
    """After each collection: a young one that found nothing doubles the young threshold, up to
    ``YOUNG_CEILING``; any that found garbage brings it back to ``YOUNG_THRESHOLD``. Stops adapting,
    for good, once the application set thresholds of its own."""
    if phase != "stop":
        return
    young, middle, old = gc.get_threshold()
    if middle != MIDDLE_THRESHOLD or not YOUNG_THRESHOLD <= young <= YOUNG_CEILING:
        gc.callbacks.remove(adapt)  # not ours any more
        return
    if info["collected"] or info["uncollectable"]:
        wanted = YOUNG_THRESHOLD
    elif info["generation"] == 0:
        wanted = min(young * 2, YOUNG_CEILING)
    else:
        return
    if wanted != young:
        gc.set_threshold(wanted, middle, old)
