"""The Greedy optimizer of the paper's experiments (§8.1; specs/gloria.md §4.1 "Greedy variant").

One node per pool, pools in topological order, no pruning and no search. From the chosen predecessor
nodes a shared block is only REUSEd (a block cut to one query by a fork becomes unshared, A8); the
unshared queries are either all KEPT unshared or MERGED, whichever has the smaller incoming weight
(start edges + edges from the chosen predecessors + end edges). MERGE is the §4.1 merge-all node
``(Q)^Ej`` when no shared block arrives, else MERGE_NS within each predecessor's part (and among the
queries starting at the pool), so Greedy's node is always one NoPrune would generate. A Kleene
super-pool takes the option of smallest incoming weight (entry edges + cycle weight + end edges).

Tie-breaking (unspecified in the paper, spec §10 A10): ``tie="share"`` (default) prefers the merged /
shared option, then the snapshot type of lower frequency, then the alphabetical type; ``tie="nonshare"``
prefers the unshared option. Under the paper's cost model KEEP and MERGE_NS have the same incoming
weight, so the tie rule decides: on Fig. 7, "share" gives the optimum 307 and "nonshare" 588 (E8).
"""

from __future__ import annotations

from cepopt.errors import MethodLimitError
from cepopt.gloria.cost import Option, edge_cost, unary_cost
from cepopt.gloria.nodes import kleene_options
from cepopt.gloria.plan import Block, restrict_blocks, sort_blocks
from cepopt.gloria.problem import GloriaProblem

__all__ = ["greedy"]


def _incoming(problem: GloriaProblem, b: int, option: Option, chosen: dict[int, Option]) -> float:
    pool = problem.pools[b]
    inner, end = unary_cost(problem, pool, option)
    return inner + end + sum(edge_cost(problem, a, b, chosen[a], option) for a in problem.preds.get(b, []))


def greedy(problem: GloriaProblem, tie: str = "share") -> list[Option]:
    """One option per pool chosen greedily (see the module docstring)."""
    if tie not in ("share", "nonshare"):
        raise ValueError("tie must be 'share' or 'nonshare'")
    if problem.order is None:
        raise MethodLimitError("the pool graph has a directed cycle")
    chosen: dict[int, Option] = {}
    f = problem.freq
    for b in problem.order:
        pool = problem.pools[b]
        if pool.kind == "kleene":
            cands = kleene_options(pool)

            def key(o: Option, b=b) -> tuple:
                shared = o[0].snapshot is not None
                pref = (0 if shared else 1) if tie == "share" else (1 if shared else 0)
                x = o[0].snapshot or ""
                return (_incoming(problem, b, o, chosen), pref, f.get(x, 0), x)

            chosen[b] = min(cands, key=key)
            continue
        kept: list[Block] = []
        groups: list[list[str]] = [list(pool.start_queries)]  # unshared queries per source part
        for a in problem.primary_preds(b):
            shared, group = restrict_blocks(chosen[a], problem.primary_queries(a, b))
            kept += shared
            groups.append(group)
        unshared = [q for g in groups for q in g]
        keep = sort_blocks(kept + [Block((q,)) for q in unshared])
        merged: list[Block] = []
        for g in ([unshared] if not kept else groups):  # merge-all, or MERGE_NS per source part
            if len(g) >= 2:
                merged.append(Block(tuple(g), pool.source))
            else:
                merged.extend(Block((q,)) for q in g)
        if len(unshared) < 2 or not any(m.shared for m in merged):
            chosen[b] = keep
            continue
        merge = sort_blocks(kept + merged)
        w_keep, w_merge = _incoming(problem, b, keep, chosen), _incoming(problem, b, merge, chosen)
        if w_merge < w_keep or (w_merge == w_keep and tie == "share"):
            chosen[b] = merge
        else:
            chosen[b] = keep
    return [chosen[p] for p in range(len(problem.pools))]
