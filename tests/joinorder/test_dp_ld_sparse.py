"""Issue 22: the sparse bounded DP-LD (cepopt.joinorder.dp_ld_sparse) against independent oracles (brute
force, the dense DP-LD), its limits (a valid lower bound when it stops), and milp-order's use of it."""

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.joinorder import bruteforce as bf
from cepopt.joinorder.cost import order_logs
from cepopt.joinorder.dp import dp_ld
from cepopt.joinorder.dp_ld_sparse import sparse_dp_ld
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.trivial import trivial

from .conftest import cost_instances, problem_of

TOL = 1e-9
PRESETS = ["paper", "small-window", "dense", "hard"]


def _var(conj, order) -> float:
    """ln Σ_{k<n} PM(prefix k): the cost without PM(all), which every order pays."""
    logs = order_logs(conj, order)[:-1]
    return float(np.logaddexp.reduce(logs))


def _full(conj, var: float) -> float:
    return float(np.logaddexp(var, order_logs(conj, list(range(conj.n)))[-1]))


def _preset_conj(preset: str, n: int, seed: int):
    from cepopt.instances.joinorder_generator import make_instance
    from cepopt.registry import build_problem

    return build_problem(make_instance(n, seed=seed, preset=preset))[1].conjuncts[0]


@settings(max_examples=60, deadline=None)
@given(cost_instances(2, 7), st.sampled_from(["greedy", "trivial"]), st.sampled_from(["forward", "backward"]))
def test_sparse_dp_equals_bruteforce(inst, start, direction):
    w, r, sel = inst
    conj = problem_of(w, r, sel).single
    ub = _var(conj, greedy(conj) if start == "greedy" else trivial(conj.n))
    res = sparse_dp_ld(conj, ub, stop_early=False, direction=direction)
    assert res.proven and sorted(res.order) == list(range(conj.n))
    assert math.isclose(_var(conj, res.order), res.value, rel_tol=TOL, abs_tol=TOL)
    _, best = bf.best_order(conj)
    assert math.isclose(_full(conj, res.value), best, rel_tol=TOL, abs_tol=TOL)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PRESETS), st.integers(8, 14), st.integers(0, 10_000), st.sampled_from(["forward", "backward"]))
def test_sparse_dp_equals_dense_dp_on_the_presets(preset, n, seed, direction):
    conj = _preset_conj(preset, n, seed)
    _, ref = dp_ld(conj)
    res = sparse_dp_ld(conj, _var(conj, greedy(conj)), stop_early=False, direction=direction)
    assert res.proven
    assert math.isclose(_full(conj, res.value), ref, rel_tol=TOL, abs_tol=TOL)
    assert math.isclose(_full(conj, _var(conj, res.order)), ref, rel_tol=TOL, abs_tol=TOL)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PRESETS), st.integers(8, 14), st.integers(0, 10_000), st.sampled_from(["forward", "backward"]))
def test_a_gap_proof_is_within_its_gap(preset, n, seed, direction):
    """Closed by the gap (the incumbent returned): its variable cost is within ``gap`` (log) of the
    dense DP's optimum, and the lower bound is below the optimum. Checked on the variable cost, where
    1e-9 is not hidden by PM(all)."""
    conj = _preset_conj(preset, n, seed)
    order, _ = dp_ld(conj)
    opt = _var(conj, order)
    start = greedy(conj)
    gap = 1e-9
    res = sparse_dp_ld(conj, _var(conj, start), incumbent=start, gap=gap, stop_early=False, direction=direction)
    assert res.proven
    assert res.lower <= opt + 1e-12 * max(1.0, abs(opt))
    assert _var(conj, res.order) - opt <= gap + 1e-12 * max(1.0, abs(opt))


@settings(max_examples=25, deadline=None)
@given(cost_instances(8, 14))
def test_sparse_dp_equals_dense_dp_with_the_optimum_as_bound(inst):
    """The cut at the optimum itself (the tightest ub) keeps the optimal order."""
    w, r, sel = inst
    conj = problem_of(w, r, sel).single
    order, ref = dp_ld(conj)
    res = sparse_dp_ld(conj, _var(conj, order), stop_early=False)
    assert res.proven and math.isclose(_full(conj, res.value), ref, rel_tol=TOL, abs_tol=TOL)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(PRESETS), st.integers(8, 12), st.integers(0, 10_000), st.integers(1, 50))
def test_a_stopped_search_gives_a_valid_lower_bound(preset, n, seed, max_sets):
    """Stopped by max_sets: no order, and its lower bound never exceeds the optimum (both directions)."""
    conj = _preset_conj(preset, n, seed)
    order, _ = dp_ld(conj)
    opt = _var(conj, order)
    ub = _var(conj, greedy(conj))
    res = sparse_dp_ld(conj, ub, max_sets=max_sets, stop_early=False, direction=["forward", "backward"][seed % 2])
    assert res.lower <= opt + TOL * max(1.0, abs(opt))
    if res.proven:
        assert math.isclose(res.value, opt, rel_tol=TOL, abs_tol=TOL)
    else:
        assert res.order is None and res.stats["stopped"] == "max_sets" and res.value == ub


def test_the_deadline_is_honoured():
    conj = _preset_conj("dense", 14, 0)
    res = sparse_dp_ld(conj, _var(conj, greedy(conj)), deadline=time.perf_counter() - 1.0)
    assert not res.proven and res.stats["stopped"] == "time" and res.lower <= res.value


def test_a_bound_below_the_optimum_is_refused():
    conj = _preset_conj("hard", 10, 0)
    order, _ = dp_ld(conj)
    with pytest.raises(ValueError):
        sparse_dp_ld(conj, _var(conj, order) - 1.0)


def test_dense_instances_stop_early_when_the_cut_does_not_bite():
    conj = _preset_conj("dense", 30, 0)
    res = sparse_dp_ld(conj, _var(conj, greedy(conj)))
    assert not res.proven and res.stats["stopped"] == "no_cut"


@pytest.mark.parametrize(("preset", "seed"), [("hard", 0), ("hard", 1), ("small-window", 0), ("dense", 2),
                                             ("paper", 0)])
def test_milp_order_names_the_dp_proof(preset, seed):
    """n = 18: the sparse DP proves the dense DP-LD's optimum inside milp-order, and says so."""
    from cepopt.formulations.joinorder import solve_order_milp
    from cepopt.joinorder.cost import log_cost_ord

    conj = _preset_conj(preset, 18, seed)
    out = solve_order_milp(conj, time_limit=60, seed=seed)
    assert out.status == "optimal" and "sparse dp-ld" in out.stats["proof"] and out.stats["iterations"] == 0
    _, ref = dp_ld(conj)
    assert math.isclose(log_cost_ord(conj, out.plan), ref, rel_tol=TOL, abs_tol=TOL)


def test_milp_order_on_timeout_gives_a_plan_and_a_valid_bound():
    """A limit too short for any proof: a plan, status feasible, and a bound at most the optimum."""
    from cepopt.formulations.joinorder import solve_order_milp
    from cepopt.joinorder.cost import log_cost_ord

    conj = _preset_conj("dense", 16, 1)
    out = solve_order_milp(conj, time_limit=0.05, seed=1)
    _, ref = dp_ld(conj)
    assert sorted(out.plan) == list(range(16))
    if out.status != "optimal":
        assert out.stats["lower_bound_log_cost"] <= ref + 1e-9
        assert log_cost_ord(conj, out.plan) - out.log_ratio <= ref + 1e-9
