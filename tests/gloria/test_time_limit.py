"""Methods honour the time limit while they build their candidate graph, not only while they search it."""

from __future__ import annotations

import pytest

from cepopt.instances.gloria_generator import random_instance
from cepopt.registry import solve

# Its exhaustive graph has an edge table of 2797 x 1985 option pairs: about 17 s to build on 2 cores.
BIG = random_instance(10, 1, types=5, kleene=0.0)


@pytest.mark.parametrize("method,params", [
    ("exhaustive", {"max_plans": 1e30, "max_options": 100000}),
    ("cpsat", {"candidates": "exhaustive", "max_options": 100000}),
])
def test_exhaustive_build_stops_at_the_time_limit(method, params):
    sol = solve(BIG, method, time_limit=0.5, params=params)
    # a time-out returns Greedy's plan (issue 30: never less than greedy), no bound
    assert sol.status == "feasible" and sol.plan is not None and sol.bound is None
    assert sol.objective == solve(BIG, "greedy").objective
    assert "building the exhaustive candidate graph" in sol.message
    # (stopped while building: the message says so; wall time is benchmarked, never asserted in tests)



def test_exhaustive_refuses_too_many_plans_before_building_the_edges(monkeypatch):
    def no_edges(*args, **kwargs):
        raise AssertionError("the edge tables were built although max_plans already refuses the space")

    monkeypatch.setattr("cepopt.gloria.exhaustive.complete_edges", no_edges)
    sol = solve(BIG, "exhaustive", params={"max_options": 100000})
    assert sol.status == "error" and "exceed max_plans=5e+06" in sol.message
