"""Issue 22, left-deep frontier: the compiled DP-LD with its upper-bound cut, the window DP (milp-order's
start), and milp-order's MIP-started model, each against an independent oracle (brute force or the
NumPy DP-LD)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.joinorder import bruteforce as bf
from cepopt.joinorder.cost import log_cost_ord, log_order_objective
from cepopt.joinorder.dp import dp_ld
from cepopt.joinorder.dp_ld_fast import dp_ld_fast, fast_applies
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.trivial import trivial
from cepopt.joinorder.window import window_dp

from .conftest import cost_instances, problem_of

TOL = 1e-9


@settings(max_examples=40, deadline=None)
@given(cost_instances(1, 7), st.booleans())
def test_dp_ld_fast_equals_bruteforce(inst, cut):
    w, r, sel = inst
    conj = problem_of(w, r, sel).single
    assert fast_applies(conj)
    ub = log_cost_ord(conj, greedy(conj)) if cut else math.inf
    order, value = dp_ld_fast(conj, ub=ub)
    assert sorted(order) == list(range(conj.n))
    assert math.isclose(value, log_cost_ord(conj, order), rel_tol=TOL, abs_tol=TOL)
    _, best = bf.best_order(conj)
    assert math.isclose(value, best, rel_tol=TOL, abs_tol=TOL)


@settings(max_examples=25, deadline=None)
@given(cost_instances(8, 14), st.booleans())
def test_dp_ld_fast_equals_numpy_dp(inst, cut):
    """Beyond brute force: the NumPy DP-LD is the oracle; the cut never changes the optimum, and the
    ties go the same way (the same order)."""
    w, r, sel = inst
    conj = problem_of(w, r, sel).single
    ref_order, ref = dp_ld(conj)
    order, value = dp_ld_fast(conj, ub=ref if cut else math.inf)  # the cut at the optimum itself
    assert math.isclose(value, ref, rel_tol=TOL, abs_tol=TOL)
    assert math.isclose(log_cost_ord(conj, order), ref, rel_tol=TOL, abs_tol=TOL)


def test_dp_ld_fast_refuses_a_bound_below_the_optimum():
    conj = problem_of(10, [3, 5, 7, 2], [[1, .1, 1, 1], [.1, 1, .5, 1], [1, .5, 1, 1], [1, 1, 1, 1]]).single
    _, best = dp_ld(conj)
    with pytest.raises(ValueError):
        dp_ld_fast(conj, ub=best - 1.0)


def test_dp_ld_fast_does_not_model_latency_or_next_match():
    conj = problem_of(10, [3, 5, 7], [[1] * 3] * 3, alpha=0.5, last=2).single
    assert not fast_applies(conj)
    assert not fast_applies(problem_of(10, [3, 5, 7], [[1] * 3] * 3, strategy="next").single)
    assert not fast_applies(problem_of(10, [3, 5, 7], [[1] * 3] * 3).single, tree_ld=True)


@settings(max_examples=30, deadline=None)
@given(cost_instances(2, 12), st.integers(2, 8), st.sampled_from([0.0, 0.5]))
def test_window_dp_is_a_permutation_never_worse(inst, width, alpha):
    w, r, sel = inst
    n = len(r)
    conj = problem_of(w, r, sel, alpha=alpha, last=n // 2).single
    start = trivial(n)
    out = window_dp(conj, start, width=width)
    assert sorted(out) == list(range(n))
    assert log_cost_ord(conj, out) <= log_cost_ord(conj, start) + TOL


@settings(max_examples=25, deadline=None)
@given(cost_instances(2, 10))
def test_window_dp_over_the_whole_order_is_dp_ld(inst):
    """A window as wide as the order is one DP-LD over all events: the optimum."""
    w, r, sel = inst
    conj = problem_of(w, r, sel).single
    out = window_dp(conj, trivial(conj.n), width=conj.n)
    _, best = dp_ld(conj)
    assert math.isclose(log_cost_ord(conj, out), best, rel_tol=TOL, abs_tol=TOL)


@settings(max_examples=10, deadline=None)
@given(cost_instances(3, 7))
def test_milp_order_with_latency_equals_bruteforce(inst):
    """The MIP start carries the latency variables d too: it must be a feasible point of the model."""
    from cepopt.formulations.joinorder import solve_order_milp

    w, r, sel = inst
    n = len(r)
    conj = problem_of(w, r, sel, alpha=0.5, last=n - 1).single
    out = solve_order_milp(conj, time_limit=30)
    assert out.status == "optimal"
    _, best = bf.best_order(conj)
    assert math.isclose(log_order_objective(conj, out.plan), best, rel_tol=1e-7, abs_tol=1e-7)


@pytest.mark.parametrize("sparse_dp", [False, True])
@pytest.mark.parametrize("preset", ["paper", "small-window", "dense", "hard"])
def test_milp_order_equals_dp_ld_on_the_presets(preset, sparse_dp):
    """n = 12 on every preset, two seeds: milp-order proves the DP-LD optimum, by the MILP alone or with
    the sparse DP first (whose proof is named as the DP's)."""
    from cepopt.formulations.joinorder import solve_order_milp
    from cepopt.instances.joinorder_generator import make_instance
    from cepopt.registry import build_problem

    for seed in (0, 1):
        conj = build_problem(make_instance(12, seed=seed, preset=preset))[1].conjuncts[0]
        out = solve_order_milp(conj, time_limit=60, seed=seed, sparse_dp=sparse_dp)
        assert out.status == "optimal", out.stats
        assert ("sparse dp-ld" in out.stats["proof"]) == (out.stats["iterations"] == 0)
        if not sparse_dp:
            assert "sparse_dp" not in out.stats and out.stats["iterations"] >= 1
        _, best = dp_ld(conj)
        assert math.isclose(log_cost_ord(conj, out.plan), best, rel_tol=1e-7, abs_tol=1e-7)


def test_milp_order_proves_when_the_start_is_solved_in_presolve():
    """Regression: HiGHS proved this model optimal from the MIP start in presolve and reported no dual
    bound; the loop then never proved anything (50 rounds, "feasible"). It must be "optimal" in one round."""
    import numpy as np

    from cepopt.formulations.joinorder import solve_order_milp
    from cepopt.joinorder.problem import from_arrays

    sel = [[1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 0.5], [1.0] * 7, [1.0] * 7, [0.5, 1.0, 1.0, 1.0, 0.5, 0.5, 1.0],
           [0.5, 1.0, 1.0, 0.5, 1.0, 0.25, 0.5], [1.0, 1.0, 1.0, 0.5, 0.25, 1.0, 1.0],
           [0.5, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0]]
    conj = from_arrays(10.0, np.array([1.0, 3.0, 6.0, 3.0, 1.0, 9.0, 1.0]), np.array(sel)).single
    out = solve_order_milp(conj, time_limit=30, sparse_dp=False)  # the MILP's own path
    assert out.status == "optimal" and out.stats["iterations"] == 1
    _, best = bf.best_order(conj)
    assert math.isclose(log_order_objective(conj, out.plan), best, rel_tol=1e-7, abs_tol=1e-7)
