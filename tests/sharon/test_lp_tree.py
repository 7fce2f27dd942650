"""The LP branch-and-bound of :mod:`cepopt.formulations.clique_bnb` against brute force on random
graphs given by random cliques: its plan is independent and weighs what it reports, its bound is never
below the optimum, and a closed tree holds the optimum (with integer and with fractional weights, and
with node budgets that stop it early)."""

from __future__ import annotations

import time
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.formulations.clique_bnb import clique_branch_and_bound


def _optimum(weights, cliques) -> float:
    n = len(weights)
    conflict = {(a, b) for c in cliques for a, b in combinations(sorted(c), 2)}
    best = 0.0
    for mask in range(1 << n):
        chosen = [i for i in range(n) if mask >> i & 1]
        if all((a, b) not in conflict for a, b in combinations(chosen, 2)):
            best = max(best, sum(weights[i] for i in chosen))
    return best


@st.composite
def packings(draw):
    n = draw(st.integers(2, 12))
    vertex = st.integers(0, n - 1)
    cliques = draw(st.lists(st.lists(vertex, min_size=2, max_size=min(5, n), unique=True), max_size=14))
    if draw(st.booleans()):
        weights = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    else:
        weights = draw(st.lists(st.floats(0, 30, allow_nan=False).map(lambda w: round(w, 3)), min_size=n, max_size=n))
    return [float(w) for w in weights], cliques, draw(st.sampled_from([1, 2, 3, 64]))


@settings(max_examples=150, derandomize=True, deadline=None)
@given(packings())
def test_tree_against_brute_force(data):
    weights, cliques, node_limit = data
    best = _optimum(weights, cliques)
    tree = clique_branch_and_bound(weights, cliques, node_limit=node_limit, threads=1)
    assert tree is not None
    chosen = [i for i, xi in enumerate(tree.x) if xi]
    assert all(not (set(c) >= {a, b}) for c in cliques for a, b in combinations(chosen, 2))
    assert tree.objective == pytest.approx(sum(weights[i] for i in chosen))
    assert tree.objective <= best + 1e-9
    assert tree.bound >= best - 1e-6
    assert tree.root_bound >= best - 1e-6
    if tree.closed:
        assert tree.objective == pytest.approx(best)
        assert tree.bound == pytest.approx(best)
    if node_limit >= 64:
        assert tree.closed  # 12 vertices never need 64 LPs


def test_an_odd_cycle_needs_branching_and_an_incumbent_is_kept():
    # a 5-cycle of edges: the LP puts 1/2 everywhere (bound 2.5 x 10), the optimum is 2 x 10
    cycle = [[i, (i + 1) % 5] for i in range(5)]
    tree = clique_branch_and_bound([10.0] * 5, cycle, node_limit=64, threads=2)
    assert tree.root_bound == pytest.approx(25)
    assert tree.closed and tree.objective == 20 and tree.nodes > 1
    start = [1, 0, 1, 0, 0]
    early = clique_branch_and_bound([10.0] * 5, cycle, incumbent=start, node_limit=1)
    assert not early.closed and early.objective == 20 and early.bound == pytest.approx(25)


def test_a_passed_deadline_stops_after_the_root():
    cycle = [[i, (i + 1) % 5] for i in range(5)]
    late = clique_branch_and_bound([10.0] * 5, cycle, deadline=time.perf_counter() - 1)
    assert late is None or (not late.closed and late.bound >= 20 and late.nodes == 1)
