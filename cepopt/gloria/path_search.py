"""GLORIA path search (paper §5.3, Algorithms 1-3; specs/gloria.md §4.3).

On the pruned graph every node carries ``d_s`` (Eq. 22) and, per predecessor pool, its arg-min edge
(edge pruning). The published search value is Eq. 22 summed at the end nodes:
``sum over pools with end edges of min_n (n.d_s + end(n))`` (Case 1 / EDGEPRUNE at the end node).

Decoding a plan:

* **forest-shaped pool graph** (pools adjacent when they share an edge): Alg. 1 with Case 3's reverse
  pruning is min-sum dynamic programming there; we run it as an exact two-pass tree DP (root each tree,
  pass messages from the leaves, backtrack), the implementation spec §4.3 recommends;
* **otherwise** (forks that re-join, E6/E7): Alg. 1 as published: follow the arg-min edges back from
  every end pool (GETPATHS). Branches may pick different nodes of one pool; the first pick wins and
  later pools whose picked node is then not derivable are repaired in topological order (cheapest
  derivable candidate, else the REUSE/KEEP node built from the chosen predecessors). The stats say
  whether the result was consistent; the search value may then differ from the plan's true cost.

The search is exact only on forest-shaped pool graphs (stats ``pool_graph_is_forest``).
"""

from __future__ import annotations

from typing import Final

import networkx as nx

from cepopt.gloria.block import Block
from cepopt.gloria.canonical import restrict_blocks, sort_blocks
from cepopt.gloria.cost import Option, edge_cost, edge_derivable, unary_cost
from cepopt.gloria.graph import CandidateGraph, pool_graph_is_forest
from cepopt.gloria.problem import Cost

__all__ = ["search", "search_value", "tree_dp"]

INF: Final = float("inf")  # Final: compiled code reads it as a constant


def _distances(graph: CandidateGraph) -> list[list[Cost]]:
    if graph.d_s is None:
        raise ValueError("the path search needs a generated graph (its d_s)")
    return graph.d_s


def search_value(graph: CandidateGraph) -> Cost:
    """Eq. 22 summed at the end nodes (what the published search minimises, stats ``eq22_end_sum``). Not
    a plan's cost: each end pool's distance ``d_s`` holds the whole path from the source, so pools that
    several end pools share are counted once per end pool (a taxi SEQ workload: 30,909,874,072 against
    the plan's 2,027,996,450); the plan's cost is the method's objective."""
    d_s = _distances(graph)
    total: Cost = 0.0
    for pool in graph.problem.pools:
        if pool.ends:
            p = pool.index
            total += min(d_s[p][j] + graph.end[p][j] for j in range(len(graph.options[p])))
    return total


def _message(graph: CandidateGraph, p: int, c: int, belief_c: list[Cost]) -> tuple[list[Cost], list[int]]:
    """Min-sum message from child pool c to its parent p: per node of p, the cheapest belief of c plus
    the pair's weight, and the node of c giving it (the first one on a tie; INF and -1 when no node
    of c may be paired with it). Reads only the allowed pairs, by rows (:class:`EdgeTable`)."""
    size = len(graph.options[p])
    if (p, c) in graph.allowed:  # p is the edge's first pool: one row of c's nodes per node of p
        msg: list[Cost] = []
        arg: list[int] = []
        for row in graph.allowed[(p, c)].rows:
            best: Cost = INF
            bj = -1
            for jc, w in row:  # increasing jc: the first minimum stays
                v = belief_c[jc] + w
                if v < best:
                    best, bj = v, jc
            msg.append(best)
            arg.append(bj)
        return msg, arg
    msg = [INF] * size
    arg = [-1] * size
    for jc, row in enumerate(graph.allowed[(c, p)].rows):  # increasing jc: the first minimum stays
        bc = belief_c[jc]
        for ip, w in row:
            v = bc + w
            if v < msg[ip]:
                msg[ip], arg[ip] = v, jc
    return msg, arg


def tree_dp(graph: CandidateGraph) -> list[int]:
    """Exact min-sum over a forest-shaped pool graph: one node index per pool."""
    problem = graph.problem
    n = len(problem.pools)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(graph.allowed)
    phi = [[graph.inner[p][j] + graph.end[p][j] for j in range(len(graph.options[p]))] for p in range(n)]
    choice = [-1] * n
    for comp in nx.connected_components(g):
        root: int = min(comp)
        order: list[int] = list(nx.dfs_preorder_nodes(g, root))
        parent: dict[int, int | None] = {root: None}
        for u in order:
            for v in g.neighbors(u):
                if v not in parent:
                    parent[v] = u
        belief = {u: list(phi[u]) for u in comp}
        argbest: dict[int, list[int]] = {}
        for c in reversed(order):
            p = parent[c]
            if p is None:
                continue
            msg, argbest[c] = _message(graph, p, c, belief[c])
            belief[p] = [x + m for x, m in zip(belief[p], msg, strict=True)]
        choice[root] = min(range(len(belief[root])), key=lambda j: (belief[root][j], j))
        for u in order:
            p = parent[u]
            if p is not None:
                choice[u] = argbest[u][choice[p]]
    return choice


def _reuse_keep(graph: CandidateGraph, b: int, chosen: dict[int, Option]) -> Option:
    """The node of pool b that REUSEs every shared block and KEEPs every unshared query."""
    problem = graph.problem
    pool = problem.pools[b]
    blocks: list[Block] = [Block((q,)) for q in pool.start_queries]
    for a in problem.primary_preds(b):
        shared, unshared = restrict_blocks(chosen[a], problem.primary_queries(a, b))
        blocks += shared + [Block((q,)) for q in unshared]
    return sort_blocks(blocks)


def _getpaths(graph: CandidateGraph) -> tuple[list[int], int]:
    """Arg-min backtracking from every end pool (Alg. 1/3); returns (choice, conflicts)."""
    problem = graph.problem
    n = len(problem.pools)
    choice = [-1] * n
    conflicts = 0
    d_s, best_in = _distances(graph), graph.best_in
    assert best_in is not None  # set with d_s
    ends = [p.index for p in problem.pools if p.ends]
    for e in ends:
        j = min(range(len(graph.options[e])), key=lambda j: (d_s[e][j] + graph.end[e][j], j))
        stack = [(e, j)]
        while stack:
            b, j = stack.pop()
            if choice[b] >= 0:
                conflicts += choice[b] != j
                continue
            choice[b] = j
            stack.extend(best_in[b][j].items())
    for b in range(n):
        if choice[b] < 0:
            choice[b] = min(range(len(graph.options[b])), key=lambda j: (d_s[b][j], j))
    return choice, conflicts


def search(graph: CandidateGraph) -> tuple[list[Option], dict]:
    """Run the path search; returns (one option per pool, stats)."""
    problem = graph.problem
    forest = pool_graph_is_forest(problem)
    value = search_value(graph)
    stats = {"eq22_end_sum": value, "pool_graph_is_forest": forest,
             "exact": "only on forest-shaped pool graphs (specs/gloria.md §4.3)"}
    if forest:
        choice = tree_dp(graph)
        stats.update(consistent=True, conflicts=0, repaired_pools=0)
        return [graph.options[p][j] for p, j in enumerate(choice)], stats
    choice, conflicts = _getpaths(graph)
    chosen: dict[int, Option] = {}
    node: dict[int, int] = {}  # pool -> its chosen node, when that is a node of the graph (not repaired)
    repaired = 0
    for b in problem.order or ():  # a generated graph's problem has an order
        preds = problem.preds.get(b, [])
        current = graph.options[b][choice[b]]
        # between two nodes of the graph, the allowed pairs are the derivable ones
        if all((node[a], choice[b]) in graph.allowed[(a, b)] if a in node
               else edge_derivable(problem, a, b, chosen[a], current) for a in preds):
            chosen[b] = current
            node[b] = choice[b]
            continue
        repaired += 1
        pool = problem.pools[b]
        best: Option | None = None
        best_cost: Cost = INF
        for cand in graph.options[b]:
            if not all(edge_derivable(problem, a, b, chosen[a], cand) for a in preds):
                continue
            inner, end = unary_cost(problem, pool, cand)
            cost = inner + end + sum(edge_cost(problem, a, b, chosen[a], cand) for a in preds)
            if cost < best_cost:
                best, best_cost = cand, cost
        chosen[b] = best if best is not None else _reuse_keep(graph, b, chosen)
    stats.update(consistent=conflicts == 0 and repaired == 0, conflicts=conflicts, repaired_pools=repaired)
    return [chosen[p] for p in range(len(problem.pools))], stats
