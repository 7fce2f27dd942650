"""DP-B compiled (numba) with exact branch-and-bound pruning (issue 22 part 3).

Same recursion as :func:`cepopt.joinorder.dp.dp_b` (spec §4.6): ``best[S] = PM(S) ⊕ min over splits
S = A ⊎ B (A ∋ min S) of best[A] ⊕ best[B]`` in log space (``⊕`` = logaddexp), leaves at their leaf
cost. Three exact cuts:

* **Upper bound.** ``ub`` is the log cost of a known tree (ZStream over GREEDY's and the declared leaf
  orders). Any tree holding S as a node costs at least ``best[S] ⊕ PM(all) ⊕ leaves outside S`` (every
  node costs > 0; the root and the leaves are in every tree), so a subset whose bound passes ``ub`` is
  never a node of an optimal tree: it is dropped (``best = inf``) before or after its splits are
  enumerated. Nodes of an optimal tree have bounds <= optimum <= ub, so their values are exact.
* **Dominated splits.** ``max(best[A], best[B]) >= current minimum`` cannot win (``a ⊕ b > max(a, b)``):
  skipped without the exp/log of ``⊕``.
* Subsets of one layer (one size) are independent: spread over the cores (``prange``).

Ties go to the first split enumerated (submasks in decreasing order), as in :func:`dp_b`; values agree
with it to floating-point rounding. Throughput cost only (no latency, no next-match): the callers fall
back on :func:`dp_b` otherwise.
"""

from __future__ import annotations

import math
import time

import numpy as np

from cepopt.joinorder.cost import all_node_logs, leaf_log, log_cost_tree
from cepopt.joinorder.dp import DpTimeout, popcount_layers
from cepopt.joinorder.problem import Conjunct

__all__ = ["dp_b_pruned"]

_KERNEL = None


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        import numba

        @numba.njit(parallel=True, cache=True, fastmath=False)
        def layer(masks, V, best, split, outside, ub):
            inf = np.inf
            pruned = 0
            for k in numba.prange(len(masks)):
                S = masks[k]
                if V[S] > ub or np.logaddexp(V[S], outside[S]) > ub:
                    best[S] = inf
                    pruned += 1
                    continue
                low = S & -S
                rest = S ^ low
                cur = inf
                arg = 0
                sub = rest
                while True:
                    A = low | sub
                    if A != S:
                        a = best[A]
                        b = best[S ^ A]
                        hi = a if a > b else b
                        if hi < cur:
                            lo = b if a > b else a
                            val = hi + math.log1p(math.exp(lo - hi))
                            if val < cur:
                                cur = val
                                arg = A
                    if sub == 0:
                        break
                    sub = (sub - 1) & rest
                if cur == inf:
                    best[S] = inf
                    pruned += 1
                    continue
                value = np.logaddexp(V[S], cur)
                if np.logaddexp(value, outside[S]) > ub:
                    best[S] = inf
                    pruned += 1
                    continue
                best[S] = value
                split[S] = arg
            return pruned

        _KERNEL = layer
    return _KERNEL


def _outside(conj: Conjunct, V: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    r"""A lower bound, for every S, on what a tree holding S as a node pays besides S's subtree (ln):
    the root PM(all), the leaves outside S and the root's two children C ⊎ (all \ C): either S is one of
    them (then the other, PM(all \ S) when it is not a leaf, is paid too) or S lies strictly inside C
    (then PM(C) and PM(all \ C) are). For S = all: -inf."""
    n = conj.n
    full = (1 << n) - 1
    sizes = np.zeros(1 << n, dtype=np.uint8)
    inside_leaf = np.full(1 << n, -np.inf)  # ln Σ_{i ∈ S} leaf_i
    for h in range(n):
        sizes[1 << h:2 << h] = sizes[:1 << h] + 1
        inside_leaf[1 << h:2 << h] = np.logaddexp(inside_leaf[:1 << h], leaves[h])
    node = np.where(sizes >= 2, V, -np.inf)  # PM of a node, -inf for a leaf (paid as a leaf already)
    del sizes
    # full ^ S == full - S: the complement's entry is the reversed array's
    pair = np.logaddexp(V, node[::-1])  # a root child C: PM(C) + PM(all \ C)
    pair[full] = pair[0] = np.inf
    # superset minimum (C ⊇ S) of ``pair`` by bit, on views (no index arrays: n = 24 stays in memory)
    for h in range(n):
        view = pair.reshape(-1, 2, 1 << h)
        np.minimum(view[:, 0, :], view[:, 1, :], out=view[:, 0, :])
    strict = np.full(1 << n, np.inf)  # strict supersets: C = S | bit (bit ∉ S), then its supersets
    for h in range(n):
        sv, pv = strict.reshape(-1, 2, 1 << h), pair.reshape(-1, 2, 1 << h)
        np.minimum(sv[:, 0, :], pv[:, 1, :], out=sv[:, 0, :])
    del pair
    child = np.minimum(node[::-1], strict)  # S a root child (its sibling) or inside one
    del strict, node
    out = np.logaddexp(np.logaddexp(inside_leaf[::-1], V[full]), child)
    out[full] = -np.inf
    return out


def dp_b_pruned(conj: Conjunct, ub_trees: list, *, deadline: float | None = None,
                margin: float = 1e-9) -> tuple[object, float, dict]:
    """(optimal tree, its log cost, stats). ``ub_trees``: known trees (index pairs); the best of them
    gives the upper bound (widened by ``margin`` relative, for rounding)."""
    if conj.has_latency or conj.next_match:
        raise ValueError("dp_b_pruned: throughput cost only")
    n = conj.n
    full = (1 << n) - 1
    V = all_node_logs(conj, tree=True)
    leaves = np.array([leaf_log(conj, i) for i in range(n)])
    ub_values = [log_cost_tree(conj, t) for t in ub_trees]
    ub = min(ub_values) if ub_values else np.inf
    ub_margin = ub + margin * max(1.0, abs(ub))
    best = np.full(1 << n, np.inf)
    best[1 << np.arange(n)] = leaves
    split = np.zeros(1 << n, dtype=np.int64)
    outside = _outside(conj, V, leaves)
    masks, starts = popcount_layers(n)
    masks = masks.astype(np.int64)
    kernel = _kernel()
    pruned = 0
    for k in range(2, n + 1):
        if deadline is not None and time.perf_counter() > deadline:
            raise DpTimeout
        pruned += kernel(masks[starts[k]:starts[k + 1]], V, best, split, outside, ub_margin)
    stats = {"upper_bound_log": float(ub), "subsets": (1 << n) - n - 1, "subsets_pruned": int(pruned)}
    if not np.isfinite(best[full]):  # pragma: no cover - the upper-bound tree itself survives
        raise AssertionError("dp_b_pruned: every tree pruned; the upper bound is below the optimum")

    def tree(mask: int):
        if mask & (mask - 1) == 0:
            return mask.bit_length() - 1
        lm = int(split[mask])
        return (tree(lm), tree(mask ^ lm))

    return tree(full), float(best[full]), stats
