"""Node generation keeps each distinct node once without a dictionary of nodes (nodes.seq_nodes): every
source's parts partition its own queries, so distinct combinations are distinct nodes. Checked on random
workloads in every mode: no pool lists a node twice, and every node is a valid option of its pool."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepopt.gloria.cost import option_problem
from cepopt.gloria.nodes import generate
from cepopt.gloria.problem import build
from cepopt.registry import MethodLimitError
from tests.gloria.test_fork_accounting import seq_forks
from tests.gloria.test_properties import kleene_exits, workloads


def graph_of_case(case, mode):
    """(problem, its candidate graph in ``mode``, None past the method's limits) of a drawn case."""
    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle)
    try:
        return problem, generate(problem, mode)
    except MethodLimitError:
        return problem, None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits, seq_forks), st.sampled_from(["noprune", "gloria", "safe"]))
def test_every_pool_lists_distinct_valid_nodes(case, mode):
    problem, graph = graph_of_case(case, mode)
    if graph is None:
        return
    generated: dict[int, list] = {}
    for pool_index, option, _d, _alive in graph.trace:
        generated.setdefault(pool_index, []).append(option)
    for pool in problem.pools:
        nodes = generated[pool.index]
        assert len(set(nodes)) == len(nodes), pool.label
        assert all(option_problem(problem, pool, node) is None for node in nodes), pool.label
