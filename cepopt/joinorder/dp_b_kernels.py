"""The numba kernels of :mod:`cepopt.joinorder.dp_fast` (DP-B with pruning, the split enumeration of the
subset-flow model): a module of their own, imported when first needed (it loads numba), and at module
level so that numba caches them on disk (kernels defined inside a function that call each other are not
cacheable: every new process compiled them again, about 5 s, which a short time limit did not cover)."""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["enumerate_splits", "layer"]


@numba.njit(cache=True, inline="always")
def _better(best, S, A, cur, arg):
    a = best[A]
    b = best[S ^ A]
    hi = a if a > b else b
    if hi < cur:
        lo = b if a > b else a
        val = hi if lo == -np.inf else hi + math.log1p(math.exp(lo - hi))
        if val < cur:
            return val, A
    return cur, arg


@numba.njit(parallel=True, cache=True, fastmath=False)
def layer(masks, V, best, split, outside, ub, full, alive, width):
    inf = np.inf
    pruned = 0
    for k in numba.prange(len(masks)):
        S = masks[k]
        if S != full and (V[S] > ub or np.logaddexp(V[S], outside[S]) > ub):
            best[S] = inf
            pruned += 1
            continue
        low = S & -S
        rest = S ^ low
        cur = inf
        arg = 0
        if len(alive) < width:  # few survivors below: try them instead of every submask
            for j in range(len(alive)):
                X = alive[j]
                if X & S == X:
                    cur, arg = _better(best, S, X, cur, arg)
            for i in range(64):  # a single event against the rest
                bit = np.int64(1) << i
                if bit > S:
                    break
                if S & bit:
                    cur, arg = _better(best, S, bit, cur, arg)
        else:
            sub = rest
            while True:
                A = low | sub
                if A != S:
                    cur, arg = _better(best, S, A, cur, arg)
                if sub == 0:
                    break
                sub = (sub - 1) & rest
        if cur == inf:
            best[S] = inf
            pruned += 1
            continue
        value = np.logaddexp(V[S], cur)
        if S != full and np.logaddexp(value, outside[S]) > ub:
            best[S] = inf
            pruned += 1
            continue
        best[S] = value
        split[S] = arg
    return pruned


@numba.njit(cache=True)
def enumerate_splits(keep, n, count_only, S_out, A_out):
    k = 0
    full = (1 << n) - 1
    for S in range(1 << n):
        if (S != full and not keep[S]) or S & (S - 1) == 0:
            continue
        low = S & -S
        rest = S ^ low
        sub = rest
        while True:
            A = low | sub
            B = S ^ A
            if A != S and (keep[A] or A & (A - 1) == 0) and (keep[B] or B & (B - 1) == 0):
                if not count_only:
                    S_out[k] = S
                    A_out[k] = A
                k += 1
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return k
