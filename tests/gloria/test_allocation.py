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


@pytest.mark.parametrize("method", ["gloria", "noprune", "greedy"])
def test_methods_leave_the_collector_enabled(method):
    sol = solve("gloria-fig7", method)
    assert sol.plan is not None and gc.isenabled()
