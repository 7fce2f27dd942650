"""Large but finite costs in the CP-SAT and MILP models: the objective is scaled (below 1 when needed) so
that the solvers take it, and solve() cross-checks the unscaled value; a model that cannot be faithful
is a CepoptError. Before, CP-SAT got integers beyond int64 (pybind TypeError / RuntimeError) and HiGHS
and SCIP coefficients of 1e20 or more (status "error")."""

from __future__ import annotations

import json
import math

import pulp
import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.formulations.milp import BACKENDS, solve_milp
from cepopt.formulations.model import Model
from cepopt.formulations.model import solve as solve_model
from cepopt.formulations.scaling import MAX_INT_SUM, coefficient_total, fit_scale, integer_scale
from cepopt.instance import Instance, load, to_json
from cepopt.model import Statistics, Workload
from cepopt.solve import solve
from cepopt.syntax import parse_queries, parse_query


def fig4(weight) -> Instance:
    """The bundled sharon-fig4 (Table 1 BValues as params.weights) with the weight of (OakSt, MainSt) replaced."""
    inst = load("sharon-fig4")
    weights = {**inst.params["weights"], "OakSt,MainSt": weight}
    return inst.replace(params={**inst.params, "weights": weights}, expected={})


def test_integer_scale():
    assert integer_scale([25, 9, 12]).factor == 1 and integer_scale([25, 9, 12]).exact
    assert integer_scale([0.25, 1.5]).factor == 10 ** 11  # fractional: largest near 1e12, as before
    assert integer_scale([2.5e13, 0.5]).factor == 1  # beyond the target but fits: units, as before
    big = integer_scale([10 ** 20, 8])  # beyond int64: the finest power of ten below 1 that fits
    assert not big.exact and big.factor == 0.01 and big.to_int(10 ** 20) == 10 ** 18
    huge = integer_scale([1e300, 8.0])
    assert huge.factor == 1e-282 and huge.to_int(1e300) == pytest.approx(1e18) and huge.to_int(8.0) == 0
    many = integer_scale([0.5] * 1000, target=1e18, max_power=None)  # the sum, not only the largest, must fit
    assert many.factor == 10 ** 15 and 500 * many.factor <= MAX_INT_SUM


@pytest.mark.parametrize("weight", [1e300, 1e20, 10 ** 20])
@pytest.mark.parametrize("method", ["cpsat", "cpsat-compact", "milp", "milp-compact"])
def test_sharon_huge_weight(weight, method):
    inst = fig4(weight)
    best = solve(inst, "sharon")
    if method in ("cpsat", "milp"):  # by default the LP tree proves it; the solver itself is under test
        tree = solve(inst, method)
        assert tree.status == "optimal" and tree.objective == pytest.approx(best.objective, rel=1e-12)
    sol = solve(inst, method, params={"lp_nodes": 0} if method in ("cpsat", "milp") else None)
    assert sol.status == "optimal", sol.message
    assert sol.objective == pytest.approx(best.objective, rel=1e-12)
    assert sol.stats["solver_objective"] == pytest.approx(best.objective, rel=1e-12)
    if method.startswith("cpsat"):
        assert sol.stats["weight_scale"] < 1 and sol.stats["objective_tolerance"] <= 1e-6


@pytest.mark.parametrize("backend", BACKENDS)
def test_sharon_milp_backends_with_weight_1e300(backend):
    inst = fig4(1e300)
    assert solve(inst, "milp", params={"backend": backend}).objective == solve(inst, "sharon").objective


def test_sharon_ordinary_weights_stay_exact():
    sol = solve(load("sharon-fig4"), "cpsat", params={"lp_nodes": 0})
    assert sol.stats["weight_scale"] == 1 and sol.stats["objective_tolerance"] == 1e-9
    assert sol.objective == solve(load("sharon-fig4"), "sharon").objective


def test_cli_solves_a_huge_weight(tmp_path, capsys):
    path = tmp_path / "fig4.json"
    data = to_json(load("sharon-fig4"))
    data["params"]["weights"]["OakSt,MainSt"] = 1e300
    path.write_text(json.dumps(data))
    assert main(["solve", str(path), "-m", "cpsat", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["objective"] == 1e300


@pytest.mark.parametrize("method", ["cpsat", "milp"])
def test_objective_beyond_floats_is_a_one_line_cli_error(tmp_path, capsys, method):
    """Three weights of 1e308: each is finite, their sum is not (refused when the problem is built)."""
    path = tmp_path / "fig4.json"
    data = to_json(load("sharon-fig4"))
    data["params"]["weights"].update({"OakSt,MainSt": 1e308, "ParkAve,OakSt,MainSt": 1e308, "ElmSt,ParkAve": 1e308})
    path.write_text(json.dumps(data))
    assert main(["solve", str(path), "-m", method, "--param", "split=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["cepopt: error: params.weights: the weights sum beyond float range"]


def test_solver_models_refuse_coefficients_summing_beyond_floats():
    for check in (lambda: coefficient_total([1e308, 1e308]), lambda: integer_scale([1e308, -1e308]),
                  lambda: fit_scale(1, math.inf)):
        with pytest.raises(CepoptError, match="sum beyond floating point"):
            check()


GLORIA = parse_queries("q1: PATTERN SEQ(A, B, C) WITHIN 10\nq2: PATTERN SEQ(A, B, C)+ WITHIN 10\n"
                       "q3: PATTERN SEQ(A, B, D) WITHIN 10")


@pytest.mark.parametrize("rate", [1e90, 10 ** 30, 3.7e40])
@pytest.mark.parametrize("method", ["cpsat", "milp"])
def test_gloria_huge_costs(rate, method):
    inst = Instance("gloria", GLORIA, Statistics(rates={"A": rate, "B": rate / 2, "C": rate, "D": 3 * rate}))
    best = solve(inst, "exhaustive")
    sol = solve(inst, method, params={"candidates": "exhaustive"})  # the candidates that prove Def. 2.7's optimum
    assert sol.status == "optimal", sol.message
    assert sol.objective == pytest.approx(best.objective, rel=1e-9)
    if method == "cpsat":
        assert sol.stats["scale"] < 1 and sol.stats["objective_tolerance"] <= 1e-6


def test_gloria_scaled_down_keeps_the_precision_of_64_bit_integers():
    """80 queries at rates near 1e90: with the largest weight put at the 1e9 / len target (the precision
    of fractional rates) the rounding would exceed 1e-6 of the objective; the finest scale that fits
    int64 keeps it far below."""
    from cepopt.instances.gloria_generator import random_instance

    inst = random_instance(80, seed=2)
    inst = inst.replace(statistics=Statistics(rates={t: 1.37e90 * r for t, r in inst.statistics.rates}))
    sol = solve(inst, "cpsat", time_limit=60)
    assert sol.stats["candidate_status"] == "optimal" and sol.stats["objective_tolerance"] <= 1e-6
    assert sol.objective == pytest.approx(solve(inst, "milp", time_limit=60).objective, rel=1e-9)


@pytest.mark.parametrize("window, rate", [("1e100", 1e100), ("1e10", 1e10)])
def test_joinorder_cpsat_order_with_huge_kleene_logs(window, rate):
    inst = Instance("joinorder", Workload((parse_query(f"PATTERN AND(A a, KL(B b), C c) WITHIN {window}"),)),
                    Statistics(rates={"A": 5, "B": rate, "C": 5}))
    best = solve(inst, "dp-ld")
    sol = solve(inst, "cpsat-order")
    assert sol.status == "feasible" and math.isfinite(sol.objective)
    assert sol.objective == pytest.approx(best.objective, rel=1e-9)  # KL(B) last, as every good order
    assert sol.stats["scale"] < 1000 and sol.stats["objective_tolerance"] <= 1e-6


def test_joinorder_ordinary_scale_is_kept():
    inst = load("joinorder-e4")
    assert solve(inst, "cpsat-order").stats["scale"] == 1000


@pytest.mark.parametrize("backend", BACKENDS)
def test_milp_objective_is_scaled_and_unscaled(backend):
    prob = pulp.LpProblem("knap", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(4)]
    prob += pulp.lpSum(v * 1e300 * xi for v, xi in zip([3, 4, 5, 7], x))
    prob += pulp.lpSum(w * xi for w, xi in zip([2, 3, 4, 5], x)) <= 7, "cap"
    before = dict(prob.objective)
    res = solve_milp(prob, backend=backend, time_limit=30)
    assert res.status == "optimal" and res.objective == pytest.approx(1e301, rel=1e-12)
    assert [res.value(v) for v in x] == [1, 0, 0, 1]
    assert dict(prob.objective) == before  # the caller's model is not rescaled


#: max 1e300 x0 - 1e300 x1 + 5 x2 + 7 x3, x0 <= x1, x2 + x3 <= 1: optimum 7, but next to 1e300 the 5 and 7
#: are below any 64-bit integer or double resolution of the objective.
def unfaithful() -> Model:
    m = Model("unfaithful", "max")
    m.add_vars([f"x{i}" for i in range(4)], obj=[1e300, -1e300, 5, 7])
    m.add_le({0: 1, 1: -1}, 0)
    m.add_le({1: 1, 2: 1}, 2)
    m.add_le({2: 1, 3: 1}, 1)
    return m


@pytest.mark.parametrize("backend", ["cpsat", *BACKENDS])
def test_unfaithful_model_is_never_a_wrong_proof(backend):
    """The model container solves what it can and proves only what carries over: a plan of 7 may be
    proven, any other comes back "feasible" with a bound that still holds (>= 7)."""
    res = solve_model(unfaithful(), backend, time_limit=10)
    assert res.status in ("optimal", "feasible")
    assert res.status != "optimal" or res.objective == 7
    assert res.bound is None or res.bound >= 7


@pytest.mark.parametrize("backend", BACKENDS)
def test_unfaithful_milp_model_is_a_user_error(backend):
    """The PuLP entry point (solve_milp) still refuses an objective scaled beyond the solver's tolerances."""
    prob = pulp.LpProblem("unfaithful", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(4)]
    prob += 1e300 * x[0] - 1e300 * x[1] + 5 * x[2] + 7 * x[3]
    prob += x[0] - x[1] <= 0
    prob += x[1] + x[2] <= 2
    prob += x[2] + x[3] <= 1
    with pytest.raises(CepoptError, match=f"objective coefficients too far apart for {backend}"):
        solve_milp(prob, backend=backend, time_limit=10, seed=0)
