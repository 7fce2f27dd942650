"""Fuzzing plan JSON: the plans of every family's methods on the bundled instances, with random
edits, are read by the family (``plan_from_json``) and priced (``cost.evaluate``, ``cost.predict``):
a plan and its numbers, or a CepoptError."""

from __future__ import annotations

from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from cepopt.instances import load
from cepopt.instances import names as bundled_names
from cepopt.solve import build_problem, family, methods, solve
from tests.fuzz.budget import budget
from tests.fuzz.strategies import json_values, mutated, outcome

QUICK = {"sharon": ("greedy", "cpsat"), "gloria": ("greedy", "gloria", "cpsat"), "hamlet": ("dynamic", "static"),
         "joinorder": ("greedy", "dp-ld", "dp-b")}


@cache
def cases() -> tuple:
    """(instance name, family, problem, plan JSON) of a few methods per bundled instance."""
    out = []
    for name in bundled_names():
        instance = load(name)
        fam, problem, _ = build_problem(instance)
        for method in QUICK[fam.name]:
            if method in methods(fam.name):
                sol = solve(instance, method, time_limit=5, problem=problem)
                if sol.plan is not None:
                    out.append((name, fam.name, problem, sol.plan_json))
        if fam.baseline_plan is not None:
            out.append((name, fam.name, problem, fam.plan_to_json(fam.baseline_plan(problem))))
    return tuple(out)


def price(family_name: str, problem, value) -> None:
    fam = family(family_name)
    plan = outcome(fam.plan_from_json, problem, value)
    if isinstance(plan, Exception):
        return
    for fn in (fam.evaluate, fam.predict, fam.objective_name, fam.plan_to_json):
        outcome(fn, problem, plan) if fn is not fam.plan_to_json else outcome(fn, plan)


@budget(80)
@given(st.integers(0, 200).flatmap(lambda i: st.tuples(st.just(i), mutated(cases()[i % len(cases())][3], steps=3))))
def test_mutated_plans(case):
    index, value = case
    _, family_name, problem, _ = cases()[index % len(cases())]
    price(family_name, problem, value)


@budget(20)
@given(st.integers(0, 200), json_values)
def test_any_json_value_as_a_plan(index, value):
    _, family_name, problem, _ = cases()[index % len(cases())]
    price(family_name, problem, value)
