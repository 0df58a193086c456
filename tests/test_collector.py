"""The collector's young threshold adapts: young collections that find no garbage grow it, up to a
ceiling; one that finds garbage brings it back; thresholds a program set itself are left alone."""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterator

import pytest

from handoffs_runtime.runtime import collector
from handoffs_runtime.runtime.collector import MIDDLE_THRESHOLD, YOUNG_CEILING, YOUNG_THRESHOLD


@pytest.fixture
def ours() -> Iterator[None]:
    """The thresholds as the first runtime sets them, with the adapting callback; restored after."""
    saved, callbacks = gc.get_threshold(), list(gc.callbacks)
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, saved[2])
    if collector.adapt not in gc.callbacks:
        gc.callbacks.append(collector.adapt)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        gc.callbacks[:] = callbacks


def _young_collection_of_garbage() -> int:
    looped: list[object] = []
    looped.append(looped)  # a cycle: only the collector frees it
    del looped
    return gc.collect(0)


def test_young_collections_that_find_nothing_make_the_next_ones_rarer_up_to_the_ceiling(ours: None) -> None:
    gc.collect(0)  # whatever the test run left in the young generation
    seen = []
    for _ in range(20):
        assert gc.collect(0) == 0
        seen.append(gc.get_threshold()[0])
    assert all(later == min(2 * earlier, YOUNG_CEILING) for earlier, later in itertools.pairwise(seen))
    assert seen[-1] == YOUNG_CEILING
    assert gc.get_threshold()[1] == MIDDLE_THRESHOLD  # the middle generation's is not touched


def test_a_collection_that_finds_garbage_brings_young_collections_back_at_once(ours: None) -> None:
    for _ in range(20):
        gc.collect(0)
    assert gc.get_threshold()[0] == YOUNG_CEILING
    assert _young_collection_of_garbage() > 0
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD


def test_thresholds_a_program_set_itself_are_left_alone(ours: None) -> None:
    gc.set_threshold(5000, 20, 10)
    gc.collect(0)
    assert gc.get_threshold() == (5000, 20, 10)
    assert collector.adapt not in gc.callbacks  # and it stops adapting for good
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, 10)
    gc.collect(0)
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
