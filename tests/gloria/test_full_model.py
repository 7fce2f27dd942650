"""The full-space model (candidates=full) equals brute force over every partition of every pool.

Random small workloads (SEQ, Kleene and nested templates, Kleene exits, SEQ forks), both cost models,
both Kleene cycle costs and both fork accountings: ``cpsat`` and ``milp`` with ``candidates=full`` prove
the optimum of the exhaustive space (every set partition, every admissible snapshot type), with the
exact cost model's value, and their plan is valid (re-scored by the evaluator).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepopt.gloria.exhaustive import brute_force
from cepopt.gloria.methods import candidate_graph
from cepopt.gloria.problem import build
from cepopt.registry import MethodLimitError, solve
from tests.gloria.test_fork_accounting import seq_forks
from tests.gloria.test_properties import kleene_exits, workloads

accountings = st.sampled_from(["edge", "once"])


def _optimum(inst, params):
    problem = build(inst, **params)
    try:
        graph = candidate_graph(problem, "exhaustive", max_options=400)
        choice, value, proven = brute_force(graph, max_plans=4e5)
    except MethodLimitError:
        return None
    assert proven and choice is not None
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits, seq_forks), accountings)
def test_full_model_equals_brute_force(case, accounting):
    inst, cost_model, cycle = case
    params = {"cost_model": cost_model, "kleene_cycle_cost": cycle, "fork_accounting": accounting}
    optimum = _optimum(inst, params)
    if optimum is None:
        return
    for method in ("cpsat", "milp"):
        sol = solve(inst, method, time_limit=30, params={**params, "candidates": "full"})
        assert sol.status == "optimal", (method, sol.message)
        assert sol.objective == pytest.approx(optimum, rel=1e-9, abs=1e-9), method
        assert sol.bound == pytest.approx(sol.objective)


@pytest.mark.parametrize(("name", "value"), [("gloria-fig7", 307), ("gloria-e6", 128), ("gloria-e7", 177)])
@pytest.mark.parametrize("method", ["cpsat", "milp"])
def test_paper_examples(name, value, method):
    sol = solve(name, method, time_limit=30, params={"candidates": "full"})
    assert sol.status == "optimal" and sol.objective == value and sol.bound == value


def _small_space(case, accounting):
    """(problem, its exhaustive candidate graph when small, else NOPRUNE's) of a drawn case."""
    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle, fork_accounting=accounting)
    try:
        return problem, candidate_graph(problem, "exhaustive", max_options=60)
    except MethodLimitError:
        return problem, candidate_graph(problem, "noprune")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits, seq_forks), accountings)
def test_term_tables_equal_the_reference_edge_functions(case, accounting):
    """The graph build's per-option precomputation (cost.TermTable) gives cost.pair_cost and
    cost.pair_derivable on every pair of options of adjacent pools."""
    from cepopt.gloria.cost import TermTable, block_index, pair_cost, pair_derivable

    problem, graph = _small_space(case, accounting)
    for term in problem.terms:
        table = TermTable(problem, term)
        for oa in graph.options[term.a]:
            sa = table.side_a(oa)
            for ob in graph.options[term.b]:
                sb = table.side_b(ob)
                assert table.derivable(sa, sb) == pair_derivable(problem, term, oa, ob)
                assert table.cost(sa, sb) == pair_cost(problem, term, oa, ob)
                if table.single is not None:  # a fork to one query: its own shortcut, same weight
                    block = next((blk for blk in oa if table.single in blk.queries), None)
                    assert table.single_block(oa, block_index(oa)) == block
                    expected = pair_cost(problem, term, oa, ob) if pair_derivable(problem, term, oa, ob) else None
                    weight = table.single_weight(block, sb)
                    assert weight == expected and type(weight) is type(expected)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits, seq_forks), accountings, st.sampled_from(["noprune", "gloria", "safe"]))
def test_edge_tables_equal_the_reference_edge_functions(case, accounting, mode):
    """The graph build computes each distinct pair of restrictions to an edge's queries once (either side,
    graph.edge_table): every table still holds exactly the derivable node pairs (cost.edge_derivable),
    each with cost.edge_cost's weight."""
    from cepopt.gloria.cost import edge_cost, edge_derivable
    from cepopt.gloria.nodes import generate

    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle, fork_accounting=accounting)
    try:
        graph = generate(problem, mode)
    except MethodLimitError:  # a directed cycle in the pool graph
        return
    for (a, b), table in graph.allowed.items():
        expected = {(i, j): edge_cost(problem, a, b, oa, ob)
                    for i, oa in enumerate(graph.options[a]) for j, ob in enumerate(graph.options[b])
                    if edge_derivable(problem, a, b, oa, ob)}
        assert table == expected, (problem.pools[a].label, problem.pools[b].label)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits, seq_forks), accountings)
def test_edge_tables_into_one_node_equal_the_reference_edge_functions(case, accounting):
    """graph.edge_table's path for a pool b of one node (rows ``[(0, w)]`` or empty), taken with each
    node of the exhaustive space of b alone, derivable from some nodes of a or not: the pairs and
    weights of cost.edge_derivable / cost.edge_cost."""
    from cepopt.gloria.cost import edge_cost, edge_derivable
    from cepopt.gloria.graph import edge_table

    problem, graph = _small_space(case, accounting)
    for a, b in problem.edges:
        opts_a = graph.options[a]
        for ob in graph.options[b]:
            expected = {(i, 0): edge_cost(problem, a, b, oa, ob)
                        for i, oa in enumerate(opts_a) if edge_derivable(problem, a, b, oa, ob)}
            table = edge_table(problem, a, b, opts_a, [ob])
            assert table == expected and len(table.rows) == len(opts_a)
