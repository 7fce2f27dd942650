"""The exhaustive plan space and brute-force search (paper Eq. 1, Def. 2.7; specs/gloria.md §7.2).

:func:`exhaustive_graph`: every set partition of each SEQ pool's queries (Bell number B_m of them,
Eq. 1), every block of at least two queries labelled with every admissible snapshot type (the
transition's source or an upstream type common to the block's queries), unshared singletons; Kleene
super-pools keep their |types|+1 options. Pairs of adjacent options are allowed when derivable
(cost.py). Small workloads only: :class:`~cepopt.errors.MethodLimitError` beyond ``max_options``,
:class:`~cepopt.gloria.graph.BuildTimeout` past ``deadline``.

:func:`brute_force`: depth-first search over one node per pool in topological order, with the
trivial lower bound (cost so far + the cheapest unary weight of every later pool; edge weights are
non-negative). It is the reference the CP-SAT and MILP models are tested against.
"""

from __future__ import annotations

import itertools
import math

from cepopt.clock import now
from cepopt.errors import MethodLimitError
from cepopt.gloria.cost import Option, option_problem
from cepopt.gloria.graph import CandidateGraph, check_deadline, complete_edges
from cepopt.gloria.nodes import kleene_options
from cepopt.gloria.plan import Block, sort_blocks
from cepopt.gloria.problem import GloriaProblem, Pool

__all__ = ["brute_force", "exhaustive_graph", "set_partitions"]

INF = float("inf")


def set_partitions(items: list[str]):
    """Every set partition of ``items`` (as lists of blocks)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
        yield [[first]] + part


def _bell(n: int) -> int:
    row = [1]
    for _ in range(n):
        nxt = [row[-1]]
        for x in row:
            nxt.append(nxt[-1] + x)
        row = nxt
    return row[0]


def seq_space(problem: GloriaProblem, pool: Pool, max_options: int, deadline: float | None = None) -> list[Option]:
    queries = sorted(pool.queries)
    if _bell(len(queries)) > max_options:
        raise MethodLimitError(f"pool {pool.label}: {len(queries)} queries give B_{len(queries)} = "
                               f"{_bell(len(queries))} partitions (max_options={max_options})")
    out: list[Option] = []
    for partition in set_partitions(queries):
        check_deadline(deadline)
        labels = []
        for block in partition:
            if len(block) == 1:
                labels.append([Block((block[0],))])
            else:
                labels.append([Block(tuple(block), x)
                               for x in problem.admissible_snapshots(pool, frozenset(block))])
        for combo in itertools.product(*labels):
            option = sort_blocks(combo)
            if option_problem(problem, pool, option) is None:
                out.append(option)
            if len(out) > max_options:
                raise MethodLimitError(f"pool {pool.label}: more than {max_options} options")
    return out


def check_plan_space(options: list[list], max_plans: float) -> None:
    """MethodLimitError when one node per pool gives more than ``max_plans`` plans."""
    space = math.prod(max(len(o), 1) for o in options)
    if space > max_plans:
        raise MethodLimitError(f"{space:.3g} candidate plans exceed max_plans={max_plans:.3g}")


def exhaustive_graph(problem: GloriaProblem, *, max_options: int = 2000, deadline: float | None = None,
                     max_plans: float | None = None) -> CandidateGraph:
    """The exhaustive candidate graph; ``max_plans`` is checked before the edges (the costly part) are
    built."""
    options = [kleene_options(p) if p.kind == "kleene" else seq_space(problem, p, max_options, deadline)
               for p in problem.pools]
    if max_plans is not None:
        check_plan_space(options, max_plans)
    graph = CandidateGraph(problem, "exhaustive", options)
    complete_edges(graph, deadline)
    graph.stats = {"nodes": graph.num_nodes, "edges": graph.num_edges}
    return graph


def brute_force(graph: CandidateGraph, *, max_plans: float = 5e6,
                time_limit: float | None = None) -> tuple[list[int] | None, float, bool]:
    """(best choice, its weight, proven) over the graph's candidates by branch and bound."""
    problem = graph.problem
    if problem.order is None:
        raise MethodLimitError("the pool graph has a directed cycle")
    check_plan_space(graph.options, max_plans)
    order = problem.order
    pos = {p: k for k, p in enumerate(order)}
    unary = [[graph.inner[p][j] + graph.end[p][j] for j in range(len(graph.options[p]))]
             for p in range(len(problem.pools))]
    rest = [0.0] * (len(order) + 1)
    for k in range(len(order) - 1, -1, -1):
        rest[k] = rest[k + 1] + (min(unary[order[k]]) if unary[order[k]] else INF)
    preds = {b: [a for a in problem.preds.get(b, []) if pos[a] < pos[b]] for b in order}
    choice = [-1] * len(problem.pools)
    best: list = [None, INF]
    deadline = None if time_limit is None else now() + time_limit
    timed_out = [False]

    def dfs(k: int, cost: float) -> None:
        if cost + rest[k] >= best[1]:
            return
        if k == len(order):
            best[0], best[1] = list(choice), cost
            return
        if deadline is not None and now() > deadline:
            timed_out[0] = True
            return
        b = order[k]
        for j in sorted(range(len(graph.options[b])), key=lambda j: unary[b][j]):
            add = unary[b][j]
            ok = True
            for a in preds[b]:
                w = graph.allowed[(a, b)].get((choice[a], j))
                if w is None:
                    ok = False
                    break
                add += w
            if ok:
                choice[b] = j
                dfs(k + 1, cost + add)
        choice[b] = -1

    dfs(0, 0.0)
    return best[0], best[1], not timed_out[0]
