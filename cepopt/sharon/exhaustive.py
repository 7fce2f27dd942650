"""Exact baselines: the exhaustive optimizer EO (§8.3) and a brute-force MWIS for tests.

* :func:`exhaustive` scores EVERY subset of the vertices (valid or not, as EO does: 2^|V| plans,
  Eq. 13) with NumPy bit-mask doubling, and keeps the best valid one. Floating-point sums decide only
  where they are exact; subsets whose float score comes within the rounding's reach of the best are
  re-scored in exact arithmetic (the weights' own numbers), so huge integer weights are compared exactly.
  Refuses graphs larger than ``max_vertices`` (MethodLimitError).
* :func:`bruteforce` enumerates the independent sets (include / exclude each vertex, an explicit stack:
  no recursion limit), in exact arithmetic; simple enough to trust as the oracle of the property tests.
  It stops after ``max_sets`` sets or at ``deadline`` and says so (:class:`Enumeration`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cepopt.clock import now
from cepopt.errors import MethodLimitError
from cepopt.sharon.graph import SharonGraph

__all__ = ["MAX_EXHAUSTIVE_VERTICES", "Enumeration", "bruteforce", "enumerate_sets", "exhaustive"]

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
    weights = [graph.vertices[v].weight for v in idx]
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
        score = np.concatenate([score, score + float(weights[k])])
        valid = np.concatenate([valid, hi_valid])
    scores = np.where(valid, score, -np.inf)
    top = float(scores.max())
    # each float sum is within n rounding errors of its exact value (plus each weight's own rounding)
    reach = 2 * (n + 1) * math.ulp(max(abs(top), sum(abs(float(w)) for w in weights), 1.0))
    near = np.flatnonzero(scores >= top - reach)
    exact = [(sum(weights[k] for k in range(n) if int(m) >> k & 1), -int(m)) for m in masks[near]]
    best_mask = -max(exact)[1]
    return [idx[k] for k in range(n) if best_mask >> k & 1]


@dataclass
class Enumeration:
    """What :func:`enumerate_sets` found: the best set, its exact weight, the sets visited, whether the
    enumeration covered every independent set (``complete``) and why it stopped otherwise."""

    chosen: list[int]
    weight: object
    visited: int
    complete: bool
    stopped: str = ""


def enumerate_sets(graph: SharonGraph, indices: list[int] | None = None, *, max_sets: int | None = 2_000_000,
                   deadline: float | None = None) -> Enumeration:
    """Every independent set of ``indices`` (include / exclude each vertex in order), exact weights."""
    idx = sorted(range(len(graph)) if indices is None else indices)
    w = [graph.vertices[i].weight for i in idx]
    pos = {v: k for k, v in enumerate(idx)}
    later_nb = [frozenset(pos[u] for u in graph.adj[v] if u in pos) for v in idx]
    n = len(idx)
    best_w, best = 0, ()
    visited = 0
    # stack of (next vertex, banned, chosen, total); exclude is explored before include, as the recursion did
    stack = [(0, frozenset(), (), 0)]
    while stack:
        k, banned, chosen, total = stack.pop()
        visited += 1
        if max_sets is not None and visited > max_sets:
            return Enumeration([idx[j] for j in best], best_w, visited - 1, False,
                               f"more than {max_sets} independent sets")
        if deadline is not None and visited % 4096 == 0 and now() > deadline:
            return Enumeration([idx[j] for j in best], best_w, visited, False, "time limit")
        if k == n:
            if total > best_w:
                best_w, best = total, chosen
            continue
        if k not in banned:
            stack.append((k + 1, banned | later_nb[k], (*chosen, k), total + w[k]))
        stack.append((k + 1, banned, chosen, total))
    return Enumeration([idx[j] for j in best], best_w, visited, True)


def bruteforce(graph: SharonGraph, indices: list[int] | None = None, max_sets: int = 2_000_000) -> list[int]:
    """Maximum-weight independent set by enumerating every independent set (MethodLimitError beyond
    ``max_sets``)."""
    found = enumerate_sets(graph, indices, max_sets=max_sets)
    if not found.complete:
        raise MethodLimitError(f"brute force visited more than {max_sets} independent sets")
    return found.chosen
