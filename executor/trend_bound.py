"""A proven upper bound of every trend result, in log2, at any size: sizes the residue lanes
(:mod:`cepopt.executor.exact`) when the float shadow lane cannot.

Why this bound. The kernels' lane 0 (the float shadow: the recurrence on |values|) bounds the
results only while it stays in the float range; past about 2^1000 it overflows, and rescaling the
counts by 2^-s does not help (2.0 ** -s is 0.0 from s = 1075 on). Three ways were weighed:

* a combinatorial bound (a trend is a time-ordered set of a scope's events: COUNT(*) <= 2^n - 1) is
  trivially a proof and tight on one A then n B events, but loose elsewhere: on the tests' random
  Kleene stream of 12,000 events it asks for about 8,000 bits where the results need 4,929 (1.6x
  the lanes, and of the kernel time);
* the float shadow with a larger exponent range (a float plus an int exponent per value) means a
  second number type in every kernel and would slow the fast path;
* GRETA's count recurrence itself, with values held as log2 and added by ``logaddexp2``
  (:func:`log_bound_kernel`): as tight as the shadow (it is the shadow, in another number format),
  linear in the events, and never overflows or underflows (a log2 of a count is at most the number
  of events; of a SUM, that plus log2 of the largest |value|).

The third is used: the shadow while it is finite and below 2^1000 (the fast path pays nothing), the
log kernel beyond (:func:`results_log2_bound`).

Why it is a bound (a proof, not an estimate). The kernel runs GRETA (hamlet.md §2, Eqs. 1-3 and
§2.5) per query and scope on |attribute| values, over the same events (the query masks: types,
filters, window lengths) and with the same strict time order, relaxed in one way that only adds
trends: edge predicates are ignored (every earlier matched event of a predecessor type is a
predecessor). Every term of the exact recurrence is then <= its relaxed counterpart (induction over
the events in time order: a sum over a superset of non-negative terms, each bounded), so the relaxed
results bound |every kernel result| (count, COUNT(E), and |SUM| <= the sum of |value| x count).
Hamlet's and Gloria's kernels compute the same results as GRETA (their tests hold them to it against
the brute-force oracle), so the bound holds for every plan; no second set of primes is needed.

Rounding: each ``logaddexp2`` and each product (a log2 sum) is correctly rounded up to a few ulp of
its result r, an absolute error below 2^-49 (|r| + 1); both are monotone and shift-equivariant, so
errors add along the operations: with N operations and every |r| <= R, the computed bound is low by
at most N 2^-49 (R + 1). :func:`results_log2_bound` adds that margin (N is counted by the kernel; R
is at most the bound plus the 1075 bits of the smallest attribute value) and one bit more.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["log_bound_kernel", "results_log2_bound"]

@njit(cache=True, inline="always")
def logadd(x, y):
    """log2(2^x + 2^y); -inf is log2(0)."""
    if x < y:
        x, y = y, x
    if y == -np.inf:
        return x
    return x + np.log1p(np.exp2(y - x)) / 0.6931471805599453


@njit(cache=True)
def log_bound_kernel(scope_start, tcode, tie, src, masks, ptr, ptv, flags, tgt, mq, alog, out):
    """GRETA without edge predicates in log2 (module docstring): ``out[scope, q, w]`` = log2 of
    (w = 0) the count, (1 + j) COUNT(E_j), (1 + m + j) the sum of |attribute| of target j, with
    ``alog[a, row]`` = log2 |value| (-inf: missing or 0). Returns the number of log operations."""
    k, nt, width = masks.shape[0], ptr.shape[1] - 1, out.shape[2]
    sums = np.full((2, nt, width), -np.inf)
    pend = np.zeros(nt, np.bool_)
    val = np.empty(width)
    ops = 0
    for s in range(scope_start.shape[0] - 1):
        for q in range(k):
            sums[:] = -np.inf
            pend[:] = False
            res = out[s, q]
            res[:] = -np.inf
            cur = -1
            m = mq[q]
            for i in range(scope_start[s], scope_start[s + 1]):
                if not masks[q, i]:
                    continue
                if tie[i] != cur:  # commit the previous time stamp's events
                    for u in range(nt):
                        if pend[u]:
                            for w in range(width):
                                sums[0, u, w] = logadd(sums[0, u, w], sums[1, u, w])
                                sums[1, u, w] = -np.inf
                            pend[u] = False
                    cur = tie[i]
                t = tcode[i]
                val[:] = -np.inf
                for p in range(ptr[q, t], ptr[q, t + 1]):
                    u = ptv[p]
                    for w in range(width):
                        val[w] = logadd(val[w], sums[0, u, w])
                if flags[0, q, t]:
                    val[0] = logadd(val[0], 0.0)
                for j in range(m):
                    if tgt[q, j, 0] != t:
                        continue
                    val[1 + j] = logadd(val[1 + j], val[0])
                    a = tgt[q, j, 1]
                    if a >= 0:
                        val[1 + m + j] = logadd(val[1 + m + j], alog[a, src[i]] + val[0])
                for w in range(width):
                    sums[1, t, w] = logadd(sums[1, t, w], val[w])
                pend[t] = True
                if flags[1, q, t]:
                    for w in range(width):
                        res[w] = logadd(res[w], val[w])
                ops += (ptr[q, t + 1] - ptr[q, t] + 3) * width + 2 * m + 1
            ops += nt * width
    return ops


def results_log2_bound(inp) -> float:
    """log2 of a proven bound of every result magnitude of ``inp`` (a
    :class:`cepopt.executor.trend_inputs.KernelInputs`) in integer units: counts, COUNT(E), and sums
    in units of their column's 2^emin (module docstring)."""
    lay = inp.layout
    ptr, ptv, _ptm, flags, tgt, mq = inp.qt[:6]
    alog = np.full((max(len(inp.cols), 1), len(lay.frame)), -np.inf)
    for a, col in enumerate(inp.cols):
        ok = col.present & (col.shadow > 0)
        alog[a, ok] = _log2_abs(col, ok)
    out = np.empty((lay.scopes, len(lay.cls.queries), inp.width))
    ops = log_bound_kernel(lay.scope_start, lay.tcode, lay.tie, lay.src, lay.masks, ptr, ptv, flags, tgt, mq, alog,
                           out)
    best = 0.0
    for q, cq in enumerate(lay.cls.queries):
        m = len(cq.targets)
        best = max(best, float(out[:, q, :1 + m].max(initial=-np.inf)))
        for j, (_ref, attr) in enumerate(cq.targets):
            if attr is not None:
                emin = inp.cols[inp.attrs.index(attr)].emin
                best = max(best, float(out[:, q, 1 + m + j].max(initial=-np.inf)) - emin)
    emin_all = min((c.emin for c in inp.cols), default=0)
    reach = best + 1100.0 - emin_all
    return best + ops * 2.0 ** -49 * (reach + 1.0) + 1.0


def _log2_abs(col, ok: np.ndarray) -> np.ndarray:
    """log2 |value| of the rows ``ok``, exact enough for Python ints past the float range: the float
    shadow where it is finite and normal, the integer's bit length otherwise (an upper bound)."""
    shadow = col.shadow[ok]
    got = np.log2(shadow)
    bad = ~np.isfinite(shadow) | (shadow < 2.0 ** -1000)
    if bad.any():
        rows = np.flatnonzero(ok)[bad]
        got[bad] = [_exact_log2(int(col.mant[r]), int(col.exp[r])) for r in rows.tolist()]
    return got


def _exact_log2(mant: int, exp: int) -> float:
    """An upper bound of log2 |mant * 2^exp| (math.log2 takes Python ints of any size)."""
    return math.log2(abs(mant)) + exp + 1e-9 if mant else -math.inf
