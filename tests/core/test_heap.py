"""A settled process: what start-up left is frozen out of every collection, young ones run less often."""

import gc

import pytest

from apps.core import heap


@pytest.fixture
def restored_gc():
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settle_freezes_what_the_process_holds_and_raises_the_young_threshold(restored_gc):
    kept = [[n] for n in range(1000)]  # containers start-up built and keeps
    gc.unfreeze()
    assert gc.get_freeze_count() == 0

    heap.settle()

    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD
    walked = {id(o) for o in gc.get_objects()}  # what collections walk: the three generations
    assert not any(id(k) in walked for k in kept)


def test_garbage_made_after_settling_is_still_collected(restored_gc):
    heap.settle()

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle only the collector frees
    del a, b
    assert gc.collect() >= 2
