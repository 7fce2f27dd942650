"""The exact bushy-tree methods of issue 22: the compiled DP-B with upper-bound pruning and the
subset-flow M-BUSHY (milp-tree's default).

Both equal brute force for n <= 7 (random cost instances; the four generator presets) and each other
up to n = 12. The pruning bound itself is checked on its own: every node of a brute-force optimal tree
(of the plain DP-B) is a candidate node (so neither method can lose the optimum to the bound they share).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.formulations.joinorder import solve_tree_flow
from cepopt.instances.joinorder_generator import PRESETS, make_instance
from cepopt.joinorder import bruteforce as bf
from cepopt.joinorder.cost import log_cost_tree
from cepopt.joinorder.dp import dp_b
from cepopt.joinorder.dp_fast import candidate_nodes, dp_b_pruned
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.trivial import trivial
from cepopt.joinorder.zstream import zstream
from cepopt.registry import build_problem, solve

from .conftest import cost_instances, problem_of


def _starts(conj):
    return [zstream(conj, greedy(conj))[0], zstream(conj, trivial(conj.n))[0]]


def _nodes(tree) -> list[int]:
    if isinstance(tree, int):
        return []
    out: list[int] = []

    def walk(t) -> int:
        if isinstance(t, int):
            return 1 << t
        mask = walk(t[0]) | walk(t[1])
        out.append(mask)
        return mask

    walk(tree)
    return out[:-1]  # the root aside


@settings(max_examples=40, deadline=None)
@given(cost_instances(2, 7))
def test_pruned_dp_b_and_flow_equal_bruteforce(inst):
    w, r, sel = inst
    conj = problem_of(w, r, sel).single
    _, best = bf.best_tree(conj)
    # the optimal tree survives the bound: the plain DP-B's (brute force compares totals, where the root's
    # PM can swamp the difference between two trees in floating point)
    tree, _ = dp_b(conj)
    keep = candidate_nodes(conj, _starts(conj))
    assert all(keep[t] for t in _nodes(tree))
    got, value, _ = dp_b_pruned(conj, _starts(conj))
    assert math.isclose(value, best, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(log_cost_tree(conj, got), best, rel_tol=1e-9, abs_tol=1e-9)
    out = solve_tree_flow(conj, time_limit=60)
    assert out.status == "optimal"
    assert math.isclose(log_cost_tree(conj, out.plan), best, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("n", [5, 7])
def test_presets_against_bruteforce(preset, n):
    inst = make_instance(n, seed=n, preset=preset)
    ref = solve(inst, "bruteforce", params={"plan": "tree"}).objective
    for method in ("dp-b", "milp-tree"):
        sol = solve(inst, method, time_limit=60)
        assert sol.status == "optimal" and sol.objective == pytest.approx(ref, rel=1e-9), method


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(sorted(PRESETS)), st.integers(8, 12), st.integers(0, 10**6))
def test_dp_b_and_milp_tree_agree_up_to_12(preset, n, seed):
    inst = make_instance(n, seed=seed, preset=preset)
    _, problem, _ = build_problem(inst)
    conj = problem.single
    a = solve(inst, "dp-b", problem=problem)
    b = solve(inst, "milp-tree", time_limit=60, problem=problem)
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    # and the plain (unpruned) DP-B of spec §4.6
    assert dp_b(conj)[1] == pytest.approx(a.objective, rel=1e-9)


@settings(max_examples=15, deadline=None)
@given(cost_instances(2, 7), st.integers(1, 64))
def test_pruned_dp_b_in_chunks_is_the_same_dp(inst, chunk):
    """A layer solved in chunks (so the deadline is seen inside it) gives the same tree and value."""
    conj = problem_of(*inst).single
    assert dp_b_pruned(conj, _starts(conj), chunk_splits=chunk)[:2] == dp_b_pruned(conj, _starts(conj))[:2]


def test_pruned_dp_b_sees_its_deadline_inside_a_layer(monkeypatch):
    """The deadline is looked at between chunks of a layer, not only between layers (a middle layer at
    n = 24 is over a minute of work: dp-b ran 102 s under a 60 s limit)."""
    import cepopt.joinorder.dp_fast as dp_fast
    from cepopt.clock import use_clock
    from cepopt.joinorder.dp import DpTimeout

    conj = build_problem(make_instance(10, seed=1, preset="small-window"))[1].single
    looks = []

    def clock() -> float:
        looks.append(1)
        return float(len(looks))

    monkeypatch.setattr(dp_fast, "now", clock)  # this module's look between chunks only
    with use_clock(lambda: 0.0), pytest.raises(DpTimeout):  # the tables' own looks (cepopt.clock) see time 0
        dp_b_pruned(conj, _starts(conj), deadline=30.5, chunk_splits=8)
    # n = 10 has 9 layers of two or more events: 30 looks at the clock means chunks inside layers
    assert len(looks) == 31
