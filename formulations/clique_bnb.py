"""LP branch-and-bound for a maximum-weight independent set stated by clique rows (ours; exact).

The problem: maximise sum w_v x_v over 0-1 x with sum_{v in C} x_v <= 1 for every given clique C
(two vertices conflict when some clique holds both). Best-first branch-and-bound: each node fixes
some vertices, its bound is the LP relaxation of what is left (HiGHS through SciPy, over the free
vertices and the rows that still hold two of them), and it branches on the fractional vertex with
the largest w x (1 - x): one child takes it (and drops every vertex that shares a clique with it),
the other drops it. A node is pruned when its bound cannot beat the incumbent: by 1 when every
weight is an integer (sums below 2^52; less a relative 1e-6 for the LP's own error), else by a
relative 1e-9, so with fractional weights the proof is as precise as HiGHS's LP tolerances (about
1e-7 relative), like a MILP solver's. Every node's LP solution is rounded greedily into an
independent set to raise the incumbent. The tree is closed when no node is left: the incumbent is
then optimal and the bound equals it.

Why (measured on Sharon's original graph, stress preset, 500 queries): the LP over maximal-style
cliques is 1-7 % above the optimum and a few hub vertices (patterns shared by 200 queries) carry
most of that gap. Once they are fixed, the children's LPs drop below the incumbent: seed 0 closes
after 15 LPs (CP-SAT's own tree needs 10-20 thousand branches and 2 s to prove the same optimum),
the other seeds after 1-3. The node budget keeps it a cheap first step: an unclosed tree hands its
incumbent to the exact solver.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cepopt.clock import now

__all__ = ["TreeResult", "clique_branch_and_bound"]

#: an LP value this close to 0 or 1 counts as integral
INTEGRAL = 1e-6


@dataclass(frozen=True)
class TreeResult:
    """``x`` the best 0-1 vector found (its weight ``objective``), ``bound`` a proven upper bound,
    ``closed`` whether the tree was fully explored (then ``x`` is optimal and bound == objective),
    ``nodes`` the LPs solved, ``root_bound`` the root LP's value."""

    x: list[int]
    objective: float
    bound: float
    closed: bool
    nodes: int
    root_bound: float
    float_exact: bool = True

    @property
    def proven(self) -> bool:
        """A closed tree proves the optimum unless the caller said its floats cannot decide for the
        weights (exact integers beyond 2^52); fractional weights are proven to the LP's tolerances, as
        by a MILP solver."""
        return self.closed and self.float_exact


class _Packing:
    """The clique rows as sparse matrices, with each vertex's rows and conflict neighbours."""

    def __init__(self, weights: Sequence[float], cliques: Sequence[Sequence[int]]):
        import scipy.sparse as sp
        from scipy.optimize import linprog  # imported here: its first import (0.35 s) is not the root LP's time

        self.linprog = linprog
        self.w = np.asarray(weights, dtype=float)
        n = len(self.w)
        cliques = [c for c in cliques if len(c) > 1]
        rows = np.repeat(np.arange(len(cliques)), [len(c) for c in cliques])
        cols = np.fromiter((i for c in cliques for i in c), dtype=np.int64, count=len(rows))
        self.A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(cliques), n))
        by_vertex = self.A.tocsc()
        self.rows_of = [by_vertex.indices[by_vertex.indptr[v]:by_vertex.indptr[v + 1]] for v in range(n)]
        # integer weights whose sums floats hold exactly: a node that cannot gain 1 is pruned
        self.integral = bool(np.all(np.mod(self.w, 1) == 0)) and float(np.abs(self.w).sum()) < 2.0 ** 52

    def neighbours(self, v: int) -> np.ndarray:
        rows = self.rows_of[v]
        if not len(rows):
            return np.empty(0, dtype=np.int64)
        sub = self.A[rows]
        return np.setdiff1d(sub.indices, [v])

    def lp(self, fixed: np.ndarray, deadline: float | None = None) -> tuple[float, np.ndarray] | None:
        """Bound and LP solution (over all vertices) of the node where ``fixed`` is -1 (free), 0 or 1;
        None when the LP fails or reaches ``deadline``."""
        free = np.flatnonzero(fixed < 0)
        x = (fixed == 1).astype(float)
        base = float(self.w @ x)
        if not len(free):
            return base, x
        sub = self.A[:, free]
        live = np.flatnonzero(np.diff(sub.indptr) > 1)  # rows holding two free vertices
        if not len(live):
            gain = np.clip(self.w[free], 0, None)
            x[free] = (gain > 0).astype(float)
            return base + float(gain.sum()), x
        sub = sub[live]
        options = {} if deadline is None else {"time_limit": max(deadline - now(), 0.01)}
        res = self.linprog(-self.w[free], A_ub=sub, b_ub=np.ones(sub.shape[0]), bounds=(0, 1),
                           method="highs", options=options)
        if res.status != 0:
            return None
        x[free] = res.x
        return base - float(res.fun), x

    def round(self, x: np.ndarray) -> np.ndarray:
        """A maximal independent set: the vertices at 1, then by LP value and weight, greedily."""
        order = np.lexsort((-self.w, -np.round(x, 6)))
        used = np.zeros(self.A.shape[0], dtype=bool)
        out = np.zeros(len(self.w), dtype=np.int8)
        for v in order:
            if self.w[v] <= 0 and x[v] < 1 - INTEGRAL:
                continue
            rows = self.rows_of[v]
            if not used[rows].any():
                used[rows] = True
                out[v] = 1
        return out


def clique_branch_and_bound(weights: Sequence[float], cliques: Sequence[Sequence[int]], *,
                            incumbent: Sequence[int] | None = None, node_limit: int = 64,
                            deadline: float | None = None, threads: int = 2,
                            root_multiple: float | None = None, float_exact: bool = True) -> TreeResult | None:
    """Run the tree (module docstring) for at most ``node_limit`` LPs, until ``deadline`` (a
    ``now()`` value), and, with ``root_multiple``, for at most that multiple of the
    root LP's time. ``incumbent``: a feasible 0-1 vector to start from.
    ``threads`` > 1 solves a node's two children at once (HiGHS releases the GIL: 1.8x on 2 cores).
    Returns None when the root LP fails or runs out of time (the caller then solves without the
    tree); a failed child LP ends the tree there, unclosed. ``float_exact=False`` says the weights are
    exact integers beyond what floats resolve: a closed tree is then no proof (:attr:`TreeResult.proven`)
    and the bound is widened by the LPs' relative error."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        return _search(weights, cliques, incumbent, node_limit, deadline, root_multiple, pool, float_exact)


def _search(weights, cliques, incumbent, node_limit, deadline, root_multiple, pool, float_exact
            ) -> TreeResult | None:
    pk = _Packing(weights, cliques)
    n = len(pk.w)
    best_x = np.zeros(n, dtype=np.int8) if incumbent is None else np.asarray(incumbent, dtype=np.int8)
    best = float(pk.w @ best_x)

    def beats(bound: float) -> bool:
        # integer weights: a bound below best + 1 holds no better plan; 1e-6 relative covers the LP's
        # own error (HiGHS's tolerances), so an LP value of best + 1 is never taken for less
        slack = 1e-6 * max(1.0, abs(best))
        margin = 1 - slack if pk.integral and slack < 0.5 else 1e-9 * max(1.0, abs(best))
        return bound > best + margin

    def offer(x: np.ndarray) -> None:
        nonlocal best, best_x
        cand = pk.round(x)
        value = float(pk.w @ cand)
        if value > best:
            best, best_x = value, cand

    started = now()
    root = pk.lp(np.full(n, -1, dtype=np.int8), deadline)
    if root is None:
        return None
    if root_multiple is not None:
        own = started + root_multiple * (now() - started)
        deadline = own if deadline is None else min(deadline, own)
    nodes = 1
    heap: list = []
    count = 0

    def push(fixed: np.ndarray, solved: tuple[float, np.ndarray]) -> None:
        nonlocal count
        bound, x = solved
        offer(x)
        if beats(bound):
            count += 1
            heapq.heappush(heap, (-bound, count, fixed, x))

    push(np.full(n, -1, dtype=np.int8), root)
    while heap:
        bound, _, fixed, x = heapq.heappop(heap)
        if not beats(-bound):
            continue
        frac = np.flatnonzero((x > INTEGRAL) & (x < 1 - INTEGRAL))
        if not len(frac):  # integral LP solution: offer() has taken it (its rounding is itself)
            continue
        if nodes >= node_limit or (deadline is not None and now() > deadline):
            heapq.heappush(heap, (bound, 0, fixed, x))
            break
        v = frac[np.argmax(pk.w[frac] * x[frac] * (1 - x[frac]))]
        take = fixed.copy()
        take[v] = 1
        take[pk.neighbours(v)] = 0
        drop = fixed.copy()
        drop[v] = 0
        children = list(zip((take, drop), pool.map(pk.lp, (take, drop), (deadline, deadline)), strict=True))
        nodes += 2
        if any(solved is None for _, solved in children):  # failed or out of time: the parent stays open
            heapq.heappush(heap, (bound, 0, fixed, x))
            break
        for child, solved in children:
            push(child, solved)
    open_bound = max((-b for b, *_ in heap if beats(-b)), default=best)
    closed = open_bound <= best
    bound = max(best, open_bound)
    if not float_exact:  # the LPs' own error, relative to these huge sums
        bound += 1e-6 * abs(bound)
    return TreeResult([int(v) for v in best_x], best, bound, closed, nodes, root[0], float_exact)
