"""Neighbourhood-dominance reduction for MWIS (ours, not in the paper; exact).

If u and v are adjacent, N[v] ⊆ N[u] (closed neighbourhoods) and weight(v) >= weight(u), some optimal
independent set avoids u: swap u for v. In a Sharon graph this removes, e.g., a candidate whose
pattern contains a no-less-beneficial sub-pattern shared by the same queries. Vertices are removed one
at a time, each only on account of a vertex still present, so every removed vertex keeps a surviving
dominator (domination is transitive) and the MWIS weight is unchanged.

The test costs sum over edges of a degree; on dense (expanded) graphs beyond ``budget`` it is skipped.
"""

from __future__ import annotations

from cepopt.sharon.graph import SharonGraph

__all__ = ["undominated"]


def undominated(graph: SharonGraph, budget: int = 20_000_000) -> list[int]:
    """Vertices kept by the dominance reduction (all of them when the graph is too dense to test)."""
    from cepopt.errors import MethodLimitError

    n = len(graph)
    try:
        adj = graph.adj
    except MethodLimitError:
        return list(range(n))
    if sum(len(a) ** 2 for a in adj) > budget:
        return list(range(n))
    w = [v.weight for v in graph.vertices]
    removed: set[int] = set()
    for u in range(n):
        closed = adj[u] | {u}
        for v in adj[u]:
            if v not in removed and w[v] >= w[u] and adj[v] <= closed:
                removed.add(u)
                break
    return [i for i in range(n) if i not in removed]
