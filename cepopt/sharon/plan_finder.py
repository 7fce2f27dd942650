"""The sharing plan finder (§6, Alg. 3-4): level-wise (Apriori-like) enumeration of valid plans.

Level s holds the valid plans of size s, each a tuple of vertices sorted by the total order; the list
is sorted lexicographically. Alg. 3 joins two plans of level s that agree on their first s-1 vertices
and whose last vertices are not adjacent (Lemma 6); every valid plan of size s+1 is generated exactly
once (Lemma 7; the report's duplicate s = 1 case is dropped, spec B3). Alg. 4 keeps the best plan seen
and returns it together with F (the conflict-free vertices of the reduction).

The search is exponential (Eq. 13). ``time_limit`` and ``max_level`` (plans per level) bound it; when
either runs out the finder stops and reports ``complete=False`` with the best plan found so far (the
caller then falls back to GWMIN, spec §5.4).
"""

from __future__ import annotations

from collections.abc import Iterable

from cepopt.clock import now
from cepopt.sharon.graph import SharonGraph

__all__ = ["next_level", "find_plan"]


def next_level(graph: SharonGraph, parents: list[tuple[int, ...]], scores: list[float],
               deadline: float | None = None, max_level: int | None = None
               ) -> tuple[list[tuple[int, ...]], list[float]] | None:
    """Alg. 3: children of a sorted level (plans share a prefix iff they are consecutive).

    Returns None when the deadline passes or the level grows beyond ``max_level``."""
    children: list[tuple[int, ...]] = []
    child_scores: list[float] = []
    n = len(parents)
    i = 0
    while i < n:
        # the block of plans with the same (s-1)-prefix
        j = i + 1
        prefix = parents[i][:-1]
        while j < n and parents[j][:-1] == prefix:
            j += 1
        for a in range(i, j):
            pa = parents[a]
            last = pa[-1]
            adj = graph.adj[last]
            for b in range(a + 1, j):
                other = parents[b][-1]
                if other not in adj:
                    children.append(pa + (other,))
                    child_scores.append(scores[a] + graph.vertices[other].weight)
            # checked per parent (one block may be the whole level: level 1 is a single block)
            if (deadline is not None and now() > deadline) or (
                    max_level is not None and len(children) > max_level):
                return None
        i = j
    return children, child_scores


def find_plan(graph: SharonGraph, indices: Iterable[int], *, time_limit: float | None = None,
              max_level: int | None = 2_000_000) -> tuple[list[int], dict]:
    """Alg. 4 on the subgraph ``indices``: the best valid plan (without F) and search statistics."""
    deadline = None if time_limit is None else now() + time_limit
    order = sorted(indices, key=lambda i: graph.vertices[i].key)
    level = [(v,) for v in order]
    scores = [graph.vertices[v].weight for v in order]
    best: tuple[int, ...] = ()
    best_score = 0
    stats = {"levels": [], "plans": 0, "complete": True}
    while level:
        stats["levels"].append(len(level))
        stats["plans"] += len(level)
        for plan, s in zip(level, scores, strict=True):
            if s > best_score:
                best, best_score = plan, s
        nxt = next_level(graph, level, scores, deadline, max_level)
        if nxt is None:
            stats["complete"] = False
            over = time_limit is not None and now() > deadline
            stats["stopped"] = "time limit" if over else f"a level exceeds max_level={max_level} plans"
            break
        level, scores = nxt
    return list(best), stats
