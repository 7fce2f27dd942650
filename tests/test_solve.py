"""solve(), compare(), the registry and Solution output, on a toy family."""

import json
import math
import re
from typing import Annotated, Literal

import numpy as np
import pytest

from cepopt import solve as registry
from cepopt.errors import CepoptError, UnknownNameError
from cepopt.instance import Instance
from cepopt.model import Query, Type, Window, Workload
from cepopt.params import Bound, PositiveInt, read_options
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


def test_a_method_without_a_plan_is_an_error_with_its_reason(toy):
    sol = registry.solve(toy, "empty-handed")
    assert (sol.status, sol.plan, sol.objective) == ("error", None, None)
    assert sol.message == "the method returned no plan"


def test_compare_reports_a_failing_method_beside_the_others(toy):
    """A method that raises (a bug, an objective mismatch) does not take the other results down."""
    sols = registry.compare(toy, ["bruteforce", "liar", "crash", "first"])
    assert [s.status for s in sols] == ["optimal", "error", "error", "feasible"]
    assert "ObjectiveMismatchError" in sols[1].message and "cost model gives" in sols[1].message
    assert sols[2].message == "ZeroDivisionError: division by zero in the toy method"
    assert "division by zero" in str(sols) and sols.best().method == "bruteforce"


def test_compare_builds_once_and_tabulates(toy):
    sols = registry.compare(toy, ["bruteforce", "first", "limited"])
    assert [s.method for s in sols] == ["bruteforce", "first", "limited"]
    assert sols.best().method == "bruteforce"
    table = str(sols)
    assert "bruteforce" in table and "optimal" in table and "too large" in table
    df = sols.to_pandas()
    assert list(df["method"]) == ["bruteforce", "first", "limited"]
    assert df.loc[0, "objective"] == 9.0


def test_unknown_families_and_entry_points_without_a_family(monkeypatch):
    import importlib.metadata

    from cepopt import entry_points

    with pytest.raises(UnknownNameError, match="unknown problem family 'nope'"):
        registry.family("nope")
    ep = importlib.metadata.EntryPoint("ghost", "cepopt.model", "cepopt.families")
    monkeypatch.setitem(entry_points.entries("families"), "ghost", ep)
    with pytest.raises(CepoptError, match="declares no Family named 'ghost'"):
        registry.family("ghost")
    ep = importlib.metadata.EntryPoint("ghost", "cepopt.no_such_module", "cepopt.families")
    monkeypatch.setitem(entry_points.entries("families"), "ghost", ep)
    with pytest.raises(ModuleNotFoundError):  # a broken plug-in is an error, not a missing part
        registry.family("ghost")


@pytest.mark.parametrize("obj,bound,sense,expected", [
    (9, 9, "max", 0.0), (8, 10, "max", 0.2), (10, 8, "min", 0.2), (5, None, "min", None), (10, 12, "min", 0.0),
])
def test_gap(obj, bound, sense, expected):
    assert gap(obj, bound, sense) == (pytest.approx(expected) if expected is not None else None)


def test_every_declared_family_has_methods_with_descriptions():
    for name in registry.families():
        table = registry.methods(name)
        fam = registry.family(name)
        assert fam.sense in ("min", "max")
        assert table, f"family {name} registers no method"
        for meth in table.values():
            assert meth.description and "\n" not in meth.description
            read_options(meth.fn, meth.options, {}, meth.name)  # every option has a type to check


def _typed(problem, *, time_limit=None, seed=0, n: PositiveInt = 1, x: float = 0.5, flag: bool = False,
           kind: Literal["order", "tree"] = "order", cap: PositiveInt | None = None,
           tol: Annotated[float, Bound(">=", 0), Bound("<", 1)] = 0.1, name: str = "a", count=3):
    return None


def read(**options):
    return read_options(_typed, ("n", "x", "flag", "kind", "cap", "tol", "name", "count"), options,
                        "method 'typed'")


def test_option_values_are_converted_to_the_declared_types():
    assert read(n="3", x="0.25", flag="yes", kind=" Tree ", cap=None, tol=0, name="b", count=2e6) == {
        "n": 3, "x": 0.25, "flag": True, "kind": "tree", "cap": None, "tol": 0.0, "name": "b", "count": 2000000}
    out = read(n=np.int64(2), x=1, flag=0, cap=5)
    assert out == {"n": 2, "x": 1.0, "flag": False, "cap": 5}
    assert type(out["n"]) is int and type(out["x"]) is float


@pytest.mark.parametrize("key,value,fragment", [
    ("n", "abc", "expected an integer, got 'abc'"),
    ("n", [1], "expected an integer, got [1]"),
    ("n", math.inf, "expected an integer, got inf"),
    ("n", True, "expected an integer, got True"),
    ("n", 2.5, "expected an integer, got 2.5"),
    ("n", 0, "must be >= 1, got 0"),
    ("cap", -1, "must be >= 1, got -1"),
    ("x", "abc", "expected a finite number, got 'abc'"),
    ("x", math.nan, "expected a finite number, got nan"),
    ("flag", "maybe", "expected true or false, got 'maybe'"),
    ("kind", "bushy", "expected one of order, tree, got 'bushy'"),
    ("tol", 1, "must be < 1, got 1"),
    ("tol", -1e-9, "must be >= 0, got -1e-09"),
    ("name", 3, "expected text, got 3"),
    ("count", "abc", "expected an integer, got 'abc'"),  # unannotated: the type of its default
])
def test_bad_option_values_are_user_errors(key, value, fragment):
    with pytest.raises(CepoptError, match=re.escape(f"params.{key} (method 'typed'): {fragment}")):
        read(**{key: value})


def test_an_option_without_a_checkable_type_is_refused():
    def untyped(problem, *, time_limit=None, seed=0, anything=None):
        return None

    with pytest.raises(TypeError, match="annotate option 'anything'"):
        read_options(untyped, ("anything",), {}, "method 'untyped'")


def test_solve_reads_option_values_before_the_build(toy):
    assert registry.solve(toy, "first", params={"skip": "1"}).objective == 5.0
    with pytest.raises(CepoptError, match=re.escape("params.skip (method 'first'): expected an integer, got 'abc'")):
        registry.solve(toy, "first", params={"skip": "abc", "capacity": -1})


def test_option_text_reaches_a_real_method_typed():
    # lp_heavy="false" used to reach bool() as a non-empty string, i.e. True (linearization level 2)
    sol = registry.solve("gloria-fig7", "cpsat", params={"lp_heavy": "false", "workers": "1"})
    used = sol.stats["cpsat_parameters"]
    assert used["linearization_level"] == 1 and used["workers"] == 1 and type(used["workers"]) is int
    assert registry.solve("gloria-fig7", "cpsat", params={"lp_heavy": True, "workers": 1}).objective == sol.objective


def test_compare_refuses_options_no_method_knows_and_an_empty_method_list(toy):
    sols = registry.compare(toy, ["bruteforce", "first"], params={"skip": 1, "capacity": 12})
    assert [s.objective for s in sols] == [15.0, 11.0]
    with pytest.raises(CepoptError, match="no compared method has option 'bogus'"):
        registry.compare(toy, ["bruteforce", "first"], params={"bogus": 1})
    with pytest.raises(CepoptError, match="no compared method has option 'skip'"):
        registry.compare(toy, ["bruteforce"], params={"skip": 1})
    with pytest.raises(CepoptError, match=re.escape("params.skip (method 'first')")):
        registry.compare(toy, ["bruteforce", "first"], params={"skip": "abc"})
    with pytest.raises(CepoptError, match="no method"):
        registry.compare(toy, [])
