"""GRETA: non-shared online trend aggregation (hamlet.md §2), a compiled loop over one partition.

Per query q and matched event e (Eqs. 1-3)::

    count(e,q) = start(e,q) + sum of count(e',q) over the predecessor events pe(e,q)
    fcount(q)  = sum of count(e,q) over matched events of an end type

and for an aggregate target (E, attr) (§2.5): countE(e) = sum countE(e') + [e.type=E]*count(e),
sum(e) = sum sum(e') + [e.type=E]*e.attr*count(e), min/max over predecessors with count > 0 and
e.attr. A predecessor is an earlier (strictly, §8.10) matched event of a type in pt(E,q), in the same
partition and window, whose edge predicates hold (§2.3).

Two paths, as §2.7 says: without edge predicates, per-type running sums give each event's
predecessor aggregate in O(|pt|) (the fast path; events of one time stamp are committed together when
time moves on); with edge predicates, the stored events are scanned (the faithful O(n) path).

The kernel runs on a :class:`cepopt.hamlet.scope.Layout` (every scope of a partition at once) as
compiled Numba loops. Values are vectors of exact residue lanes (:mod:`cepopt.executor.exact`): lane 0
is the float shadow (it bounds the results while below 2^1000; beyond, :mod:`cepopt.executor.trend_bound`
does), lanes 1.. the residues; MIN/MAX are ranks of the
attribute's values; "count > 0" is tracked as reachability (a start type, or a predecessor that is
reachable), which is exact. The per-event step (:func:`query_step`) is the one the Hamlet kernel runs
for the queries it does not share.

Measured operations: ``propagations`` = the number of (predecessor, event, query) edges whose values
are added, the quantity Eq. 4 (k*n^2) bounds; ``values`` = the (event, query) counts computed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["COUNTERS", "greta_kernel", "new_state"]

#: the counters every trend kernel fills (int64 array, in this order)
COUNTERS = ("propagations", "values", "snapshots", "snapshot_reads", "evaluations", "bursts", "shared_bursts",
            "graphlets", "pred_edges", "shared_edges", "snapshot_edges", "reused")
C_PROP, C_VALUES, C_SNAP, C_READS, C_EVAL, C_BURSTS, C_SHARED, C_GRAPHLETS, C_PRED, C_SEDGES, C_SNEDGES, \
    C_REUSED = range(len(COUNTERS))


# ---------------------------------------------------------------------------------------------
# Lanes (cepopt.executor.exact): lane 0 the float shadow, lanes 1.. residues modulo mods[l] < 2^26
# (mods[0] = 0: no reduction). Hot helpers take arrays and indexes and are compiled without
# reference counting (_nrt=False): Numba would otherwise count references on every array handed to
# a function or sliced, which costs far more than the arithmetic here.
# ---------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def addm(x, y, p):
    """(x + y) mod p for residues; plain addition on the shadow lane (p = 0)."""
    s = x + y
    return s - p if s >= p else s


@njit(cache=True, inline="always")
def mulm(x, y, p):
    """(x * y) mod p, exact in float64 for p < 2^26; plain product on the shadow lane (p = 0)."""
    z = x * y
    if p == 0.0:
        return z
    r = z - np.floor(z / p) * p
    if r < 0:
        r += p
    elif r >= p:
        r -= p
    return r


@njit(cache=True, inline="always")
def holds(op, lr, lk, rr, rk):
    """An edge predicate on codes (cepopt.hamlet.scope.edge_codes): never on a missing value; between
    kinds, = false and != true."""
    if lr < 0 or rr < 0:
        return False
    if lk != rk:
        return op == 1
    if op == 0:
        return lr == rr
    if op == 1:
        return lr != rr
    if op == 2:
        return lr < rr
    if op == 3:
        return lr <= rr
    if op == 4:
        return lr > rr
    return lr >= rr


@njit(cache=True, inline="always")
def edges_hold(q, j, i, tcode, e_ptr, edges, ecodes):
    """Every edge predicate of query q from event j (of its source type) into event i holds."""
    tj, ti = tcode[j], tcode[i]
    for e in range(e_ptr[q], e_ptr[q + 1]):
        if edges[e, 0] == tj and edges[e, 1] == ti:
            if not holds(edges[e, 2], ecodes[e, 0, j], ecodes[e, 1, j], ecodes[e, 2, i], ecodes[e, 3, i]):
                return False
    return True


@njit(cache=True, inline="always")
def min_into(dst, src):
    if src >= 0 and (dst < 0 or src < dst):
        return src
    return dst


# ---------------------------------------------------------------------------------------------
# Per-query state: running sums per type (fast path) or stored events (scan path).
#   sums[0|1, q, t]   committed | pending value sums of type t (width x lanes)
#   cnt[0|1, q, t]    their events;  cnt[2|3, q, t]: 1 when some of them are reachable
#   mm[0..3, q, t]    committed min, max, pending min, max (ranks, -1: none)
#   qi[q]             pending types, pending tie, stored events, propagations, values, then the
#                     pending types' list
#   res[q], rmm[0|1, q]  the result (width x lanes), its min and max
#   sto/sval/smm      the scan path's stored events: (row, reachable), value, min and max
# ---------------------------------------------------------------------------------------------

QI_PCNT, QI_PTIE, QI_STORED, QI_PROP, QI_VALUES, QI_PLIST = range(6)


def new_state(k: int, types: int, width: int, lanes: int, minmax: int, stored: int) -> tuple:
    """The GRETA state of ``k`` queries (arrays reused over scopes, :func:`reset_query`); ``minmax``:
    the MIN/MAX columns (0 when no query has a MIN or MAX: the rank loops then run no iteration)."""
    m = minmax
    return (np.zeros((2, k, types, width, lanes)), np.zeros((4, k, types), np.int64),
            np.full((4, k, types, m), -1, np.int64),
            np.zeros((k, QI_PLIST + types), np.int64), np.zeros((k, width, lanes)),
            np.full((2, k, m), -1, np.int64), np.zeros((k, stored, 2), np.int64),
            np.zeros((k, stored, width, lanes)), np.full((2, k, stored, m), -1, np.int64),
            np.zeros((width, lanes)), np.full((2, m), -1, np.int64))


@njit(cache=True, inline="always")
def reset_query(q, sums, cnt, mm, qi, res, rmm):
    for t in range(sums.shape[2]):
        for w in range(sums.shape[3]):
            for lane in range(sums.shape[4]):
                sums[0, q, t, w, lane] = 0.0
                sums[1, q, t, w, lane] = 0.0
        for c in range(4):
            cnt[c, q, t] = 0
            for j in range(mm.shape[3]):
                mm[c, q, t, j] = -1
    qi[q, QI_PCNT] = 0
    qi[q, QI_PTIE] = -1
    qi[q, QI_STORED] = 0
    for w in range(res.shape[1]):
        for lane in range(res.shape[2]):
            res[q, w, lane] = 0.0
    for j in range(rmm.shape[2]):
        rmm[0, q, j] = -1
        rmm[1, q, j] = -1


@njit(cache=True, inline="always")
def advance(q, tie_i, sums, cnt, mm, qi, mods):
    """Commit q's pending tie group when time moves past it."""
    if qi[q, QI_PCNT] > 0 and qi[q, QI_PTIE] != tie_i:
        for c in range(qi[q, QI_PCNT]):
            t = qi[q, QI_PLIST + c]
            for w in range(sums.shape[3]):
                for lane in range(sums.shape[4]):
                    sums[0, q, t, w, lane] = addm(sums[0, q, t, w, lane], sums[1, q, t, w, lane], mods[lane])
                    sums[1, q, t, w, lane] = 0.0
            cnt[0, q, t] += cnt[1, q, t]
            cnt[1, q, t] = 0
            cnt[2, q, t] |= cnt[3, q, t]
            cnt[3, q, t] = 0
            for j in range(mm.shape[3]):
                mm[0, q, t, j] = min_into(mm[0, q, t, j], mm[2, q, t, j])
                mm[1, q, t, j] = max(mm[1, q, t, j], mm[3, q, t, j])
                mm[2, q, t, j] = -1
                mm[3, q, t, j] = -1
        qi[q, QI_PCNT] = 0
    qi[q, QI_PTIE] = tie_i


@njit(cache=True, inline="always")
def predecessors(q, i, tcode, tie, ptr, ptv, ptm, scan, e_ptr, edges, ecodes, sums, cnt, mm, qi, sto, sval, smm,
                 mods, tot, tmm):
    """Aggregate over pe(e_i, q) into ``tot`` / ``tmm``: (edges read, reachable)."""
    nw, nl, nm = tot.shape[0], tot.shape[1], tmm.shape[1]
    for w in range(nw):
        for lane in range(nl):
            tot[w, lane] = 0.0
    for j in range(nm):
        tmm[0, j] = -1
        tmm[1, j] = -1
    t = tcode[i]
    nedges = 0
    reach = False
    if not scan[q]:
        for p in range(ptr[q, t], ptr[q, t + 1]):
            u = ptv[p]
            nedges += cnt[0, q, u]
            if cnt[0, q, u] == 0:
                continue
            for w in range(nw):
                for lane in range(nl):
                    tot[w, lane] = addm(tot[w, lane], sums[0, q, u, w, lane], mods[lane])
            reach |= cnt[2, q, u] == 1
            for j in range(nm):
                tmm[0, j] = min_into(tmm[0, j], mm[0, q, u, j])
                tmm[1, j] = max(tmm[1, j], mm[1, q, u, j])
        return nedges, reach
    for c in range(qi[q, QI_STORED]):
        j = sto[q, c, 0]
        if j >= tie[i] or not ptm[q, t, tcode[j]]:
            continue
        if not edges_hold(q, j, i, tcode, e_ptr, edges, ecodes):
            continue
        nedges += 1
        for w in range(nw):
            for lane in range(nl):
                tot[w, lane] = addm(tot[w, lane], sval[q, c, w, lane], mods[lane])
        reach |= sto[q, c, 1] == 1
        for k in range(nm):
            tmm[0, k] = min_into(tmm[0, k], smm[0, q, c, k])
            tmm[1, k] = max(tmm[1, k], smm[1, q, c, k])
    return nedges, reach


@njit(cache=True, inline="always")
def own_value(q, i, tcode, src, flags, tgt, mq, alanes, arank, mods, one, val, vmm, reach):
    """Eqs. 1-2 and §2.5: event i's value from its predecessors' aggregate (in ``val``, in place).
    Returns whether the event is reachable (count > 0): MIN/MAX read only reachable events."""
    t = tcode[i]
    nl = val.shape[1]
    if flags[0, q, t]:
        for lane in range(nl):
            val[0, lane] = addm(val[0, lane], one[lane], mods[lane])
        reach = True
    if not reach:
        for j in range(vmm.shape[1]):
            vmm[0, j] = -1
            vmm[1, j] = -1
    m = mq[q]
    r = src[i]
    for j in range(m):
        if tgt[q, j, 0] != t:
            continue
        for lane in range(nl):
            val[1 + j, lane] = addm(val[1 + j, lane], val[0, lane], mods[lane])
        a = tgt[q, j, 1]
        if a >= 0 and arank[a, r] >= 0:
            for lane in range(nl):
                val[1 + m + j, lane] = addm(val[1 + m + j, lane], mulm(alanes[a, r, lane], val[0, lane], mods[lane]),
                                            mods[lane])
            if tgt[q, j, 2] and reach:
                vmm[0, j] = min_into(vmm[0, j], arank[a, r])
                vmm[1, j] = max(vmm[1, j], arank[a, r])
    return reach


@njit(cache=True, inline="always")
def record(q, i, tcode, flags, scan, sums, cnt, mm, qi, res, rmm, sto, sval, smm, mods, val, vmm, reach):
    """Store event i's value (pending until time moves on, or stored for the scan path) and add it
    to the result if it is of an end type."""
    t = tcode[i]
    nw, nl, nm = val.shape[0], val.shape[1], vmm.shape[1]
    qi[q, QI_VALUES] += 1
    if scan[q]:
        c = qi[q, QI_STORED]
        sto[q, c, 0] = i
        sto[q, c, 1] = 1 if reach else 0
        for w in range(nw):
            for lane in range(nl):
                sval[q, c, w, lane] = val[w, lane]
        for j in range(nm):
            smm[0, q, c, j] = vmm[0, j]
            smm[1, q, c, j] = vmm[1, j]
        qi[q, QI_STORED] = c + 1
    else:
        if cnt[1, q, t] == 0:
            qi[q, QI_PLIST + qi[q, QI_PCNT]] = t
            qi[q, QI_PCNT] += 1
        cnt[1, q, t] += 1
        for w in range(nw):
            for lane in range(nl):
                sums[1, q, t, w, lane] = addm(sums[1, q, t, w, lane], val[w, lane], mods[lane])
        if reach:
            cnt[3, q, t] = 1
        for j in range(nm):
            mm[2, q, t, j] = min_into(mm[2, q, t, j], vmm[0, j])
            mm[3, q, t, j] = max(mm[3, q, t, j], vmm[1, j])
    if flags[1, q, t]:
        for w in range(nw):
            for lane in range(nl):
                res[q, w, lane] = addm(res[q, w, lane], val[w, lane], mods[lane])
        if reach:
            for j in range(nm):
                rmm[0, q, j] = min_into(rmm[0, q, j], vmm[0, j])
                rmm[1, q, j] = max(rmm[1, q, j], vmm[1, j])


@njit(cache=True, inline="always")
def query_step(q, i, tcode, tie, src, ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr, edges, ecodes, alanes, arank,
               sums, cnt, mm, qi, res, rmm, sto, sval, smm, val, vmm, mods, one):
    """GRETA on one event matched by q (time advanced to it): predecessors, value, record."""
    nedges, reach = predecessors(q, i, tcode, tie, ptr, ptv, ptm, scan, e_ptr, edges, ecodes, sums, cnt, mm, qi, sto,
                                 sval, smm, mods, val, vmm)
    qi[q, QI_PROP] += nedges
    reach = own_value(q, i, tcode, src, flags, tgt, mq, alanes, arank, mods, one, val, vmm, reach)
    record(q, i, tcode, flags, scan, sums, cnt, mm, qi, res, rmm, sto, sval, smm, mods, val, vmm, reach)


@njit(cache=True, inline="always")
def emit(s, q, res, rmm, out, out_mm):
    """Scope s's result of q into the kernel's outputs."""
    for w in range(res.shape[1]):
        for lane in range(res.shape[2]):
            out[s, q, w, lane] = res[q, w, lane]
    for j in range(rmm.shape[2]):
        out_mm[0, s, q, j] = rmm[0, q, j]
        out_mm[1, s, q, j] = rmm[1, q, j]


@njit(cache=True, _nrt=False)
def greta_kernel(scope_start, ev, qt, at, run, st, mods, one, out, out_mm, counters):
    """GRETA for the queries ``run`` (indexes into the class's queries) on every scope: results into
    ``out[scope, q]`` (width x lanes) and ``out_mm[0|1, scope, q]`` (min and max ranks)."""
    tcode, tie, src, masks = ev
    ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr, edges, ecodes = qt
    alanes, arank, _nonzero = at
    sums, cnt, mm, qi, res, rmm, sto, sval, smm, val, vmm = st
    for s in range(scope_start.shape[0] - 1):
        for q in run:
            reset_query(q, sums, cnt, mm, qi, res, rmm)
            for i in range(scope_start[s], scope_start[s + 1]):
                if masks[q, i]:
                    advance(q, tie[i], sums, cnt, mm, qi, mods)
                    query_step(q, i, tcode, tie, src, ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr, edges, ecodes,
                               alanes, arank, sums, cnt, mm, qi, res, rmm, sto, sval, smm, val, vmm, mods, one)
            emit(s, q, res, rmm, out, out_mm)
    for q in run:
        counters[C_PROP] += qi[q, QI_PROP]
        counters[C_VALUES] += qi[q, QI_VALUES]
        qi[q, QI_PROP] = 0
        qi[q, QI_VALUES] = 0
