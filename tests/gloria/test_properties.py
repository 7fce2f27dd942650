"""Property tests on random small workloads: the models are exact over their candidate pools.

cpsat = milp = brute force over the same candidates (NOPRUNE, safe, GLORIA-pruned, exhaustive);
safe pruning loses nothing (= NOPRUNE), also on queries that share a Kleene sub-pattern and go on after
it; the exhaustive space is never worse; CP-SAT over NOPRUNE is never worse than the published search;
the path search is exact on forest-shaped pool graphs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.formulations.gloria import solve_cpsat_gloria, solve_milp_gloria
from cepopt.gloria.cost import evaluate, total_cost
from cepopt.gloria.exhaustive import brute_force
from cepopt.gloria.graph import pool_graph_is_forest
from cepopt.gloria.methods import candidate_graph
from cepopt.gloria.path_search import search
from cepopt.gloria.problem import build
from cepopt.instance import Instance
from cepopt.instances.gloria_generator import random_instance
from cepopt.model import Statistics
from cepopt.registry import MethodLimitError, solve
from cepopt.syntax import parse_queries

cost_models = st.sampled_from(["paper", "physical"])
cycle_costs = st.sampled_from(["V1", "V2"])


def _kleene_exit_instance(cycle: list[str], queries: list[tuple[bool, list[str]]], rates: list[int]) -> Instance:
    inner = cycle[0] if len(cycle) == 1 else f"SEQ({', '.join(cycle)})"
    text = "\n".join(f"q{i}: PATTERN SEQ({'P, ' * head}{inner}+, {', '.join(sorted(tail))}) WITHIN 10"
                     for i, (head, tail) in enumerate(queries, 1))
    types = [*cycle, "P", "X", "Y", "Z"]
    return Instance("gloria", parse_queries(text), Statistics(rates=dict(zip(types, rates, strict=False))))


# Queries sharing one Kleene sub-pattern, each going on with a SEQ tail (some after a type P): a snapshot
# of the cycle's exit type pays off only in the pool after the cycle, which random_instance rarely builds.
kleene_exits = st.builds(
    lambda cycle, queries, rates, cost_model, cycle_cost: (_kleene_exit_instance(cycle, queries, rates),
                                                           cost_model, cycle_cost),
    st.sampled_from([["K0"], ["K0", "K1"], ["K0", "K1", "K2"]]),
    st.lists(st.tuples(st.booleans(), st.lists(st.sampled_from("XYZ"), min_size=1, max_size=3, unique=True)),
             min_size=2, max_size=4),
    st.lists(st.integers(1, 12), min_size=7, max_size=7), cost_models, cycle_costs)

workloads = st.one_of(st.builds(
    lambda n, seed, kleene, nested, cost_model, cycle: (random_instance(n, seed, kleene=kleene, nested=nested,
                                                                        types=max(4, n - 1)),
                                                        cost_model, cycle),
    st.integers(2, 6), st.integers(0, 10**6), st.sampled_from([0.0, 0.4, 0.8]), st.sampled_from([0.0, 0.5]),
    cost_models, cycle_costs), kleene_exits)


@settings(max_examples=25)
@given(workloads)
def test_models_equal_brute_force(case):
    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle)
    values = {}
    for candidates in ("noprune", "safe", "gloria", "exhaustive"):
        try:
            graph = candidate_graph(problem, candidates, max_options=300)
            choice, value, proven = brute_force(graph, max_plans=3e5)
        except MethodLimitError:
            continue
        assert proven and choice is not None
        options = [graph.options[p][j] for p, j in enumerate(choice)]
        assert total_cost(problem, options) == pytest.approx(value)
        assert evaluate(problem, graph.plan(choice)) == pytest.approx(value)
        for solver in (solve_cpsat_gloria, solve_milp_gloria):
            got, status, objective, _, _ = solver(graph, time_limit=20, seed=0)
            assert status == "optimal"
            assert objective == pytest.approx(value, rel=1e-9)
            assert graph.weight(got) == pytest.approx(value, rel=1e-9)
        values[candidates] = value
        if candidates != "exhaustive":
            options, stats = search(graph)
            found = total_cost(problem, options)
            # a repaired path may leave a pruned candidate set, never the NOPRUNE space
            assert found >= values.get("noprune", -1) - 1e-9
            if candidates == "noprune":
                assert found >= value - 1e-9
            if pool_graph_is_forest(problem):
                assert found == pytest.approx(value)
    if "noprune" in values:
        assert values.get("safe", values["noprune"]) == pytest.approx(values["noprune"])
        assert values.get("gloria", values["noprune"]) >= values["noprune"] - 1e-9
        assert values.get("exhaustive", values["noprune"]) <= values["noprune"] + 1e-9


@settings(max_examples=300)
@given(kleene_exits)
def test_safe_pruning_loses_nothing_after_a_kleene_cycle(case):
    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle)
    noprune, safe = (brute_force(candidate_graph(problem, c))[1] for c in ("noprune", "safe"))
    assert safe == pytest.approx(noprune)


@settings(max_examples=15)
@given(st.integers(3, 12), st.integers(0, 10**6))
def test_cpsat_never_worse_than_published_search(n, seed):
    inst = random_instance(n, seed, kleene=0.3)
    cp = solve(inst, "cpsat", time_limit=20)
    assert cp.stats["candidate_status"] == "optimal"
    for method in ("gloria", "gloria-safe", "noprune", "greedy"):
        assert cp.objective <= solve(inst, method).objective + 1e-9
    assert solve(inst, "milp", time_limit=20).objective == pytest.approx(cp.objective)


def test_generator_is_seeded():
    from cepopt.instance import to_json

    assert to_json(random_instance(7, 3)) == to_json(random_instance(7, 3))
    assert to_json(random_instance(7, 3)) != to_json(random_instance(7, 4))


def test_generator_flags_and_errors():
    import argparse

    from cepopt.errors import CepoptError
    from cepopt.instances import gloria_generator

    parser = argparse.ArgumentParser()
    gloria_generator.configure(parser)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(["--queries", "9", "--seed", "2", "--kleene", "1", "--nested", "1"])
    inst = gloria_generator.generate(args)
    assert len(inst.workload) == 9 and inst.problem == "gloria"
    assert solve(inst, "cpsat").stats["candidate_status"] == "optimal"
    with pytest.raises(CepoptError, match="--queries"):
        random_instance(0, 1)
