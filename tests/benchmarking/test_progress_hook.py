"""CP-SAT's incumbents and bounds reach the progress hook in the model's units; a benchmark cell keeps them."""

import math

from cepopt.benchmarking.grid import Cell
from cepopt.benchmarking.progress import Recorder
from cepopt.benchmarking.runner import run_cell
from cepopt.formulations.model import Model, solve
from cepopt.formulations.native import solver_settings
from cepopt.instance import load


def test_cpsat_reports_incumbents_and_bounds_in_model_units():
    m = Model("tiny", sense="max")
    x, y = m.var("x", 0, 3), m.var("y")
    m.objective_from(2.5 * x + 3 * y + 10)  # a fractional coefficient: CP-SAT solves a scaled objective
    m.add(x + 2 * y <= 4)
    rec = Recorder()
    with solver_settings(progress=rec):
        result = solve(m, "cpsat", seed=0, workers=1)
    assert result.status == "optimal" and result.objective == 18  # x = 2, y = 1 (y is binary)
    assert rec.calls == 1 and rec.primal
    assert math.isclose(rec.primal[-1][1], 18)
    assert all(v <= 18 + 1e-9 for _, v in rec.primal)  # incumbents are feasible values
    assert all(v >= 18 - 1e-9 for _, v in rec.dual)  # bounds are valid upper bounds
    assert [t for t, _ in rec.primal] == sorted(t for t, _ in rec.primal)


def test_no_hook_no_callback():
    rec = Recorder()
    m = Model("tiny", sense="min")
    x = m.var("x", 1, 3)
    m.objective_from(x + 0)
    assert solve(m, "cpsat", seed=0).objective == 1
    assert rec.calls == 0 and rec.primal == []


def test_a_cpsat_cell_keeps_its_trajectory():
    cell = Cell("sharon-example3", "sharon", "cpsat-compact", "cpsat-compact", {}, 0, 0)
    row = run_cell(cell, load("sharon-example3"), time_limit=20)
    assert row["status"] == "optimal" and row["objective"] == 20
    traj = row["progress"]
    assert traj["source"] == "callbacks"
    assert traj["primal"][-1][1] == 20 and traj["dual"][-1][1] == 20
    assert traj["dual"][0][1] >= 20  # the first bound (maximisation) is no lower than the optimum
