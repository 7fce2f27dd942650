"""GWMIN, the greedy weighted minimum-degree MWIS heuristic (App. B, Alg. 8; Sakai et al. 2003).

Repeatedly pick the vertex with the largest weight(v) / (degree(v) + 1) in the remaining graph (ties:
first vertex in graph order, spec B9), add it to the independent set and delete it with its
neighbours. Guarantee (Eq. 10): Weight(IS) >= sum_v weight(v) / (degree(v) + 1). A vertex's ratio only
grows as its neighbours disappear, so a lazy max-heap finds the next pick in O(log |V|) amortised.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from fractions import Fraction

from cepopt.clock import passed
from cepopt.sharon.graph import SharonGraph

__all__ = ["gwmin", "guaranteed_weight"]


def _ratio(w, d: int):
    # exact for integer / Fraction weights (ties like 20/5 vs 8/2 are real ties), float otherwise
    return Fraction(w) / (d + 1) if isinstance(w, int | Fraction) else w / (d + 1)


def _float_ratio(w, d: int) -> float:
    return w / (d + 1)


def _ratio_of(graph: SharonGraph):
    """Float division when it orders integer ratios exactly: two distinct ratios a/b, c/d (b, d <= n)
    differ by >= 1/(b d), more than two ulps of either when max|w| * n^2 < 2^51, and equal ratios
    round to the same float (IEEE division is correctly rounded). Fractions are 10x slower."""
    weights = [v.weight for v in graph.vertices]
    n = len(weights) + 1
    if all(type(w) is int for w in weights) and max(map(abs, weights), default=0) * n * n < 2**51:
        return _float_ratio
    return _ratio


def guaranteed_weight(graph: SharonGraph, indices: Iterable[int] | None = None):
    """Eq. 10 on the subgraph induced by ``indices``: sum of weight / (degree + 1)."""
    alive = set(range(len(graph)) if indices is None else indices)
    return sum((_ratio(graph.vertices[i].weight, len(graph.adj[i] & alive)) for i in alive), 0)


def gwmin(graph: SharonGraph, indices: Iterable[int] | None = None, deadline: float | None = None) -> list[int]:
    """Alg. 8 on the subgraph induced by ``indices``; returns the chosen vertices in pick order. Past
    ``deadline`` (a :func:`cepopt.clock.now` value) it stops and returns the vertices picked so far (an
    independent set all the same)."""
    alive = set(range(len(graph)) if indices is None else indices)
    ratio = _ratio_of(graph)
    degree = {i: len(graph.adj[i] & alive) for i in alive}
    heap = [(-ratio(graph.vertices[i].weight, degree[i]), i) for i in alive]
    heapq.heapify(heap)
    chosen: list[int] = []
    while heap:
        neg, i = heapq.heappop(heap)
        if i not in alive or -neg != ratio(graph.vertices[i].weight, degree[i]):
            continue  # stale entry
        chosen.append(i)
        if len(chosen) % 64 == 0 and passed(deadline):
            break
        removed = {i} | (graph.adj[i] & alive)
        alive -= removed
        touched = set()
        for j in removed:
            for k in graph.adj[j]:
                if k in alive:
                    degree[k] -= 1
                    touched.add(k)
        for k in touched:
            heapq.heappush(heap, (-ratio(graph.vertices[k].weight, degree[k]), k))
    return chosen
