"""Node generation and GLORIA graph construction (paper §5.1, §6; specs/gloria.md §4.1 and §5).

Pools are built in topological order of the pool graph; each pool is generated from the surviving
nodes of its predecessor pools and pruned (pruning.py) before its successors are generated, so pruned
nodes never spawn successors.

SEQ pool ``(Ej, Eh)`` (spec "GENERATE_POOL"): for each designated predecessor pool and each of its
nodes ``n_k``, the blocks of ``n_k`` restricted to the queries that come from that pool give per-block
choices -- a shared block of >= 2 queries: REUSE (P1) or a local snapshot of Ej (P2; in ``gloria`` mode
only when f(Ej) < f(X)); a shared block cut to one query by a fork: unshared (A8); the unshared
queries: KEEP, or MERGE_NS into ``(..)^Ej`` when there are at least two. Every combination is a *part*;
queries starting at Ej give a part (unshared, or merged when >= 2). Every combination of one part per
source is a node, plus the merge-all node ``(Q)^Ej`` (P3). Lemma 5.2: no node splits or shuffles a
Q-set. Edges are all derivable pairs from surviving predecessor nodes (cost.py), weighted per §3.2.

Kleene super-pool: the candidates are "all unshared" and ``(Q_K)^X`` for every type X of the cycle
(Lemmas 6.1, 6.4); its d_s is ``P'.w + P.w`` (Eq. 24).

Modes: ``noprune`` (no frequency test, no node pruning: the paper's NoPrune and Fig. 7a), ``gloria``
(frequency test of P2 and the paper's node pruning), ``safe`` (no frequency test, the safe node pruning
of spec §4.2).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Final

from cepopt.errors import MethodLimitError
from cepopt.gloria.block import Block
from cepopt.gloria.canonical import distinct_blocks, restrict_blocks, sort_blocks
from cepopt.gloria.cost import Option, block_index, restriction, unary_costs
from cepopt.gloria.graph import CandidateGraph, EdgeTable, edge_table
from cepopt.gloria.problem import Cost, GloriaProblem, Pool
from cepopt.gloria.pruning import distances, prune_nodes

__all__ = ["MODES", "generate", "kleene_options", "seq_nodes"]

MODES = ("noprune", "gloria", "safe")
INF: Final = float("inf")  # Final: compiled code reads it as a constant


def kleene_options(pool: Pool) -> list[Option]:
    """Candidates of a Kleene super-pool: all unshared, then (Q_K)^X per cycle type X (sorted)."""
    options: list[Option] = [_singles(pool.queries)]
    if len(pool.queries) >= 2 and pool.types:
        types = sorted(pool.types)
        merged = Block(pool.queries, types[0])
        options += [(merged.resnapshot(x),) for x in types]
    return options


#: the unshared block of each query name, made once (blocks are immutable). A dictionary rather than
#: ``functools.lru_cache``: compiled code reads it natively. Emptied when it reaches _SINGLES_MAX.
_SINGLES: dict[str, Block] = {}
_SINGLES_MAX: Final = 65536


def _single(q: str) -> Block:
    block = _SINGLES.get(q)
    if block is None:
        if len(_SINGLES) >= _SINGLES_MAX:
            _SINGLES.clear()
        block = _SINGLES[q] = Block((q,))
    return block


def _singles(queries: Iterable[str]) -> tuple[Block, ...]:
    return tuple([_single(q) for q in sorted(queries)])


def seq_nodes(problem: GloriaProblem, pool: Pool, options: list[list[Option]], mode: str,
              max_nodes: int, indexes: list[list[dict[str, int]]] | None = None) -> list[Option]:
    """The §4.1 candidate nodes of a SEQ pool from the surviving nodes of its predecessor pools
    (``indexes``: :func:`~cepopt.gloria.cost.block_index` of every predecessor node, if known).

    A predecessor node's parts depend only on its blocks that hold a query coming from it; nodes with
    the same such blocks give the same parts, so each distinct restriction is expanded once."""
    if len(pool.queries) == 1:  # every source gives the query unshared: the one node
        return [_singles(pool.queries)]
    ej = pool.source
    f = problem.freq
    parts_per_source: list[list[Option]] = []
    covered: set[str] = set(pool.start_queries)
    sizes = len(covered)  # the sources' query counts, summed
    for a in problem.primary_preds(pool.index):
        prim = problem.primary_queries(a, pool.index)
        covered |= prim
        sizes += len(prim)
        parts: set[Option] = set()
        seen: set[tuple[Block, ...]] = set()  # the block of each primary query (in one fixed order)
        in_order = list(prim)
        for k, nk in enumerate(options[a]):
            key = restriction(nk, block_index(nk) if indexes is None else indexes[a][k], in_order)
            if key in seen:
                continue
            seen.add(key)
            choices: list[list[tuple[Block, ...]]] = []
            # its distinct blocks holding a primary query (in any order: every part is sorted below)
            shared, unshared = restrict_blocks(distinct_blocks(key), prim)
            for block in shared:  # REUSE (P1), or a local snapshot of Ej (P2)
                x = block[1]
                assert x is not None  # restrict_blocks: the shared blocks
                choice: list[tuple[Block, ...]] = [(block,)]
                if x != ej and (mode != "gloria" or f[ej] < f[x]):
                    choice.append((block.resnapshot(ej),))
                choices.append(choice)
            if unshared:
                choice = [_singles(unshared)]
                if len(unshared) >= 2:
                    choice.append((Block(tuple(unshared), ej),))
                choices.append(choice)
            for combo in itertools.product(*choices):
                parts.add(sort_blocks([block for part in combo for block in part]))
        parts_per_source.append(sorted(parts))  # canonical order (Block: tuple order)
    if pool.start_queries:
        start = [_singles(pool.start_queries)]
        if len(pool.start_queries) >= 2:
            start.append((Block(tuple(pool.start_queries), ej),))
        parts_per_source.append(start)
    if covered != set(pool.queries):  # pragma: no cover - a bug in the pool structure
        raise AssertionError(f"{pool.label}: queries {sorted(set(pool.queries) - covered)} have no source")
    count = math.prod(len(p) for p in parts_per_source)
    if count > max_nodes:
        raise MethodLimitError(f"pool {pool.label} would have {count} candidate nodes (max_nodes={max_nodes})")
    merge_all = (Block(tuple(pool.queries), ej),)
    if len(parts_per_source) == 1:  # its parts are sorted already
        nodes = list(parts_per_source[0])
    else:
        nodes = [sort_blocks([block for part in c for block in part]) for c in itertools.product(*parts_per_source)]
    if sizes != len(covered):  # a query with two sources (no template we know): combinations may repeat
        nodes = list(dict.fromkeys(nodes))
    # Otherwise every source's parts partition its own queries, so distinct combinations give distinct
    # nodes; only the merge-all node can be one of them (one source with one merged part).
    if merge_all not in nodes:
        nodes.append(merge_all)
    return nodes


def generate(problem: GloriaProblem, mode: str = "gloria", *, max_nodes: int = 20000,
             deadline: float | None = None) -> CandidateGraph:
    """Build the (pruned) GLORIA graph in ``mode``: candidates, edges, d_s and arg-min edges
    (:class:`~cepopt.gloria.graph.BuildTimeout` past ``deadline``)."""
    if mode not in MODES:
        raise ValueError(f"unknown generation mode {mode!r}")
    if problem.order is None:
        raise MethodLimitError("the pool graph has a directed cycle (a query order that contradicts "
                               "another query's); GLORIA's pool-by-pool generation needs a DAG")
    n = len(problem.pools)
    options: list[list[Option]] = [[] for _ in range(n)]
    inner: list[list[Cost]] = [[] for _ in range(n)]
    end: list[list[Cost]] = [[] for _ in range(n)]
    d_s: list[list[Cost]] = [[] for _ in range(n)]
    d_full: list[list[Cost]] = [[] for _ in range(n)]
    best_in: list[list[dict[int, int]]] = [[] for _ in range(n)]
    #: each kept option's query -> block position, computed once for every edge that leaves the pool
    indexes: list[list[dict[str, int]]] = [[] for _ in range(n)]
    allowed: dict[tuple[int, int], EdgeTable] = {}
    generated = pruned = 0
    trace: list[tuple[int, Option, Cost, bool]] = []
    for b in problem.order:
        pool = problem.pools[b]
        if pool.kind == "kleene":
            cand = kleene_options(pool)
        else:
            cand = seq_nodes(problem, pool, options, mode, max_nodes, indexes)
        generated += len(cand)
        units = unary_costs(problem, pool, cand)
        # each candidate's query -> block position: for the edges into the pool and, if kept, out of it
        cand_index = [block_index(o) for o in cand] if len(cand) > 1 or b in problem.succs else None
        tables = {a: edge_table(problem, a, b, options[a], cand, deadline, indexes[a], cand_index)
                  for a in problem.preds.get(b, [])}
        inner_b = [u[0] for u in units]
        dist, best = distances({a: d_s[a] for a in tables}, tables, inner_b)
        if len(cand) == 1 or mode == "noprune":  # a single node has nothing to be pruned by
            alive = [d < INF for d in dist]
        elif mode == "gloria":
            alive = prune_nodes(problem, pool, cand, dist, "paper")
        else:
            # d_s with the end edges of every ancestor included (what the safe rule compares)
            full, _ = distances({a: d_full[a] for a in tables}, tables, [u[0] + u[1] for u in units])
            d_full[b] = full
            alive = prune_nodes(problem, pool, cand, [f - u[1] for f, u in zip(full, units, strict=True)],
                                "safe", tables, inner_b)
        trace.extend(zip(itertools.repeat(b), cand, dist, alive))
        if all(alive):  # the usual case: keep every list and table as it is
            options[b], d_s[b], best_in[b], inner[b] = cand, dist, best, inner_b
            end[b] = [u[1] for u in units]
            allowed.update(((a, b), table) for a, table in tables.items())
        else:
            keep = [j for j in range(len(cand)) if alive[j]]
            pruned += len(cand) - len(keep)
            index = {j: k for k, j in enumerate(keep)}
            options[b] = [cand[j] for j in keep]
            inner[b] = [units[j][0] for j in keep]
            end[b] = [units[j][1] for j in keep]
            d_s[b] = [dist[j] for j in keep]
            if d_full[b]:
                d_full[b] = [d_full[b][j] for j in keep]
            best_in[b] = [best[j] for j in keep]
            for a, table in tables.items():
                allowed[(a, b)] = table.keep_columns(index)
        if mode == "safe" and not d_full[b]:  # a single node: its full distance for its successors
            d_full[b], _ = distances({a: d_full[a] for a in tables}, tables,
                                     [inner[b][k] + end[b][k] for k in range(len(options[b]))])
        if b in problem.succs:  # only edges leaving the pool and its successors' parts read them
            assert cand_index is not None  # computed for every pool with successors
            indexes[b] = cand_index if len(options[b]) == len(cand) else [cand_index[j] for j in keep]
    graph = CandidateGraph(problem, mode, options, inner, end, allowed, d_s, best_in)
    graph.trace = trace
    graph.stats = {"nodes_generated": generated, "nodes_pruned": pruned, "nodes": graph.num_nodes,
                   "edges": graph.num_edges}
    return graph
