"""cost.cycle_cost (the shared and unshared options priced in two loops) against the straightforward
per-edge formula of §6 (V1 / V2), and cost.unary_costs against the per-option costs, on every option
of random workloads under both cost models, both cycle costs and both fork accountings."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepopt.gloria.cost import cycle_cost, flen
from cepopt.gloria.exhaustive import exhaustive_graph
from cepopt.gloria.nodes import kleene_options
from cepopt.gloria.problem import build
from cepopt.registry import MethodLimitError
from tests.gloria.test_properties import kleene_exits, workloads


def _reference(problem, pool, blocks):
    """§6: every internal edge (Ei, Ej) of the cycle: unshared f(Ei) f(Ej) per query (times its share);
    shared with X: f(Ei) len(X, Ei) g(Ej), except (V2) edges into X: f(Ei) f(X) |Q_K| (times the
    block's share)."""
    f = problem.freq
    shared = blocks[0].snapshot if len(blocks) == 1 and blocks[0].snapshot is not None else None
    cost = 0
    for t, _t2 in pool.internal:
        ei, ej = t
        if shared is None:
            cost += f[ei] * f[ej] * sum(problem.share(pool.index, t, (q,), pool.queries) for q in pool.queries)
        elif problem.kleene_cycle_cost == "V2" and ej == shared:
            share = problem.share(pool.index, t, blocks[0].queries, pool.queries)
            cost += f[ei] * f[shared] * len(pool.queries) * share
        else:
            share = problem.share(pool.index, t, blocks[0].queries, pool.queries)
            cost += f[ei] * flen(problem, shared, ei) * problem.g(ej) * share
    return cost


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits), st.sampled_from(["edge", "once"]))
def test_cycle_cost_is_the_per_edge_formula(case, accounting):
    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle, fork_accounting=accounting)
    try:  # every option of every pool, when the space is small enough; else the published candidates
        options = exhaustive_graph(problem, max_options=60, max_plans=1e9).options
    except MethodLimitError:
        options = [kleene_options(pool) if pool.kind == "kleene" else [] for pool in problem.pools]
    for pool in problem.pools:
        if pool.kind == "kleene":
            for blocks in options[pool.index]:
                value, expected = cycle_cost(problem, pool, blocks), _reference(problem, pool, blocks)
                assert value == expected and type(value) is type(expected), (pool.label, blocks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits), st.sampled_from(["edge", "once"]))
def test_unary_costs_price_each_option(case, accounting):
    """cost.unary_costs (a pool no query ends in priced once for all its options) against start, cycle
    and end costs taken option by option."""
    from cepopt.gloria.cost import end_cost, start_cost, unary_costs

    inst, cost_model, cycle = case
    problem = build(inst, cost_model=cost_model, kleene_cycle_cost=cycle, fork_accounting=accounting)
    try:
        options = exhaustive_graph(problem, max_options=60, max_plans=1e9).options
    except MethodLimitError:
        return
    for pool in problem.pools:
        opts = options[pool.index]
        start = start_cost(problem, pool)
        expected = [(start + cycle_cost(problem, pool, o) if pool.kind == "kleene" else start,
                     end_cost(problem, pool, o)) for o in opts]
        assert unary_costs(problem, pool, opts) == expected
