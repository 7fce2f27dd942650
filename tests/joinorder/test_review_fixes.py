"""Regressions from the join-order review: MILP tol stop, cpsat-order and latency, OR generator."""

import pytest

from cepopt.errors import CepoptError
from cepopt.instances import joinorder_generator as gen
from cepopt.model import Kleene, Not
from cepopt.solve import build_problem, solve

SMALL_WINDOW_8 = gen.make_instance(8, seed=0, preset="small-window")


@pytest.mark.parametrize(("method", "exact", "tol", "inst"), [
    ("milp-order", "dp-ld", 0.1, SMALL_WINDOW_8),  # was: ObjectiveMismatchError (surrogate cost)
    ("milp-tree", "dp-b", 0.5, SMALL_WINDOW_8),
    # was: "optimal" with bound = objective above the true optimum
    ("milp-order", "dp-ld", 0.9, gen.make_instance(9, seed=183, kind="and", window=20.0)),
])
def test_milp_tol_stop_reports_the_proven_bound(method, exact, tol, inst):
    # the tangent-cut loop's tolerance stop (milp-tree's default subset-flow model has no tolerance)
    s = solve(inst, method, params={"tol": tol, **({"model": "compact"} if method == "milp-tree" else {})})
    opt = solve(inst, exact).objective
    if s.status == "optimal":  # proven without the tolerance (the start plan's surrogate is exact): the optimum
        assert s.objective == pytest.approx(opt, rel=1e-9, abs=1e-9)
        return
    assert s.status == "feasible" and "solver_objective" not in s.stats
    assert s.bound <= opt <= s.objective
    assert s.bound == pytest.approx(s.stats["lower_bound_log_cost"], rel=1e-12)


def test_cpsat_order_refuses_latency():
    s = solve(SMALL_WINDOW_8, "cpsat-order", params={"alpha": 1})
    assert s.status == "error" and "no latency" in s.message
    assert solve(SMALL_WINDOW_8, "cpsat-order").status == "feasible"


def _branches(inst):
    return inst.workload[0].pattern.items


@pytest.mark.parametrize(("n", "negation"), [(3, 1), (4, 3), (6, 2)])
def test_or_branches_hold_a_positive_event(n, negation):
    for seed in range(40):
        inst = gen.make_instance(n, seed=seed, kind="or", negation=negation)
        assert all(any(not isinstance(leaf, Not) for leaf in b.items) for b in _branches(inst))
        build_problem(inst)  # was: "... has no positive event to plan"


@pytest.mark.parametrize("n", range(3, 9))
@pytest.mark.parametrize("preset", sorted(gen.PRESETS))
def test_or_predicates_stay_within_branches(n, preset):
    for seed in range(10):
        inst = gen.make_instance(n, seed=seed, preset=preset, kind="or", kleene=1, negation=1)
        branch_of = {(leaf.inner if isinstance(leaf, Kleene) else leaf).var: k
                     for k, b in enumerate(_branches(inst)) for leaf in b.items if not isinstance(leaf, Not)}
        where = inst.workload[0].where
        assert all(branch_of[c.left.ref] == branch_of[c.right.ref] for c in where)
        if gen.PRESETS[preset]["pairs"] == "half":
            sizes = [list(branch_of.values()).count(k) for k in range(3)]
            assert len(where) == min(n // 2, sum(s * (s - 1) // 2 for s in sizes))
        _, p, _ = build_problem(inst, {"seq_temporal": "none"})
        assert sum(int((c.b < -1e-12).sum() // 2) for c in p.conjuncts) == len(where)


def test_or_predicates_out_of_range():
    with pytest.raises(CepoptError, match=r"0\.\.0 \(the pairs within the OR branches"):
        gen.make_instance(3, kind="or", predicates=1)
