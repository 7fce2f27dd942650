"""CP-SAT stopped by its time limit before it loaded the model answers UNKNOWN with the response's default
bound 0; that is no bound, and for a maximisation it once "proved" a 20,000-query Sharon plan optimal
(issue 21 part 3: bounds that are never wrong). Checked against the known optimum of a simple model."""

from __future__ import annotations

from cepopt.formulations.convert import to_cpsat
from cepopt.formulations.cpsat import solve_cpsat, solve_model_cpsat
from cepopt.formulations.linear import Model
from cepopt.sharon.methods import _Best
from cepopt.sharon.plan import SharonPlan


def _pairs(n: int) -> tuple[Model, int]:
    """max sum w_i x_i with x_2k + x_2k+1 <= 1: optimum = sum of each pair's larger weight."""
    m = Model("pairs", "max")
    w = [i % 7 + 1 for i in range(n)]
    m.add_vars([f"x{i}" for i in range(n)], obj=w)
    for i in range(0, n - 1, 2):
        m.add_row([i, i + 1], [1, 1], None, 1)
    m.lb, m.ub, m.integer = [0] * n, [1] * n, [True] * n
    return m, sum(max(w[i], w[i + 1]) for i in range(0, n - 1, 2))


def test_a_time_limit_shorter_than_the_load_gives_no_bound_below_the_optimum():
    model, optimum = _pairs(60_000)
    res = solve_model_cpsat(model, time_limit=1e-4, seed=0)  # stops while writing the proto
    assert res.bound is None or res.bound >= optimum, (res.status, res.bound)
    assert res.status != "optimal"
    cp, _ = to_cpsat(model)  # the solver itself, stopped before it loads the model
    direct = solve_cpsat(cp, time_limit=1e-4, seed=0)
    assert direct.bound is None or direct.bound >= optimum, (direct.status, direct.bound)


def test_best_ignores_a_bound_below_a_plan_seen():
    best = _Best(SharonPlan.empty())
    best.offer(SharonPlan.empty(), 100, "test")
    best.tighten(0)
    assert best.bound is None
    best.tighten(100 - 1e-12)  # floating-point rounding of a valid bound is kept
    assert best.bound == 100 - 1e-12
