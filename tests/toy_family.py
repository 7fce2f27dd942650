"""A toy family (0/1 knapsack) that exercises the registry, solve() and compare() without any paper.

Imported by tests only; it registers itself as family "toy".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import SimpleNamespace

from cepopt import solve as registry
from cepopt.errors import CepoptError
from cepopt.solution import MethodResult, Objective


@dataclass(frozen=True)
class Pick:
    items: frozenset[int]


def build(instance, *, capacity=None):
    weights = instance.params.get("weights", [3, 4, 5])
    values = instance.params.get("values", [4, 5, 6])
    cap = capacity if capacity is not None else instance.params.get("capacity", 7)
    if cap < 0:
        raise CepoptError("params.capacity: must be >= 0")
    return {"w": weights, "v": values, "cap": cap}


def evaluate(problem, plan):
    if sum(problem["w"][i] for i in plan.items) > problem["cap"]:
        raise CepoptError("plan exceeds the capacity")
    return float(sum(problem["v"][i] for i in plan.items))


#: the family's cost module: evaluate, predict and the objective
COST = SimpleNamespace(evaluate=evaluate, predict=lambda problem, plan: float(len(plan.items)),
                       OBJECTIVE=Objective("value", "sum of the picked values", "max", "items picked"))

FAMILY = registry.Family(
    name="toy", description="0/1 knapsack for tests", build=build, cost=COST, plan_to_json=lambda p: sorted(p.items),
    plan_from_json=lambda problem, data: Pick(frozenset(data)), problem_options=frozenset({"capacity"}),
    baseline_plan=lambda problem: Pick(frozenset()),
)


@registry.register("toy", "bruteforce", "every subset", exact=True)
def bruteforce(problem, *, time_limit=None, seed=0):
    n = len(problem["w"])
    best = max((frozenset(s) for r in range(n + 1) for s in itertools.combinations(range(n), r)
                if sum(problem["w"][i] for i in s) <= problem["cap"]),
               key=lambda s: (sum(problem["v"][i] for i in s), sorted(s)))
    return MethodResult(Pick(best), status="optimal", solver_objective=float(sum(problem["v"][i] for i in best)))


@registry.register("toy", "first", "take items in order while they fit")
def first(problem, *, time_limit=None, seed=0, skip=0):
    chosen, load = set(), 0
    for i, w in enumerate(problem["w"]):
        if i >= skip and load + w <= problem["cap"]:
            chosen.add(i)
            load += w
    return Pick(frozenset(chosen))


@registry.register("toy", "liar", "reports a wrong objective")
def liar(problem, *, time_limit=None, seed=0):
    return MethodResult(Pick(frozenset()), status="feasible", solver_objective=99.0)


@registry.register("toy", "limited", "refuses every instance")
def limited(problem, *, time_limit=None, seed=0):
    raise registry.MethodLimitError("too large for this method")


@registry.register("toy", "empty-handed", "returns no plan")
def empty_handed(problem, *, time_limit=None, seed=0):
    return None


@registry.register("toy", "crash", "raises a bug")
def crash(problem, *, time_limit=None, seed=0):
    raise ZeroDivisionError("division by zero in the toy method")


def install(monkeypatch):
    """Register the toy family as a plug-in would: an entry point of ``cepopt.families``."""
    import importlib.metadata

    from cepopt import entry_points

    ep = importlib.metadata.EntryPoint("toy", "tests.toy_family:FAMILY", "cepopt.families")
    monkeypatch.setitem(entry_points.entries("families"), "toy", ep)
    monkeypatch.delitem(registry._FAMILIES, "toy", raising=False)
