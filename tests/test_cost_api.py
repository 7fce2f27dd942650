"""One cost API per family: ``cepopt/<family>/cost.py`` answers ``evaluate`` and ``predict``, declares its
objective, and is what solve, compare, the demo and the experiments call."""

from __future__ import annotations

import importlib
import math

import pandas as pd
import pytest

from cepopt import instances
from cepopt.executor.api import ExecutionResult
from cepopt.solution import Objective
from cepopt.solve import build_problem, compare, families, family, solve

EXAMPLES = {"sharon": "sharon-fig4", "gloria": "gloria-fig7", "hamlet": "hamlet-example",
            "joinorder": "joinorder-e6"}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_family_has_one_cost_module(name):
    cost = importlib.import_module(f"cepopt.{name}.cost")
    fam = family(name)
    assert fam.cost is cost and isinstance(cost.OBJECTIVE, Objective) and fam.sense == cost.OBJECTIVE.sense
    assert callable(cost.evaluate) and callable(cost.predict)
    _, problem, _ = build_problem(EXAMPLES[name])
    plan = fam.baseline_plan(problem)
    assert fam.evaluate(problem, plan) == cost.evaluate(problem, plan)
    assert fam.predict(problem, plan) == cost.predict(problem, plan)


def test_predictions_are_in_the_executors_unit():
    """What each driver predicted before this API, computed here from the cost models."""
    _, problem, _ = build_problem("sharon-fig4")
    sharon = family("sharon")
    plan = solve("sharon-fig4", "sharon").plan
    assert sharon.predict(problem, plan) == problem.cost.total_nonshared() - sharon.evaluate(problem, plan)
    _, problem, _ = build_problem("joinorder-e6")
    plan = solve("joinorder-e6", "dp-ld").plan
    joinorder = family("joinorder")
    assert joinorder.predict(problem, plan) == pytest.approx(math.exp(joinorder.evaluate(problem, plan)))
    _, problem, _ = build_problem("gloria-fig7")
    plan = solve("gloria-fig7", "gloria").plan
    assert family("gloria").predict(problem, plan) == family("gloria").evaluate(problem, plan)


def test_hamlet_prediction_is_the_sum_of_the_decisions_costs():
    from cepopt.hamlet.decide import run_policy

    _, problem, _ = build_problem("hamlet-example")
    for method in ("dynamic", "static", "nonshared"):
        sol = solve("hamlet-example", method)
        decisions, total = run_policy(problem.bursts, method, problem.t_of)
        assert family("hamlet").predict(problem, sol.plan) == sum(d.cost for d in decisions) == total


class _Spy:
    """A fake cost: records its calls and answers what the real one answers plus an offset."""

    def __init__(self, real, offset):
        self.real, self.offset, self.calls = real, offset, 0

    def __call__(self, problem, plan):
        self.calls += 1
        return self.real(problem, plan) + self.offset


@pytest.fixture
def fake_sharon_cost(monkeypatch):
    """Sharon's cost module answers through spies: evaluate exactly (methods that report their own
    objective are checked against it), predict with an offset that shows where it is printed."""
    from cepopt.sharon import cost

    spies = {"evaluate": _Spy(cost.evaluate, 0), "predict": _Spy(cost.predict, 10**6)}
    for name, spy in spies.items():
        monkeypatch.setattr(cost, name, spy)
    return spies


def test_a_fake_cost_is_used_by_solve_and_compare(fake_sharon_cost):
    spy = fake_sharon_cost["evaluate"]
    solve("sharon-fig4", "greedy")
    assert spy.calls == 1
    sols = compare("sharon-fig4", ["greedy", "sharon"])
    assert spy.calls == 3 and [s.status for s in sols] == ["feasible", "optimal"]
    spy.offset = 1000  # a cost that disagrees with a solver's own objective: an error beside the others
    _, problem = build_problem("sharon-fig4")[:2]
    for sol in compare("sharon-fig4", ["greedy", "sharon", "cpsat"]):
        assert ((sol.status == "error" and "cost model gives" in sol.message)
                or sol.objective == spy.real(problem, sol.plan) + 1000), sol


def test_a_fake_cost_is_used_by_the_demo(fake_sharon_cost, monkeypatch, capsys):
    from cepopt import pipeline
    from cepopt.experiments import demo

    monkeypatch.setattr(pipeline, "execute", lambda *a, **k: ExecutionResult(pd.DataFrame(), 7, None, 0.0))
    inst = instances.load("sharon-fig4")
    sols = compare(inst, ["greedy", "sharon"])
    demo._execute_pair(demo.DEMOS[0], inst, sols, None, None, demo._Progress(2))
    out = capsys.readouterr().out
    _, problem, _ = build_problem(inst)
    expected = fake_sharon_cost["predict"].real(problem, sols.best().plan) + 10**6
    assert fake_sharon_cost["predict"].calls == 2 and f"predicted {expected:.6g} (operations" in out, out


def test_a_fake_cost_is_used_by_the_experiments(fake_sharon_cost, monkeypatch):
    from cepopt import pipeline
    from cepopt.executor import session
    from cepopt.experiments import sharon_optimizers, validate_cost_models

    sharon_optimizers.run({"preset": "default", "queries": 6, "seed": 0, "length": 4},
                          only=("greedy",), graphs=("original",))
    assert fake_sharon_cost["evaluate"].calls == 1
    monkeypatch.setattr(pipeline, "execute", lambda *a, **k: ExecutionResult(pd.DataFrame(), 7, None, 0.0))
    monkeypatch.setattr(session, "get_spark", lambda *a, **k: None)
    monkeypatch.setattr(validate_cost_models, "RANDOM_PLANS", {})
    rows = validate_cost_models.run({"family": "sharon", "seed": 0, "quick": True})
    assert rows and all(r["predicted_cost"] >= 10**5 for r in rows)


def test_objectives_are_declared_and_printed(capsys):
    from cepopt.cli import main

    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for name in families():
        assert f"{name}: objective {family(name).objective}" in out
    assert "lower is better" in out and "higher is better" in out


def test_compare_groups_order_and_tree_plans(capsys):
    sols = compare("joinorder-e6", ["dp-ld", "dp-b", "trivial"])
    assert {s.method: s.objective_name for s in sols} == {
        "dp-ld": "ln Cost_ord", "trivial": "ln Cost_ord", "dp-b": "ln Cost_tree"}
    text = str(sols)
    assert text.startswith("2 different objectives (ln Cost_ord, ln Cost_tree)")
    assert text.index("trivial") < text.index("objective: ln Cost_tree") < text.index("dp-b")
    assert sols.to_json()[1]["objective_name"] == "ln Cost_tree"
