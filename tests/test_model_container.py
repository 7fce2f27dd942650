"""The one model container (formulations/model.py): every backend, exact CP-SAT bounds, proofs that carry
over to exact integers, export that another solver reads back, PuLP's other backends by name, solver
output on stderr, and the time-limit / seed checks made before any solver starts."""

from __future__ import annotations

import json
import math

import pulp
import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.formulations import native
from cepopt.formulations.model import Model, certify, solve, unit_of, write


def knapsack(values, weights, cap) -> Model:
    m = Model("knap", "max")
    xs = [m.var(f"x{i}", obj=v) for i, v in enumerate(values)]
    m.add(sum((w * x for w, x in zip(weights, xs, strict=True)), 0) <= cap)
    return m


@pytest.mark.parametrize("backend", ["cpsat", "highs", "scip", "cbc", "pulp:PULP_CBC_CMD"])
def test_backends_agree(backend):
    m = knapsack([3, 4, 5, 7], [2, 3, 4, 5], 7)
    res = solve(m, backend, time_limit=30)
    assert res.status == "optimal" and res.objective == 10 and res.x == [1, 0, 0, 1]
    assert res.bound >= 10 and res.bound < 11


def test_cpsat_bound_is_exact_beyond_doubles():
    """Integer weights near 2^55 (their sum fits int64): the bound is CP-SAT's integer one, exact, where
    the double BestObjectiveBound() would round."""
    big = 2**55
    m = knapsack([big + 1, big + 3, big + 5], [1, 1, 1], 2)
    res = solve(m, "cpsat")
    assert res.exact and res.status == "optimal"
    assert res.objective == 2 * big + 8 and res.bound == 2 * big + 8 and isinstance(res.bound, int)


def test_rounded_weights_are_no_proof():
    """Beyond int64 the objective is rounded for CP-SAT: 10^20 + i cannot be told apart, so no "optimal"
    unless the bound proves it within one unit; the bound stays valid."""
    values = [10**20 + 7, 10**20 + 1, 10**20 + 5]
    m = knapsack(values, [1, 1, 1], 1)
    res = solve(m, "cpsat")
    assert not res.exact and res.status == "feasible" and res.bound >= 10**20 + 7
    assert unit_of(m) == 1 and not certify(res.objective, res.bound, 1)


def test_unit_and_certify():
    assert unit_of(knapsack([4, 6, 10], [1, 1, 1], 2)) == 2
    assert unit_of(knapsack([4, 6.0], [1, 1], 2)) == 0  # floats are measured values
    assert certify(10, 11.5, 2) and not certify(10, 12, 2)
    assert certify(1.0, 1.0 + 1e-9, 0) and not certify(1.0, 1.1, 0)


def test_algebra_rows_and_constant():
    m = Model("alg", "min")
    a, b = m.var("a", 0, 10), m.var("b", 0, 10, integer=False)
    m.minimize(2 * a + 3 * b + 4)
    m.add(a + b >= 3.5)
    m.add(a - b == 0.5)
    for backend in ("highs", "scip", "cbc"):
        res = solve(m, backend)
        assert res.status == "optimal" and res.objective == pytest.approx(2 * 2 + 3 * 1.5 + 4), backend


def test_mps_export_reads_back(tmp_path):
    m = knapsack([3, 4, 5, 7], [2, 3, 4, 5], 7)
    m.constant = 2
    write(m, tmp_path / "k.mps")
    _, prob = pulp.LpProblem.fromMPS(str(tmp_path / "k.mps"), sense=pulp.LpMaximize)
    prob.solve(pulp.PULP_CBC_CMD(msg=False))
    assert pulp.value(prob.objective) == pytest.approx(12)
    assert write(m, tmp_path / "k.lp") == "lp" and "Binaries" in (tmp_path / "k.lp").read_text()


def test_cpsat_proto_export_reads_back(tmp_path):
    from ortools.sat.python import cp_model

    m = knapsack([3, 4, 5, 7], [2, 3, 4, 5], 7)
    write(m, tmp_path / "k.pbtxt", backend="cpsat")
    back = cp_model.CpModel()
    back.Proto().parse_text_format((tmp_path / "k.pbtxt").read_text())
    solver = cp_model.CpSolver()
    assert solver.Solve(back) == cp_model.OPTIMAL and solver.ObjectiveValue() == 10


def test_cli_export_solves_the_same(tmp_path, capsys):
    path = tmp_path / "f4.mps"
    assert main(["solve", "sharon-fig4", "-m", "milp", "--export", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["export"]["format"] == "mps"
    _, prob = pulp.LpProblem.fromMPS(str(path), sense=pulp.LpMaximize)
    prob.solve(pulp.PULP_CBC_CMD(msg=False))
    assert pulp.value(prob.objective) == pytest.approx(out["objective"]) == 50


@pytest.mark.parametrize("argv,fragment", [
    (["-m", "greedy", "--export", "{tmp}/g.mps"], "method 'greedy' solved no model"),
    (["-m", "cpsat", "--export", "{tmp}/g.xyz"], "unknown model format '.xyz'"),
    (["-m", "cpsat", "--export", "{tmp}/no/g.mps"], "does not exist or is not writable"),
    (["-m", "milp", "--param", "backend=gurobi"], "'gurobi' (PuLP GUROBI / GUROBI_CMD) is not installed"),
    (["-m", "milp", "--param", "backend=pulp:HiGHS"], "PuLP's in-process HiGHS loads highspy"),
    (["-m", "cpsat", "--time-limit", "inf"], "seconds in (0, 1e+07]"),
    (["-m", "milp", "--time-limit", "nan"], "seconds in (0, 1e+07]"),
    (["-m", "milp", "--time-limit", "1e308"], "seconds in (0, 1e+07]"),
    (["-m", "milp-compact", "--time-limit", "-1"], "seconds in (0, 1e+07]"),
    (["-m", "cpsat", "--seed", "2147483648"], "[0, 2147483647]"),
    (["-m", "cpsat", "--seed", "-1"], "[0, 2147483647]"),
], ids=["no-model", "format", "folder", "gurobi", "pulp-highs", "inf", "nan", "1e308", "negative", "seed-big",
        "seed-negative"])
def test_bad_solver_input_is_one_line(tmp_path, capsys, argv, fragment):
    code = main(["solve", "sharon-fig4", *(a.format(tmp=tmp_path) for a in argv)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and fragment in err[0], err


@pytest.mark.parametrize("limit", [math.inf, math.nan, 1e308, -1.0, 0, "3"])
def test_api_time_limits_are_checked(limit):
    with pytest.raises(CepoptError, match="time limit"):
        solve(knapsack([1], [1], 1), "highs", time_limit=limit)


@pytest.mark.parametrize("backend", ["cpsat", "highs", "scip", "cbc"])
def test_api_seeds_are_checked(backend):
    with pytest.raises(CepoptError, match="seed"):
        solve(knapsack([1], [1], 1), backend, seed=2**40)
    if backend != "cpsat":  # HiGHS fails on a negative seed: refused for every MILP backend
        with pytest.raises(CepoptError, match="seed"):
            solve(knapsack([1], [1], 1), backend, seed=-5)


def test_solver_log_and_chatter_reach_stderr_only(capfd):
    m = knapsack(list(range(1, 30)), list(range(30, 1, -1)), 100)
    for backend in ("cpsat", "highs", "scip", "cbc"):
        capfd.readouterr()
        assert solve(m, backend, log=True).status == "optimal"
        out, err = capfd.readouterr()
        assert out == "" and err, backend
    with native.solver_settings(log=True):
        solve(m, "highs")
    out, err = capfd.readouterr()
    assert out == "" and "HiGHS" in err
