"""Exact baselines: the exhaustive optimizer EO (§8.3) and a brute-force MWIS for tests.

* :func:`exhaustive` scores EVERY subset of the vertices (valid or not, as EO does: 2^|V| plans,
  Eq. 13) with NumPy bit-mask doubling, and keeps the best valid one. Refuses graphs larger than
  ``max_vertices`` (MethodLimitError).
* :func:`bruteforce` enumerates the independent sets recursively (include / exclude each vertex);
  simple enough to trust as the oracle of the property tests. Refuses beyond ``max_sets`` sets.
"""

from __future__ import annotations

import numpy as np

from cepopt.errors import MethodLimitError
from cepopt.sharon.graph import SharonGraph

__all__ = ["exhaustive", "bruteforce", "MAX_EXHAUSTIVE_VERTICES"]

MAX_EXHAUSTIVE_VERTICES = 22


def exhaustive(graph: SharonGraph, indices: list[int] | None = None,
               max_vertices: int = MAX_EXHAUSTIVE_VERTICES) -> list[int]:
    """The best valid subset of ``indices`` (all vertices by default), by scoring all subsets."""
    idx = list(range(len(graph))) if indices is None else list(indices)
    n = len(idx)
    if n > max_vertices:
        raise MethodLimitError(f"exhaustive search over 2^{n} plans: more than 2^{max_vertices} "
                               f"(graph has {n} vertices, cap {max_vertices})")
    pos = {v: k for k, v in enumerate(idx)}
    masks = np.zeros(1, dtype=np.int64)
    score = np.zeros(1, dtype=np.float64)
    valid = np.ones(1, dtype=bool)
    for k, v in enumerate(idx):
        nb = 0
        for u in graph.adj[v]:
            if u in pos and pos[u] < k:
                nb |= 1 << pos[u]
        hi_valid = valid & ((masks & nb) == 0)
        masks = np.concatenate([masks, masks | (1 << k)])
        score = np.concatenate([score, score + float(graph.vertices[v].weight)])
        valid = np.concatenate([valid, hi_valid])
    best_mask = int(masks[np.argmax(np.where(valid, score, -np.inf))])
    return [idx[k] for k in range(n) if best_mask >> k & 1]


def bruteforce(graph: SharonGraph, indices: list[int] | None = None, max_sets: int = 2_000_000) -> list[int]:
    """Maximum-weight independent set by enumerating every independent set."""
    idx = sorted(range(len(graph)) if indices is None else indices)
    w = [graph.vertices[i].weight for i in idx]
    pos = {v: k for k, v in enumerate(idx)}
    later_nb = [{pos[u] for u in graph.adj[v] if u in pos} for v in idx]
    best: list = [0, []]
    counter = [0]

    def walk(k: int, banned: frozenset, chosen: list[int], total) -> None:
        counter[0] += 1
        if counter[0] > max_sets:
            raise MethodLimitError(f"brute force visited more than {max_sets} independent sets")
        if k == len(idx):
            if total > best[0]:
                best[0], best[1] = total, list(chosen)
            return
        walk(k + 1, banned, chosen, total)
        if k not in banned:
            chosen.append(k)
            walk(k + 1, banned | later_nb[k], chosen, total + w[k])
            chosen.pop()

    walk(0, frozenset(), [], 0)
    return [idx[k] for k in best[1]]
