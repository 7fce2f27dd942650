"""The GLORIA methods pause the cyclic garbage collector while they build (gloria/allocation.py): the
collector must come back exactly as it was, after an exception too, and the results must not change."""

from __future__ import annotations

import gc

import pytest

from cepopt.allocation import collector_paused
from cepopt.registry import solve


def test_the_collector_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the inner block must not re-enable it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_exception_restores_the_collector():
    with pytest.raises(ZeroDivisionError), collector_paused():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_the_block_built_goes_to_the_oldest_generation_unscanned():
    with collector_paused():
        built = [[i] for i in range(2000)]
    assert gc.get_count()[0] < 2000  # not counted as young objects still to scan
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(x) in oldest for x in built)


def test_objects_frozen_by_others_stay_frozen():
    theirs = [object()]  # tracked by the collector, frozen below by "somebody else"
    gc.freeze()
    try:
        with collector_paused():
            built = [[i] for i in range(100)]
        oldest = {id(o) for o in gc.get_objects(generation=2)}
        assert id(theirs) not in oldest  # still frozen: not thawed into the oldest generation
        assert not any(id(x) in oldest for x in built)  # and the block's objects were left young
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("method", ["gloria", "noprune", "greedy"])
def test_methods_leave_the_collector_enabled(method):
    sol = solve("gloria-fig7", method)
    assert sol.plan is not None and gc.isenabled()
