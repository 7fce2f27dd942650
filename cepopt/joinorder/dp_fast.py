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
  skipped without the exp/log of ``⊕``. When fewer subsets survive below S than S has submasks, the
  survivors (and the single events) are tried instead of every submask: a pruned part never wins.
* Subsets of one layer (one size) are independent: spread over the cores (``prange``).

Ties go to the first split enumerated (submasks in decreasing order), as in :func:`dp_b`; values agree
with it to floating-point rounding. Throughput cost only (no latency, no next-match): the callers fall
back on :func:`dp_b` otherwise.
"""

from __future__ import annotations

import time

import numpy as np

from cepopt.clock import check, now
from cepopt.errors import MethodLimitError
from cepopt.joinorder.cost import all_node_logs, leaf_log
from cepopt.joinorder.dp import DpTimeout, popcount_layers
from cepopt.joinorder.problem import Conjunct

__all__ = ["dp_b_pruned", "warm_kernels"]

def _kernel():
    from cepopt.joinorder.dp_b_kernels import layer

    return layer


def warm_kernels() -> float:
    """Load (or compile) :func:`dp_b_pruned`'s kernel on a 3-event instance, before a caller's deadline
    starts; the seconds it took."""
    from cepopt.joinorder.problem import from_arrays

    start = time.perf_counter()
    dp_b_pruned(from_arrays(1, [1.0, 2.0, 3.0], [[1, .5, 1], [.5, 1, .5], [1, .5, 1]]).single, [((0, 1), 2)])
    return time.perf_counter() - start


def _outside(conj: Conjunct, V: np.ndarray, deadline: float | None = None) -> np.ndarray:
    r"""A lower bound, for every S, on the *variable* cost (internal nodes but the root) that a tree holding
    S as a node pays outside S's subtree (ln): the root's two children C ⊎ (all \ C): either S is one of
    them (then the other, PM(all \ S) when it is not a leaf, is paid too) or S lies strictly inside C
    (then PM(C) and PM(all \ C) are). For S = all: -inf. Variable parts only: the root and the leaves,
    paid by every tree, can dwarf them (dense: PM(all) / PM(child) ~ W r), and a total in floating point
    would lose the very difference the bound is about. Past ``deadline``: TimeLimitReached."""
    n = conj.n
    full = (1 << n) - 1
    sizes = np.zeros(1 << n, dtype=np.uint8)
    for h in range(n):
        check(deadline, "bounding the subsets")
        sizes[1 << h:2 << h] = sizes[:1 << h] + 1
    node = np.where(sizes >= 2, V, -np.inf)  # PM of a node, -inf for a leaf (paid as a leaf already)
    del sizes
    # full ^ S == full - S: the complement's entry is the reversed array's
    pair = np.logaddexp(V, node[::-1])  # a root child C: PM(C) + PM(all \ C)
    pair[full] = pair[0] = np.inf
    # superset minimum (C ⊇ S) of ``pair`` by bit, on views (no index arrays: n = 24 stays in memory)
    for h in range(n):
        check(deadline, "bounding the subsets")
        view = pair.reshape(-1, 2, 1 << h)
        np.minimum(view[:, 0, :], view[:, 1, :], out=view[:, 0, :])
    strict = np.full(1 << n, np.inf)  # strict supersets: C = S | bit (bit ∉ S), then its supersets
    for h in range(n):
        check(deadline, "bounding the subsets")
        sv, pv = strict.reshape(-1, 2, 1 << h), pair.reshape(-1, 2, 1 << h)
        np.minimum(sv[:, 0, :], pv[:, 1, :], out=sv[:, 0, :])
    del pair
    out = np.minimum(node[::-1], strict)  # S a root child (its sibling) or inside one
    out[full] = -np.inf
    return out


def dp_b_pruned(conj: Conjunct, ub_trees: list, *, deadline: float | None = None,
                margin: float = 1e-9, chunk_splits: int = 1 << 26) -> tuple[object, float, dict]:
    """(optimal tree, its log cost, stats). ``ub_trees``: known trees (index pairs); the best of them
    gives the upper bound (widened by ``margin`` relative, for rounding). ``chunk_splits``: about how many
    splits the kernel enumerates between two looks at the deadline."""
    if conj.has_latency or conj.next_match:
        raise ValueError("dp_b_pruned: throughput cost only")
    n = conj.n
    if n == 1:
        return 0, leaf_log(conj, 0), {}
    full = (1 << n) - 1
    V = all_node_logs(conj, tree=True, deadline=deadline)
    leaves = np.array([leaf_log(conj, i) for i in range(n)])
    ub = min((_var_log(V, t, full) for t in ub_trees), default=np.inf)
    ub_margin = ub + margin * max(1.0, abs(ub))
    best = np.full(1 << n, np.inf)  # ln of the internal nodes' cost of the best subtree (leaves apart)
    best[1 << np.arange(n)] = -np.inf
    split = np.zeros(1 << n, dtype=np.int64)
    outside = _outside(conj, V, deadline)
    masks, starts = popcount_layers(n, deadline)
    masks = masks.astype(np.int64)
    kernel = _kernel()
    pruned = 0
    alive = np.zeros(0, dtype=np.int64)  # surviving subsets of two or more events, smaller layers
    for k in range(2, n + 1):
        layer = masks[starts[k]:starts[k + 1]]
        # a layer's subsets depend on smaller layers only: in chunks of about chunk_splits splits, with
        # the deadline checked between them (one middle layer at n = 24 is over a minute of work)
        step = max(1, chunk_splits >> (k - 1))
        for lo in range(0, len(layer), step):
            if deadline is not None and now() > deadline:
                raise DpTimeout
            pruned += kernel(layer[lo:lo + step], V, best, split, outside, ub_margin, full, alive, 1 << (k - 1))
        alive = np.concatenate([alive, layer[np.isfinite(best[layer])]])
    # the start tree's whole log cost (internal nodes, root and leaves), comparable with the objective
    start_log = float(np.logaddexp(np.logaddexp(ub, V[full]), np.logaddexp.reduce(leaves)))
    stats = {"upper_bound_log": start_log, "subsets": (1 << n) - n - 1, "subsets_pruned": int(pruned)}
    if best[full] == np.inf:  # pragma: no cover - the upper-bound tree itself survives
        raise AssertionError("dp_b_pruned: every tree pruned; the upper bound is below the optimum")
    value = float(np.logaddexp(best[full], np.logaddexp.reduce(leaves)))

    def tree(mask: int):
        if mask & (mask - 1) == 0:
            return mask.bit_length() - 1
        lm = int(split[mask])
        if not lm & mask & -mask:  # the child holding the smaller index first, as dp_b
            lm ^= mask
        return (tree(lm), tree(mask ^ lm))

    return tree(full), value, stats


def _var_log(V: np.ndarray, tree, full: int) -> float:
    """ln Σ PM over the tree's internal nodes but the root (its variable cost)."""
    terms: list[float] = []

    def walk(node) -> int:
        if isinstance(node, int):
            return 1 << node
        mask = walk(node[0]) | walk(node[1])
        if mask != full:
            terms.append(V[mask])
        return mask

    walk(tree)
    return float(np.logaddexp.reduce(terms)) if terms else -np.inf


def _splits_kernel():
    from cepopt.joinorder.dp_b_kernels import enumerate_splits

    return enumerate_splits


def splits_of(keep: np.ndarray, n: int, max_splits: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every split S = A ⊎ B (A ∋ min S, B non-empty) of the root or a kept subset S into parts that are
    kept or single events: (S, A) arrays. More than ``max_splits`` of them is a MethodLimitError (counted
    before anything is allocated)."""
    kernel = _splits_kernel()
    empty = np.zeros(0, dtype=np.int64)
    count = kernel(keep, n, True, empty, empty)
    if max_splits is not None and count > max_splits:
        raise MethodLimitError(f"milp-tree: {count:,} splits survive the upper-bound cut (at most "
                               f"{max_splits:,} fit the flow model in memory); use dp-b")
    S = np.zeros(count, dtype=np.int64)
    A = np.zeros(count, dtype=np.int64)
    kernel(keep, n, False, S, A)
    return S, A


def candidate_nodes(conj: Conjunct, ub_trees: list, margin: float = 1e-9, deadline: float | None = None
                    ) -> np.ndarray:
    """The subsets that may be a non-root node of an optimal tree (a bool per subset; single events and
    the root False): those whose own PM plus the outside bound (:func:`_outside`) stays within the best
    known tree's variable cost."""
    n = conj.n
    full = (1 << n) - 1
    V = all_node_logs(conj, tree=True, deadline=deadline)
    ub = min(_var_log(V, t, full) for t in ub_trees)
    ub += margin * max(1.0, abs(ub))
    keep = np.logaddexp(V, _outside(conj, V, deadline)) <= ub
    keep[0] = keep[full] = False
    keep[1 << np.arange(n)] = False
    return keep
