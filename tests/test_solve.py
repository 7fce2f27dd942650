"""solve(), compare(), the registry and Solution output, on a toy family."""

import json

import pytest

from cepopt import solve as registry
from cepopt.errors import CepoptError, NotBuiltError, UnknownNameError
from cepopt.instance import Instance
from cepopt.model import Query, Type, Window, Workload
from cepopt.solution import gap
from tests import toy_family


@pytest.fixture
def toy(monkeypatch):
    toy_family.install(monkeypatch)
    return Instance("toy", Workload((Query(Type("A"), Window(1)),)), name="toy-1",
                    params={"weights": [3, 4, 5], "values": [4, 5, 6], "capacity": 7})


def test_solve_rescores_plan_and_reports_optimal(toy):
    sol = registry.solve(toy, "bruteforce")
    assert sol.status == "optimal" and sol.objective == 9.0 and sol.bound == 9.0 and sol.gap == 0.0
    assert sol.plan.items == {0, 1}
    doc = sol.to_json()
    for key in ("problem", "method", "status", "objective", "bound", "gap", "time_s", "plan"):
        assert key in doc
    assert doc["plan"] == [0, 1] and json.dumps(doc)


def test_heuristic_plan_is_feasible_without_bound(toy):
    sol = registry.solve(toy, "first", params={"skip": 1})
    assert sol.status == "feasible" and sol.bound is None and sol.gap is None
    assert sol.objective == 5.0


def test_problem_options_reach_the_builder(toy):
    assert registry.solve(toy, "bruteforce", params={"capacity": 12}).objective == 15.0
    with pytest.raises(CepoptError, match="params.capacity"):
        registry.solve(toy, "bruteforce", params={"capacity": -1})


def test_unknown_method_and_option_are_user_errors(toy):
    with pytest.raises(UnknownNameError, match="unknown method 'nope'"):
        registry.solve(toy, "nope")
    with pytest.raises(CepoptError, match="has no option 'bogus'"):
        registry.solve(toy, "first", params={"bogus": 1})
    with pytest.raises(CepoptError, match="time limit"):
        registry.solve(toy, "first", time_limit=-1)


def test_solver_objective_mismatch_is_a_bug(toy):
    with pytest.raises(registry.ObjectiveMismatchError):
        registry.solve(toy, "liar")


def test_method_limit_is_reported_not_raised(toy):
    sol = registry.solve(toy, "limited")
    assert sol.status == "error" and "too large" in sol.message and sol.plan is None


def test_compare_builds_once_and_tabulates(toy):
    sols = registry.compare(toy, ["bruteforce", "first", "limited"])
    assert [s.method for s in sols] == ["bruteforce", "first", "limited"]
    assert sols.best().method == "bruteforce"
    table = str(sols)
    assert "bruteforce" in table and "optimal" in table and "too large" in table
    df = sols.to_pandas()
    assert list(df["method"]) == ["bruteforce", "first", "limited"]
    assert df.loc[0, "objective"] == 9.0


def test_unknown_and_unbuilt_families(monkeypatch):
    with pytest.raises(UnknownNameError):
        registry.family("nope")
    monkeypatch.setitem(registry.FAMILY_MODULES, "ghost", "cepopt.ghost.methods")
    with pytest.raises(NotBuiltError, match="not built yet"):
        registry.family("ghost")


@pytest.mark.parametrize("obj,bound,sense,expected", [
    (9, 9, "max", 0.0), (8, 10, "max", 0.2), (10, 8, "min", 0.2), (5, None, "min", None), (10, 12, "min", 0.0),
])
def test_gap(obj, bound, sense, expected):
    assert gap(obj, bound, sense) == (pytest.approx(expected) if expected is not None else None)


def test_every_declared_family_has_methods_with_descriptions():
    for name in registry.families():
        try:
            table = registry.methods(name)
        except NotBuiltError:
            continue
        fam = registry.family(name)
        assert fam.sense in ("min", "max")
        assert table, f"family {name} registers no method"
        for meth in table.values():
            assert meth.description and "\n" not in meth.description
