"""Every solver backend loads and solves in one process (DESIGN.md: highspy must not sit beside ortools)."""

import importlib.util
import random

import pulp
import pytest
from ortools.sat.python import cp_model

from cepopt.formulations.cpsat import cpsat_stats, solve_cpsat
from cepopt.formulations.milp import BACKENDS, solve_milp


def test_highspy_is_not_installed():
    # ortools carries its own HiGHS; a second copy breaks whichever loads second.
    assert importlib.util.find_spec("highspy") is None


def knapsack(weights, values, cap):
    prob = pulp.LpProblem("knap", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(weights))]
    prob += pulp.lpSum(v * xi for v, xi in zip(values, x))
    prob += pulp.lpSum(w * xi for w, xi in zip(weights, x)) <= cap, "cap"
    return prob


def brute(weights, values, cap):
    n = len(weights)
    return max(sum(values[i] for i in range(n) if m >> i & 1) for m in range(1 << n)
               if sum(weights[i] for i in range(n) if m >> i & 1) <= cap)


@pytest.mark.parametrize("seed", range(5))
def test_all_backends_agree_with_brute_force(seed):
    rng = random.Random(seed)
    n = 10
    weights = [rng.randint(1, 20) for _ in range(n)]
    values = [rng.randint(1, 30) for _ in range(n)]
    cap = sum(weights) // 2
    best = brute(weights, values, cap)
    for backend in BACKENDS:
        result = solve_milp(knapsack(weights, values, cap), backend=backend, time_limit=30, seed=seed)
        assert result.status == "optimal", backend
        assert result.objective == pytest.approx(best), backend
        assert result.bound == pytest.approx(best), backend
    model = cp_model.CpModel()
    x = [model.NewBoolVar(f"x{i}") for i in range(n)]
    model.Add(sum(w * xi for w, xi in zip(weights, x)) <= cap)
    model.Maximize(sum(v * xi for v, xi in zip(values, x)))
    result = solve_cpsat(model, time_limit=30, seed=seed, lp_heavy=True, hint=[(x[0], 1)])
    assert result.status == "optimal" and result.objective == best and result.bound == best
    assert sum(values[i] * result.value(x[i]) for i in range(n)) == best
    stats = cpsat_stats(model, result)
    assert stats["variables"] == n and stats["cpsat_parameters"]["linearization_level"] == 2


def test_infeasible_and_unknown_backend():
    prob = pulp.LpProblem("inf", pulp.LpMinimize)
    x = pulp.LpVariable("x", 0, 1, cat="Binary")
    prob += x
    prob += x >= 2, "impossible"
    for backend in BACKENDS:
        assert solve_milp(prob, backend=backend).status == "infeasible", backend
    from cepopt.errors import CepoptError

    with pytest.raises(CepoptError, match="unknown MILP backend"):
        solve_milp(prob, backend="nosuch")
    with pytest.raises(CepoptError, match="'gurobi' .* is not installed"):  # PuLP's backends by name
        solve_milp(prob, backend="gurobi")


@pytest.mark.parametrize("backend", ["highs", "scip"])
def test_a_solver_error_keeps_the_solvers_reason(backend):
    # OR-Tools re-raises the solver's status as an unrelated AttributeError; the reason must survive
    option = {"highs": {"presolve": "bogus"}, "scip": {"separating/no_such_parameter": 1}}[backend]
    result = solve_milp(knapsack([1, 2], [3, 4], 2), backend=backend, options=option)
    assert result.status == "error"
    assert "canonical_code" not in result.message
    assert ("bogus" if backend == "highs" else "no_such_parameter") in result.message
    assert result.message.startswith(f"{backend} failed:") and "solver options given" in result.message


def test_a_solver_error_does_not_report_the_callers_exception():
    # the solver's error is chained to whatever the caller was handling; only the wrapper is skipped
    try:
        raise ValueError("the caller's own error")
    except ValueError:
        result = solve_milp(knapsack([1, 2], [3, 4], 2), backend="highs", options={"presolve": "bogus"})
    assert result.status == "error"
    assert "bogus" in result.message and "caller" not in result.message
