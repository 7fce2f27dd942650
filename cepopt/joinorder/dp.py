"""DP-LD and DP-B: exact dynamic programming over subsets (Kolchinsky & Schuster §7.1, after
Selinger [45]; spec §4.5, §4.6, §4.10).

Both rest on the closed form of §4.1/§4.2: the cost of a prefix (order) or of a node (tree) depends
only on its *set* of events, PM(S). Subsets are bitmasks; ``best`` and ``PM`` are NumPy arrays of 2^n
log-values, filled layer by layer (by popcount) with whole-layer vector operations.

- DP-LD: ``best[S] = PM(S) + min_{x∈S} (best[S∖{x}] + [x = last] α R_out(S))`` with
  ``R_out(S) = W Σ_{i∉S} r_i`` (latency, §4.10); x is the last element of the prefix S. O(n 2^n).
  With ``tree_ld`` it minimises Cost_tree of the left-deep tree instead (leaves counted once).
- DP-B: ``best[S] = PM(S) + min over unordered splits S = S1 ⊎ S2 (S1 ∋ min S) of best[S1] + best[S2]
  + α·(PM(S2) if last ∈ S1 else PM(S1) if last ∈ S2)``. O(3^n).

Ties go to the smallest last element (DP-LD) or the first split enumerated (DP-B). Sums are
``logaddexp`` (monotone), so the log-space DP is exact.

>>> from cepopt.joinorder.problem import from_arrays
>>> p = from_arrays(1, [10, 20, 5], [[1, .1, 1], [.1, 1, .5], [1, .5, 1]])
>>> order, value = dp_ld(p.single); order, round(float(np.exp(value)), 9)
([0, 1, 2], 80.0)
>>> tree, value = dp_b(p.single); tree, round(float(np.exp(value)), 9)
(((0, 1), 2), 105.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cepopt.clock import TimeLimitReached, check, now
from cepopt.joinorder.cost import all_node_logs, leaf_log
from cepopt.joinorder.problem import Conjunct

__all__ = ["DpTimeout", "dp_b", "dp_ld", "popcount_layers"]

_TIE = 1e-12
_CHUNK = 1 << 17  # candidate splits per vector operation in DP-B (cache-sized)
_LD_CHUNK = 1 << 15  # masks per vector operation in DP-LD (cache-sized)


class DpTimeout(TimeLimitReached):
    """The DP ran past its deadline."""

    def __init__(self, message: str = "time limit reached in the DP"):
        super().__init__(message)


def popcount_layers(n: int, deadline: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(masks sorted by popcount then value, start offset of each popcount 0..n+1); past ``deadline``
    :class:`~cepopt.clock.TimeLimitReached`."""
    pc = np.zeros(1 << n, dtype=np.uint8)
    for h in range(n):
        check(deadline, "ordering the subsets")
        pc[1 << h:2 << h] = pc[:1 << h] + 1
    masks = np.argsort(pc, kind="stable")
    starts = np.zeros(n + 2, dtype=np.int64)
    starts[1:] = np.cumsum(np.bincount(pc, minlength=n + 1))
    return masks, starts


def _log_sums(values: np.ndarray) -> np.ndarray:
    """ln Σ_{i∈S} exp(values[i]) for every mask S (-inf for the empty set)."""
    n = len(values)
    out = np.full(1 << n, -np.inf)
    for h in range(n):
        out[1 << h:2 << h] = np.logaddexp(out[:1 << h], values[h])
    return out


def _check(deadline: float | None) -> None:
    if deadline is not None and now() > deadline:
        raise DpTimeout


def _leaf_logs(conj: Conjunct) -> np.ndarray:
    return np.array([leaf_log(conj, i) for i in range(conj.n)])


def dp_ld(conj: Conjunct, *, tree_ld: bool = False, deadline: float | None = None) -> tuple[list[int], float]:
    """The optimal order and its log cost (ln(Cost_ord + α lat), or the left-deep tree cost)."""
    n = conj.n
    full = (1 << n) - 1
    V = all_node_logs(conj, tree=tree_ld)
    if conj.next_match and conj.paper_literal and not tree_ld:
        V = V + math.log(conj.window)  # Σ W m[k], as printed in §6.2 [R-NEXT]
    best = np.full(1 << n, np.inf)
    singles = 1 << np.arange(n)
    leaves = _leaf_logs(conj)
    if tree_ld:
        m = leaves.max()
        best[singles] = m + math.log(np.exp(leaves - m).sum())
    else:
        best[singles] = V[singles]
    lat = conj.has_latency
    if lat:
        t, la = conj.last, math.log(conj.alpha)
        if tree_ld:
            NV = V.copy()
            NV[singles] = leaves
        else:
            LR = _log_sums(conj.lc)
            # ``last`` first: every other event comes after it.
            best[1 << t] = np.logaddexp(best[1 << t], la + LR[full ^ (1 << t)])
    masks, starts = popcount_layers(n)

    def extra(S: np.ndarray, x: int, c: np.ndarray) -> np.ndarray:
        if not lat:
            return c
        if not tree_ld:
            return np.logaddexp(c, la + LR[full ^ S]) if x == t else c
        if x == t:
            return np.logaddexp(c, la + NV[S ^ (1 << x)])
        has_t = ((S >> t) & 1).astype(bool)
        return np.where(has_t, np.logaddexp(c, la + leaves[x]), c)

    for k in range(2, n + 1):
        _check(deadline)
        S = masks[starts[k]:starts[k + 1]]
        cur = np.full(len(S), np.inf)
        if lat:
            for x in range(n):
                # best of a mask without bit x is S | bit: a larger layer, still +inf.
                np.minimum(cur, extra(S, x, best[S ^ (1 << x)]), out=cur)
        else:
            for lo in range(0, len(S), _LD_CHUNK):  # cache-sized pieces
                s = S[lo:lo + _LD_CHUNK]
                c = cur[lo:lo + _LD_CHUNK]
                rest = s.copy()
                for _ in range(k):  # peel the k set bits, lowest first
                    low = rest & -rest
                    np.minimum(c, best[s ^ low], out=c)
                    rest ^= low
        best[S] = np.logaddexp(V[S], cur)
    # Reconstruct from the top, the smallest last element on ties.
    order: list[int] = []
    S = full
    while S & (S - 1):
        arr = np.array([S])
        cands = []
        for x in range(n):
            if S >> x & 1:
                cands.append((float(extra(arr, x, best[arr ^ (1 << x)])[0]), x))
        low = min(c for c, _ in cands)
        x = next(x for c, x in cands if c <= low + _TIE * max(1.0, abs(low)))
        order.insert(0, x)
        S ^= 1 << x
    order.insert(0, S.bit_length() - 1)
    return order, float(best[full])


def dp_b(conj: Conjunct, *, deadline: float | None = None) -> tuple[Any, float]:
    """The optimal bushy tree (nested index pairs, the child holding the smaller index first) and its
    log cost ln(Cost_tree + α Cost_tree^lat)."""
    n = conj.n
    full = (1 << n) - 1
    V = all_node_logs(conj, tree=True)
    leaves = _leaf_logs(conj)
    singles = 1 << np.arange(n)
    best = np.full(1 << n, np.inf)
    best[singles] = leaves
    split = np.zeros(1 << n, dtype=np.int64)
    lat = conj.has_latency
    if lat:
        t, la = conj.last, math.log(conj.alpha)
        NV = V.copy()
        NV[singles] = leaves
    masks, starts = popcount_layers(n)
    shifts = np.arange(n, dtype=np.int64)
    for k in range(2, n + 1):
        layer = masks[starts[k]:starts[k + 1]].astype(np.int64)
        width = 1 << (k - 1)
        rows = max(1, _CHUNK // width)
        for lo in range(0, len(layer), rows):
            _check(deadline)
            S = layer[lo:lo + rows]
            pos = np.nonzero((S[:, None] >> shifts) & 1)[1].reshape(len(S), k)
            pw = np.left_shift(np.int64(1), pos.astype(np.int64))
            # Every left part: the smallest event plus any subset of the others, built by doubling.
            subs = np.empty((len(S), width), dtype=np.int64)
            subs[:, 0] = pw[:, 0]
            for c in range(1, k):
                half = 1 << (c - 1)
                np.add(subs[:, :half], pw[:, c:c + 1], out=subs[:, half:2 * half])
            left = subs[:, :-1]  # the last column is all of S: the right side would be empty
            right = S[:, None] - left
            r = np.arange(len(S))
            a, b = best[left], best[right]
            if lat:
                tl = ((left >> t) & 1).astype(bool)
                tr = ((right >> t) & 1).astype(bool)
                side = np.where(tl, NV[right], np.where(tr, NV[left], -np.inf))
                cost = np.logaddexp(np.logaddexp(a, b), la + side)
                j = np.argmin(cost, axis=1)
                low = cost[r, j]
            else:
                # ln(e^a + e^b) per split, minimised per row in linear scale relative to the row's
                # smallest max(a, b): the winner's value is in [1, 2], losers may overflow to inf.
                ref = np.maximum(a, b).min(axis=1, keepdims=True)
                with np.errstate(over="ignore"):
                    val = np.exp(a - ref)
                    val += np.exp(b - ref)
                j = np.argmin(val, axis=1)
                low = ref[:, 0] + np.log(val[r, j])
            best[S] = np.logaddexp(V[S], low)
            split[S] = left[r, j]

    def tree(mask: int) -> Any:
        if mask & (mask - 1) == 0:
            return mask.bit_length() - 1
        lm = int(split[mask])
        return (tree(lm), tree(mask ^ lm))

    return tree(full), float(best[full])
