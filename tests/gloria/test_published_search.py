"""The fast GLORIA graph build gives the graph and plans its definitions give, on published workloads.

The build shares an edge's rows and a pool's parts among predecessor nodes with the same restriction,
and orders pools / tests forests without networkx (cepopt/gloria/graph.py, nodes.py, problem.py). Each
shortcut is checked against an independent oracle: the per-pair cost functions of cost.py on every node
pair, Eq. 22 recomputed from the edge tables, networkx's lexicographic topological sort and forest test,
and CP-SAT / the full-space optimum for the plans."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.experiments.gloria_optimizers import GLORIA_DATA
from cepopt.gloria.cost import edge_cost, edge_derivable, evaluate
from cepopt.gloria.graph import pool_graph_is_forest
from cepopt.gloria.methods import gloria, noprune
from cepopt.gloria.nodes import generate
from cepopt.gloria.plan import restrict_blocks
from cepopt.gloria.problem import _lexicographic_order

WORKLOADS = ("stock/MixWorkload/workload_12.txt", "bus/MixWorkload/workload_24.txt",
             "taxi/SEQWorkload/workload_20.txt", "stock/KleeneWorkload/kleeneLength/workload_2.txt",
             "bus/KleeneWorkload/KleeneLayers/workload_3.txt", "bus/MixWorkload/kleeneRatio/workload_2.txt")


def _problem(rel: str):
    from cepopt.experiments.gloria_optimizers import _instance
    from cepopt.gloria.problem import build

    if not (GLORIA_DATA / "workloads" / rel).is_file():
        pytest.skip("the published Gloria workloads (../shared/anchors-data/gloria) are absent")
    inst, _ = _instance({"source": "shipped", "instance": rel})
    return build(inst)


@pytest.mark.parametrize("rel", WORKLOADS)
@pytest.mark.parametrize("mode", ["gloria", "safe", "noprune"])
def test_edge_tables_and_distances_match_the_per_pair_definitions(rel, mode):
    problem = _problem(rel)
    graph = generate(problem, mode)
    for (a, b), table in graph.allowed.items():
        expected = {(i, j): edge_cost(problem, a, b, oa, ob)
                    for i, oa in enumerate(graph.options[a]) for j, ob in enumerate(graph.options[b])
                    if edge_derivable(problem, a, b, oa, ob)}
        assert table == expected, (problem.pools[a].label, problem.pools[b].label)
    for b in problem.order:  # Eq. 22 and the arg-min edges, from the tables
        for j in range(len(graph.options[b])):
            d, arg = graph.inner[b][j], {}
            for a in problem.preds.get(b, []):
                cands = [(graph.d_s[a][i] + w, i) for (i, jj), w in graph.allowed[(a, b)].items() if jj == j]
                best = min(cands)
                d += best[0]
                arg[a] = best[1]
            assert graph.d_s[b][j] == d and graph.best_in[b][j] == arg


@pytest.mark.parametrize("rel", WORKLOADS)
def test_a_predecessor_nodes_parts_depend_only_on_its_blocks_holding_the_pools_queries(rel):
    """What node generation relies on when it expands each distinct restriction once."""
    problem = _problem(rel)
    graph = generate(problem, "noprune")
    for pool in problem.pools:
        for a in problem.primary_preds(pool.index):
            prim = problem.primary_queries(a, pool.index)
            for nk in graph.options[a]:
                restricted = tuple(block for block in nk if prim.intersection(block.queries))
                assert restrict_blocks(nk, prim) == restrict_blocks(restricted, prim)


@pytest.mark.parametrize("rel", WORKLOADS)
def test_published_search_plans_are_exact_where_the_search_is(rel):
    """On forest-shaped pool graphs the search is exact over its nodes: GLORIA's and NoPrune's plans cost
    what CP-SAT proves optimal over the same nodes, and NoPrune (a superset of GLORIA's nodes) is no
    worse than GLORIA. Neither is ever below the full-space optimum (Def. 2.7)."""
    from cepopt.experiments.gloria_optimizers import _instance
    from cepopt.registry import solve

    problem = _problem(rel)
    inst, _ = _instance({"source": "shipped", "instance": rel})
    costs = {name: evaluate(problem, method(problem).plan) for name, method in (("gloria", gloria),
                                                                                ("noprune", noprune))}
    if pool_graph_is_forest(problem):
        for name, cost in costs.items():
            over = solve(inst, "cpsat", time_limit=60, params={"candidates": name}, problem=problem)
            assert over.stats["candidate_status"] == "optimal" and over.objective == cost, name
        assert costs["noprune"] <= costs["gloria"]
    if len(inst.workload) <= 24:
        opt = solve(inst, "cpsat", time_limit=60, params={"candidates": "full"}, problem=problem)
        assert opt.status == "optimal" and opt.objective <= min(costs.values())


def _nx_order(n: int, edges: set[tuple[int, int]]):
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    try:
        return list(nx.lexicographical_topological_sort(g))
    except nx.NetworkXUnfeasible:
        return None


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(
    st.just(n), st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] != e[1])))))
def test_pool_order_and_forest_test_agree_with_networkx(case):
    n, edges = case
    succs: dict[int, list[int]] = {}
    for a, b in sorted(edges):
        succs.setdefault(a, []).append(b)
    assert _lexicographic_order(n, succs) == _nx_order(n, edges)

    class Pools:  # the two fields pool_graph_is_forest reads
        pools = range(n)

    Pools.edges = dict.fromkeys(edges)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    assert pool_graph_is_forest(Pools) == nx.is_forest(g)


def test_a_block_unpickled_in_another_process_hashes_like_that_process_s_blocks(tmp_path):
    """Blocks cache their hash; str hashes are salted per process, so unpickling must rehash (Spark ships
    plans to workers)."""
    import pickle
    import subprocess
    import sys

    from cepopt.gloria.plan import Block

    path = tmp_path / "block.pkl"
    path.write_bytes(pickle.dumps({Block(("q2", "q1"), "A"): 1}))
    code = ("import pickle, sys; from cepopt.gloria.plan import Block; "
            f"d = pickle.loads(open({str(path)!r}, 'rb').read()); "
            "sys.exit(0 if d.get(Block(('q1', 'q2'), 'A')) == 1 else 1)")
    for seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", code], env={"PYTHONHASHSEED": seed, "PATH": ""}, check=False)
        assert run.returncode == 0
