"""The numba kernels of :mod:`cepopt.joinorder.dp_ld_sparse` (a module of their own: importing it loads numba)."""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["best_per_set", "byte_tables", "completion_bounds", "expand_layer"]

_EMPTY = -1


@numba.njit(cache=True)
def _lae(x, y):
    """ln(e^x + e^y), -inf aware."""
    if x == -np.inf:
        return y
    if y == -np.inf:
        return x
    hi = x if x > y else y
    lo = y if x > y else x
    return hi + math.log1p(math.exp(lo - hi))


@numba.njit(cache=True)
def byte_tables(b, n):
    """tab[x, c, v] = Σ b[x, 8c + i] over the bits i of the byte v: Σ_{i∈S} b_xi in n/8 lookups."""
    chunks = (n + 7) // 8
    tab = np.zeros((n, chunks, 256))
    for x in range(n):
        for c in range(chunks):
            for v in range(1, 256):
                low = v & -v
                i = 0
                while (low >> i) != 1:
                    i += 1
                j = 8 * c + i
                tab[x, c, v] = tab[x, c, v ^ low] + (b[x, j] if j < n else 0.0)
    return tab


@numba.njit(cache=True)
def _row_sum(tab, x, S, chunks):
    s = 0.0
    for c in range(chunks):
        s += tab[x, c, (S >> (8 * c)) & 255]
    return s


@numba.njit(cache=True, inline="always")
def _extension(masks, vals, pms, a, tab, chunks, s, x):
    """(ln PM, ln prefix cost) of the layer's set s extended by event x; NaN (never <= a bound) when x is in it."""
    S = masks[s]
    if (S >> x) & 1:
        return np.nan, np.nan
    p = pms[s] + a[x] + _row_sum(tab, x, S, chunks)
    return p, _lae(vals[s], p)


@numba.njit(cache=True)
def expand_layer(masks, vals, pms, a, tab, n, ub, max_out):
    """Every one-event extension T = S ∪ {x} of the layer (masks sorted, vals = ln of the best prefix cost
    of S, pms = ln PM(S)) whose prefix cost stays <= ub: (keys, vals, pms, last), x by x, so that the keys
    come in n sorted runs (a stable sort merges them in O(N log n)), and their count; empty arrays when
    more than ``max_out`` extensions survive."""
    chunks = tab.shape[1]
    count = 0
    for x in range(n):
        for s in range(masks.shape[0]):
            if _extension(masks, vals, pms, a, tab, chunks, s, x)[1] <= ub:
                count += 1
    if count > max_out:
        return np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, np.int8), count
    keys = np.empty(count, np.int64)
    tv = np.empty(count)
    tp = np.empty(count)
    tl = np.empty(count, np.int8)
    q = 0
    for x in range(n):
        for s in range(masks.shape[0]):
            p, v = _extension(masks, vals, pms, a, tab, chunks, s, x)
            if v <= ub:
                keys[q] = masks[s] | (1 << x)
                tv[q] = v
                tp[q] = p
                tl[q] = x
                q += 1
    return keys, tv, tp, tl, count


@numba.njit(cache=True)
def best_per_set(keys, vals, pms, last, order):
    """DP-LD's min over the extensions of one set (``order`` sorts ``keys``): unique sorted keys with the
    least value and its last event (ties: the first run, i.e. the smallest last event)."""
    m = order.shape[0]
    uk = np.empty(m, np.int64)
    uv = np.empty(m)
    up = np.empty(m)
    ul = np.empty(m, np.int8)
    u = -1
    prev = -1
    for r in range(m):
        i = order[r]
        k = keys[i]
        if k != prev:
            u += 1
            uk[u] = k
            uv[u] = vals[i]
            up[u] = pms[i]
            ul[u] = last[i]
            prev = k
        elif vals[i] < uv[u]:
            uv[u] = vals[i]
            ul[u] = last[i]
    return uk[:u + 1], uv[:u + 1], up[:u + 1], ul[:u + 1]


@numba.njit(cache=True)
def completion_bounds(masks, vals, pms, a, tab, half, full_gain, lall, n):
    """A lower bound on ln of the whole variable cost (prefixes 1..n-1) of any order with prefix set T:
    ln(best(T) + Σ_{j=|T|+1}^{n-1} lb_j(T)) where lb_j bounds ln PM of every j-set containing T. With
    C = complement of T and h_x = a_x + Σ_{i∈T} b_xi + ½ Σ_{i∈C∖x} b_xi (``half``: a_x + ½ Σ_i b_xi), a
    j-set T ∪ R has ln PM >= ln PM(T) + Σ_{x∈R} h_x (each edge inside R is b <= 0, charged half to each
    end against at most all of C), so lb_j = ln PM(T) + the j - |T| smallest h. The first and the last
    are exact: ln PM(T) + min_x (a_x + Σ_{i∈T} b_xi) and ln PM(all) - max_{x∈C} (a_x + Σ_{i≠x} b_xi)."""
    out = np.empty(masks.shape[0])
    h = np.empty(n)
    chunks = tab.shape[1]
    for t in range(masks.shape[0]):
        T = masks[t]
        k = 0
        m = 0
        first = np.inf
        tail_gain = -np.inf
        for x in range(n):
            if (T >> x) & 1:
                k += 1
                continue
            s = _row_sum(tab, x, T, chunks)
            hx = half[x] + 0.5 * s
            g = a[x] + s
            if g < first:
                first = g
            if full_gain[x] > tail_gain:
                tail_gain = full_gain[x]
            # insertion sort
            q = m
            while q > 0 and h[q - 1] > hx:
                h[q] = h[q - 1]
                q -= 1
            h[q] = hx
            m += 1
        total = vals[t]
        if k < n - 1:
            acc = pms[t]
            for j in range(k + 1, n):  # prefix sizes k+1 .. n-1
                acc += h[j - k - 1]
                lb = acc
                if j == k + 1:
                    e = pms[t] + first
                    if e > lb:
                        lb = e
                if j == n - 1:
                    e = lall - tail_gain
                    if e > lb:
                        lb = e
                total = _lae(total, lb)
        out[t] = total
    return out
