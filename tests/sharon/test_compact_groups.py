"""The compact model over groups of identical queries, its exact reduction of free queries of gain <= 0,
and the segment DP's bound and plan (formulations/sharon_segments.py), against brute force on the
expanded graph (Alg. 5 options, or every subset)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.formulations.sharon import _compact_entries, compact_model, decode_compact, query_groups
from cepopt.formulations.sharon_segments import segments_of
from cepopt.instance import Instance
from cepopt.instances.sharon_generator import make_instance
from cepopt.model import Workload
from cepopt.registry import solve
from cepopt.sharon import cost
from cepopt.sharon.exhaustive import bruteforce
from cepopt.sharon.plan import SharonPlan
from cepopt.sharon.problem import SharonProblem, build

from .test_properties import workloads


@st.composite
def with_copies(draw):
    """A random workload (test_properties.workloads) in which some queries appear 2-3 times."""
    w, stats, comb = draw(workloads())
    queries = list(w.queries)
    for i in draw(st.lists(st.integers(0, len(queries) - 1), min_size=1, max_size=3)):
        queries += [queries[i]] * draw(st.integers(1, 2))
    return Workload(tuple(replace(q, name=f"q{k + 1}") for k, q in enumerate(queries))), stats, comb


def _free_pairs(problem) -> int:
    return sum(len(free) for _, free in _compact_entries(problem))


def _check_against_bruteforce(w, stats, comb, subsets):
    problem = SharonProblem.from_workload(w, stats, comb=comb, max_options=None, subsets=subsets)
    if len(problem.graph) > 60:
        return None
    g = problem.graph
    best = g.weight_of(bruteforce(g))
    inst = Instance("sharon", w, stats)
    for method in ("cpsat-compact", "milp-compact"):
        sol = solve(inst, method, problem=problem)
        assert sol.status == "optimal", (method, sol.message)
        assert sol.objective == pytest.approx(best), (method, subsets)
    model = compact_model(problem)
    segments = segments_of(model)
    assert segments.bound() >= best - 1e-9
    assert segments.bound() <= problem.cell_bound() + 1e-9
    x = segments.plan(len(model.names))
    assert model.violation(x) <= 1e-9
    plan = SharonPlan.of(decode_compact(model, x))
    assert cost.evaluate(problem, plan) == pytest.approx(model.value(x))
    assert model.value(x) <= best + 1e-9
    return model, problem


@settings(max_examples=25, derandomize=True, deadline=None)
@given(with_copies())
def test_groups_of_identical_queries_keep_the_optimum(data):
    w, stats, comb = data
    for subsets in ("cause", "all"):
        found = _check_against_bruteforce(w, stats, comb, subsets)
        if found is not None:
            model, problem = found
            _, members = query_groups(problem)
            assert len(members) < len(problem.types)  # the copies were grouped


def test_decode_hands_counts_to_distinct_copies():
    """Three copies of one query in one group: the solver's counts are handed to distinct copies, and
    the plan is valid."""
    inst = make_instance(queries=6, length=6, seed=3)
    w = inst.workload
    first = w.queries[0]
    copies = Workload(tuple(w.queries) + (replace(first, name="c1"), replace(first, name="c2")))
    problem = SharonProblem.from_workload(copies, inst.statistics, max_options=None)
    _, members = query_groups(problem)
    assert max(len(m) for m in members) == 3
    assert max(compact_model(problem).ub) == 3  # x[p,c] counts the three copies
    sol = solve(Instance("sharon", copies, inst.statistics), "milp-compact", problem=problem)
    assert sol.status == "optimal"
    problem.check(sol.plan)


def test_gain_reduction_applies_and_keeps_the_optimum():
    """Generated workloads (default preset, 6 queries of length 5) have free queries of gain <= 0 that the
    model leaves out (mostly with subsets=all; seed 11 also with Alg. 5's options); the optimum stays brute
    force's on the expanded graph."""
    applied = set()
    for seed in range(12):
        inst = make_instance(queries=6, length=5, seed=seed)
        for subsets in ("cause", "all"):
            problem = build(inst, max_options=None, subsets=subsets)
            model = compact_model(problem)
            x_vars = sum(1 for name in model.names if name.startswith("x"))
            _, members = query_groups(problem)
            if len(members) == len(problem.types) and x_vars < _free_pairs(problem):
                applied.add((seed, subsets))
            best = problem.graph.weight_of(bruteforce(problem.graph))
            for method in ("cpsat-compact", "milp-compact"):
                sol = solve(inst, method, problem=problem)
                assert sol.status == "optimal" and sol.objective == pytest.approx(best), (seed, subsets, method)
    assert (11, "cause") in applied and len(applied) >= 8


def test_patterns_two_copies_can_share_are_tied_to_y():
    """A candidate that exactly two copies can share is shared by both or by neither: its free groups are
    tied to y[p] (no x[p,c], no rows of their own). Generated workloads have such candidates; the optimum
    stays brute force's, and the segment DP's plan (tied intervals taken together) is a valid plan."""
    tied_seen = 0
    for seed in range(8):
        inst = make_instance(queries=7, length=5, seed=seed)
        problem = build(inst, max_options=None)
        model = compact_model(problem)
        _, entries, members, _, tied = model.decode
        for k, groups in tied.items():
            _, var_of, y = entries[k]
            assert groups and all(var_of[c] == y for c in groups)
            assert sum(len(members[c]) for c in var_of) == 2
            assert not any(y in cols and len(cols) == 2 and lo is None and hi == 0
                           for cols, _, lo, hi in model.rows)  # no x <= m y row names y
        tied_seen += len(tied)
        best = problem.graph.weight_of(bruteforce(problem.graph))
        for method in ("cpsat-compact", "milp-compact"):
            sol = solve(inst, method, problem=problem)
            assert sol.status == "optimal" and sol.objective == pytest.approx(best), (seed, method)
        segments = segments_of(model)
        assert segments.bound() >= best - 1e-9
        x = segments.plan(len(model.names))
        assert model.violation(x) <= 1e-9
        plan = SharonPlan.of(decode_compact(model, x))
        assert cost.evaluate(problem, plan) == pytest.approx(model.value(x)) and model.value(x) <= best + 1e-9
    assert tied_seen >= 5
