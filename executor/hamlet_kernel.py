"""Hamlet: shared online trend aggregation with graphlets, snapshots and per-burst decisions
(hamlet.md §3.3-§3.7, §3.10, §4.2), a compiled loop over every scope of a partition.

For each sharing group (Kleene type E, candidates Q_E) of a class, the events are walked in time
order. At the first event of each complete burst (cepopt.hamlet.graphlets.group_bursts, the bursts the
optimizer prices from an embedded stream) the policy decides which queries share it (hamlet.md §4.2
state machine); the decisions depend on the bursts and earlier decisions only, so they are taken
first, in Python (one call per burst, memoized for the deterministic policies), and the compiled walk
(:func:`hamlet_groups`) replays them:

* *extend*: the burst joins the open shared graphlet (same query set, graphlet still active);
* *share / merge*: the open graphlet, if any, is closed and a new shared graphlet starts; its
  graphlet-level snapshot x gets, per query, ``start(E,q) + the sum of the values of ALL earlier
  matched events of the types pt(E,q)`` -- the spec's correction of Alg. 1 line 13 (§3.7, §8.2), read
  from per-type running sums that include every earlier graphlet;
* *split / none*: the open graphlet is closed (its events are evaluated per query, §8.20) and the
  burst is processed per query (GRETA).

Inside a shared graphlet an event's value is a linear expression over snapshots, the same for all
sharing queries: a coefficient map ``c`` (counts) and, for COUNT(E)/SUM(E.attr)/AVG, maps ``d`` per
weight (§3.10): dense vectors over the graphlet's snapshots, of exact residue lanes
(cepopt.executor.exact). An event whose signatures (cepopt.hamlet.graphlets, GroupBursts: matched, blocked
external edges, blocked in-burst predecessors) differ between the sharing queries gets an event-level
snapshot z holding its per-query value (Def. 3.11, §3.7 identity test): exactly the snapshots the
burst's decision priced. An event no sharing query matches adds nothing. When the graphlet closes its
aggregated maps are evaluated once per query and folded into the per-query running sums and results.
Without edge predicates the maps of the graphlet's committed events are kept as sums only (an
event-level snapshot reads them by linearity); with edge predicates every event's maps are kept.

Operations counted. ``operations`` is in the unit of the cost model, Eq. 7 (and Eqs. 4/6): one
operation per predecessor edge read, times the width of what is read, the same unit for both
modes so that plans can be ranked (as the Gloria kernel counts Eqs. 2-4 units). With
``pe(e, q)`` = the earlier (strict ``<``) events of the scope matched by q, of a type in
``pt(e.type, q)``, whose edge predicates hold (hamlet.md §2.3, the GRETA graph):

* ``pred_edges`` (NonShared = k*b*n): every event processed per query q counts ``|pe(e, q)|``,
  once per query -- whether the kernel scans the stored events or reads per-type running sums;
* ``shared_edges`` (the b*n*s_p term): every event of a shared graphlet counts
  ``|pe(e)| * s`` once for all sharing queries, where ``pe(e)`` is the union of ``pe(e, q)`` over
  the sharing queries that match e (e's predecessor edges in the merged Hamlet graph, external
  ones included although the kernel reads them through the graphlet-level snapshot) and ``s`` is
  the width of e's coefficient vector in Algorithm 1: the number of snapshots of the graphlet so
  far, the graphlet-level snapshot, the event-level snapshots of earlier events and e's own, if it
  gets one (Eq. 7's s_p is this width at the end of the burst);
* ``snapshot_edges`` (the s_c*k*g*t term: per snapshot and query, the events of the graphlets it
  reads): a snapshot's value is computed per sharing query by reading events. The graphlet-level
  snapshot x of q is computed as §3.7 (b) says, incrementally: one read of q's previous
  graphlet-level snapshot in the scope (if any) plus every event matched by q of a type in
  pt(E, q) that arrived since that snapshot (all earlier ones for q's first x: Eq. 5's graphlets);
  an event-level snapshot z of event e (Def. 3.11) reads, per sharing query q that matches e,
  q's graphlet-level snapshot x for every predecessor before the graphlet (1; when q has an edge
  predicate into E, which may block some of them, its external predecessor edges instead) plus
  its in-graphlet predecessors, one per event (Eq. 7 prices snapshot maintenance by the events of
  the graphlets read, g*t, not by n);
* ``evaluations`` (the O(k*s) final-count update of §3.8, which Eq. 7 leaves out): the expression
  terms evaluated per query when a graphlet closes (§8.20).

``operations = pred_edges + shared_edges + snapshot_edges + evaluations``. A non-shared run gives
exactly Σ_q Σ_e |pe(e, q)|, the quantity Eq. 4 (k*n^2) bounds and GRETA's ``operations``.

``fastpath_operations`` keeps the work the running-sum implementation does, the count this kernel
reported before: ``propagations`` (non-shared: the predecessor edges per query, as above; shared:
one snapshot term per event plus the expression terms of its in-graphlet predecessors -- everything
before the graphlet is one term, read from the graphlet-level snapshot), ``snapshot_reads`` (events
whose values make up a graphlet-level snapshot; for an event-level snapshot, per query one
running-sum read plus the expression terms of its in-graphlet predecessors) and ``evaluations``.
Shared and non-shared are counted in different units there (a snapshot read vs n edges), which is
why it cannot rank plans the way Eq. 7 does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from cepopt.executor.greta import (
    C_EVAL,
    C_GRAPHLETS,
    C_PRED,
    C_PROP,
    C_READS,
    C_SEDGES,
    C_SHARED,
    C_SNAP,
    C_SNEDGES,
    C_VALUES,
    QI_PROP,
    QI_STORED,
    QI_VALUES,
    addm,
    advance,
    edges_hold,
    emit,
    holds,
    mulm,
    own_value,
    predecessors,
    query_step,
    reset_query,
)

__all__ = ["finish_metrics", "hamlet_groups", "hamlet_run"]

# graphlet scalars gi[...]
G_OPEN, G_NSNAP, G_TCOM, G_TPEN, G_PTIE, G_NEV, G_CUP, G_HASX, G_BURST, G_UPTO, G_TRACE, G_STATUS = range(12)
# per sharing candidate gq[...]: matched events and their map sizes, committed / pending
Q_MCOM, Q_MPEN, Q_LCOM, Q_LPEN = range(4)
# stored graphlet events (edge predicates): row, pool offset, vector length, len(c), len(c) + len(d)
E_ROW, E_OFF, E_NS, E_LC, E_LT = range(5)
#: kernel status: done, or a buffer too small (the caller enlarges it and runs again)
OK, POOL_FULL, TRACE_FULL = 0, 1, 2


# ---------------------------------------------------------------------------------------------
# Graphlet maps: CD[0|1, map, sid] committed | pending coefficient vectors (map 0: c; 1: d for
# COUNT(E); 2 + a: d for attribute a), KK the same keys (a key present, maybe with coefficient 0,
# as the dict-based maps of the specification have them: the counters count keys)
# ---------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def commit_maps(gi, gq, CD, KK, kc, mods):
    """The graphlet's pending tie group becomes committed."""
    for mp in range(CD.shape[1]):
        for sid in range(gi[G_NSNAP]):
            if KK[1, mp, sid]:
                KK[0, mp, sid] = True
                KK[1, mp, sid] = False
                for lane in range(CD.shape[3]):
                    CD[0, mp, sid, lane] = addm(CD[0, mp, sid, lane], CD[1, mp, sid, lane], mods[lane])
                    CD[1, mp, sid, lane] = 0.0
    gi[G_TCOM] += gi[G_TPEN]
    gi[G_TPEN] = 0
    gi[G_CUP] = gi[G_NEV]
    for c in range(kc):
        gq[Q_MCOM, c] += gq[Q_MPEN, c]
        gq[Q_LCOM, c] += gq[Q_LPEN, c]
        gq[Q_MPEN, c] = 0
        gq[Q_LPEN, c] = 0


@njit(cache=True, inline="always")
def new_snapshot(gi, CD, KK, Sval):
    sid = gi[G_NSNAP]
    for mp in range(CD.shape[1]):
        KK[0, mp, sid] = False
        KK[1, mp, sid] = False
        for lane in range(CD.shape[3]):
            CD[0, mp, sid, lane] = 0.0
            CD[1, mp, sid, lane] = 0.0
    for c in range(Sval.shape[1]):
        for w in range(Sval.shape[2]):
            for lane in range(Sval.shape[3]):
                Sval[sid, c, w, lane] = 0.0
    gi[G_NSNAP] = sid + 1
    return sid


@njit(cache=True, inline="always")
def coef(src, off, ns, mp, sid, lane, CD, pcd):
    """A coefficient of committed map ``mp`` (src 0) or of a stored event's map (src 1, at ``off``)."""
    if src == 0:
        return CD[0, mp, sid, lane]
    return pcd[off + mp * ns + sid, lane]


@njit(cache=True, inline="always")
def eval_maps(vec, c, q, e_type, ns, src, off, CD, pcd, Sval, tgt, mq, mods):
    """A shared expression's value for candidate c = query q (§3.10): sum over snapshots of
    c-coefficient x snapshot value, plus d-coefficients x the snapshot's count into COUNT(E) / SUM."""
    nw, nl = vec.shape[0], vec.shape[1]
    for w in range(nw):
        for lane in range(nl):
            vec[w, lane] = 0.0
    for sid in range(ns):
        for lane in range(nl):
            k = coef(src, off, ns, 0, sid, lane, CD, pcd)
            if k != 0.0:
                for w in range(nw):
                    vec[w, lane] = addm(vec[w, lane], mulm(k, Sval[sid, c, w, lane], mods[lane]), mods[lane])
    m = mq[q]
    for j in range(m):
        if tgt[q, j, 0] != e_type:
            continue
        a = tgt[q, j, 1]
        for sid in range(ns):
            for lane in range(nl):
                s0 = Sval[sid, c, 0, lane]
                vec[1 + j, lane] = addm(vec[1 + j, lane], mulm(coef(src, off, ns, 1, sid, lane, CD, pcd), s0,
                                                               mods[lane]), mods[lane])
                if a >= 0:
                    vec[1 + m + j, lane] = addm(vec[1 + m + j, lane],
                                                mulm(coef(src, off, ns, 2 + a, sid, lane, CD, pcd), s0, mods[lane]),
                                                mods[lane])


@njit(cache=True, inline="always")
def count_keys(ek, wact, ns):
    """(len(c), len(c) + the lengths of the active d maps) of an event's maps."""
    lc = 0
    lt = 0
    for mp in range(ek.shape[0]):
        if mp > 0 and not wact[mp]:
            continue
        for sid in range(ns):
            if ek[mp, sid]:
                lt += 1
                if mp == 0:
                    lc += 1
    return lc, lt


@njit(cache=True, inline="always")
def ids_upto(g, target, gi, pid, idc):
    """Count the rows before ``target`` by their set of candidates with i in pe(., q) (pmask)."""
    while gi[G_UPTO] < target:
        p = pid[g, gi[G_UPTO]]
        if p >= 0:
            idc[p] += 1
        gi[G_UPTO] += 1


@njit(cache=True, inline="always")
def pe_count(g, c, pv, idc):
    """|rows before the current tie with pmask of candidate c| from the id counts."""
    total = 0
    for p in range(idc.shape[0]):
        if pv[g, p, c]:
            total += idc[p]
    return total


@njit(cache=True, inline="always")
def union_ids(g, gM, kc, pv, idc):
    """|rows before the current tie with pmask of some candidate of gM|."""
    total = 0
    for p in range(idc.shape[0]):
        for c in range(kc):
            if gM[c] and pv[g, p, c]:
                total += idc[p]
                break
    return total


@njit(cache=True, _nrt=False)
def union_scan(a, i, g, cands, kc, gM, e_type, tcode, tie, masks, ptm, gext, e_ptr, edges, ecodes):
    """|pe(e_i)| in the merged graph when an edge predicate into E can block an edge: the rows
    before e_i's tie that are predecessors for some matched sharing query (hamlet.md §2.3)."""
    total = 0
    for j in range(a, tie[i]):
        for c in range(kc):
            if not gM[c]:
                continue
            q = cands[g, c]
            if masks[q, j] and ptm[q, e_type, tcode[j]]:
                if not gext[g, c] or edges_hold(q, j, i, tcode, e_ptr, edges, ecodes):
                    total += 1
                    break
    return total


@njit(cache=True, _nrt=False)
def trace_snapshot(kind, g, sid, kc, gS, gi, Sval, tr_i, tr_m, tr_v):
    t = gi[G_TRACE]
    if t >= tr_i.shape[0]:
        if tr_i.shape[0] > 0:
            gi[G_STATUS] = TRACE_FULL
        return
    tr_i[t, 0] = kind
    tr_i[t, 1] = g
    for c in range(kc):
        tr_m[t, c] = gS[c]
        for lane in range(Sval.shape[3]):
            tr_v[t, c, lane] = Sval[sid, c, 0, lane]
    gi[G_TRACE] = t + 1


# ---------------------------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------------------------


@njit(cache=True, _nrt=False)
def hamlet_groups(scope_start, ev, qt, at, st, grp, rows, bur, gl, pool, trace, mods, one, out, out_mm, counters):
    """Every sharing group of the class on every scope (module docstring); returns a status (OK or
    the buffer that was too small). ``grp``: per group its candidates, Kleene type, edge flags, pe
    sets; ``rows``: per group and row its burst, solo flag, burst row and pe set; ``bur``: per burst
    its first row, shared set and whether it may extend the open graphlet, per burst row the
    signature classes and kinds."""
    gi = gl[8]
    gi[G_TRACE] = 0
    gi[G_STATUS] = OK
    for s in range(scope_start.shape[0] - 1):
        for g in range(grp[1].shape[0]):
            status = group_scope(s, g, scope_start[s], scope_start[s + 1], ev, qt, at, st, grp, rows, bur, gl, pool,
                                 trace, mods, one, out, out_mm, counters)
            if status != OK:
                return status
    return OK


@njit(cache=True, _nrt=False)
def group_scope(s, g, a, b, ev, qt, at, st, grp, rows, bur, gl, pool, trace, mods, one, out, out_mm, counters):
    """Group ``g`` on the scope ``s`` (rows a..b): every event, then the results of its candidates."""
    masks = ev[3]
    sums, cnt, mm, qi, res, rmm = st[0], st[1], st[2], st[3], st[4], st[5]
    cands, kc = grp[0], grp[1][g]
    gi, last_x, idc = gl[8], gl[13], gl[14]
    for c in range(kc):
        reset_query(cands[g, c], sums, cnt, mm, qi, res, rmm)
        last_x[c] = -1
    for p in range(idc.shape[0]):
        idc[p] = 0
    gi[G_UPTO] = a
    gi[G_OPEN] = 0
    shared_on = False
    for i in range(a, b):
        relevant = False
        for c in range(kc):
            relevant |= masks[cands[g, c], i]
        if not relevant:
            continue
        for c in range(kc):
            advance(cands[g, c], ev[1][i], sums, cnt, mm, qi, mods)
        shared_on = burst_boundary(g, i, shared_on, ev, qt, st, grp, rows, bur, gl, pool, mods, counters)
        bi = rows[0][g, i]
        if bi >= 0 and shared_on:
            shared_event(g, i, a, ev, qt, at, st, grp, rows, bur, gl, pool, trace, mods, one, counters)
        private_steps(g, i, bi >= 0 and shared_on, ev, qt, at, st, grp, gl, mods, one)
        if gi[G_STATUS] != OK:
            return gi[G_STATUS]
    if gi[G_OPEN] == 1:
        close_open(g, ev, qt, st, grp, gl, pool, mods, counters)
    for c in range(kc):
        q = cands[g, c]
        emit(s, q, res, rmm, out, out_mm)
        counters[C_PROP] += qi[q, QI_PROP]
        counters[C_PRED] += qi[q, QI_PROP]
        counters[C_VALUES] += qi[q, QI_VALUES]
        qi[q, QI_PROP] = 0
        qi[q, QI_VALUES] = 0
    return gi[G_STATUS]


@njit(cache=True, _nrt=False)
def close_open(g, ev, qt, st, grp, gl, pool, mods, counters):
    """Close the group's open graphlet."""
    masks = ev[3]
    flags, tgt, mq, scan = qt[3], qt[4], qt[5], qt[6]
    sums, cnt, qi, res, sto, sval = st[0], st[1], st[3], st[4], st[6], st[7]
    close_graphlet(g, grp[2][g], grp[0], grp[1][g], flags, tgt, mq, scan, masks, sums, cnt, qi, res, sto, sval, gl[8],
                   gl[9], gl[10], gl[12], gl[1], gl[2], gl[0], pool[0], pool[1], gl[5], mods, counters)


@njit(cache=True, inline="always")
def burst_boundary(g, i, shared_on, ev, qt, st, grp, rows, bur, gl, pool, mods, counters):
    """Close the open graphlet where event i ends it, open one where i starts a shared burst that
    does not extend it; returns whether i's burst is shared."""
    tcode = ev[0]
    cands, kc, e_type = grp[0], grp[1][g], grp[2][g]
    b_first, b_shared, b_ext = bur[0], bur[1], bur[2]
    gi = gl[8]
    closing = tcode[i] != e_type or rows[1][g, i]
    if closing:
        shared_on = False
    bi = rows[0][g, i]
    opening = False
    if bi >= 0 and b_first[bi] == i:
        ns = 0
        for c in range(kc):
            ns += b_shared[bi, c]
        shared_on = ns >= 2
        if shared_on:
            counters[C_SHARED] += 1
            opening = not (b_ext[bi] and gi[G_OPEN] == 1)
        closing = closing or opening or not shared_on
    if closing and gi[G_OPEN] == 1:
        close_open(g, ev, qt, st, grp, gl, pool, mods, counters)
    if opening:
        open_graphlet(g, bi, cands, kc, e_type, qt[4], qt[5], b_shared, gi, gl[9], gl[10], gl[12])
        counters[C_GRAPHLETS] += 1
    return shared_on


@njit(cache=True, inline="always")
def private_steps(g, i, shared, ev, qt, at, st, grp, gl, mods, one):
    """GRETA's step for every candidate that matches event i outside a shared graphlet."""
    tcode, tie, src, masks = ev
    ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr, edges, ecodes = qt
    sums, cnt, mm, qi, res, rmm, sto, sval, smm, val, vmm = st
    cands, kc = grp[0], grp[1][g]
    gS = gl[10]
    for c in range(kc):
        q = cands[g, c]
        if masks[q, i] and not (shared and gS[c]):
            query_step(q, i, tcode, tie, src, ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr, edges, ecodes, at[0], at[1],
                       sums, cnt, mm, qi, res, rmm, sto, sval, smm, val, vmm, mods, one)


@njit(cache=True, inline="always")
def shared_event(g, i, a, ev, qt, at, st, grp, rows, bur, gl, pool, trace, mods, one, counters):
    """Event i of a shared graphlet: the graphlet-level snapshot on its first event, its
    coefficient maps (Def. 3.11's signature case) and Eq. 7's shared edges."""
    gi, CD, KK, ecd, ek, wact = gl[8], gl[1], gl[2], gl[3], gl[4], gl[12]
    tie = ev[1]
    if gi[G_PTIE] != -1 and gi[G_PTIE] != tie[i]:
        commit_maps(gi, gl[9], CD, KK, grp[1][g], mods)
    gi[G_PTIE] = tie[i]
    if gi[G_HASX] == 0:
        graphlet_snapshot(g, i, ev, qt, st, grp, rows, gl, trace, mods, one, counters)
    nmatch, first, same = signature(g, i, ev, grp, rows, bur, gl)
    if same:
        event_maps(g, i, first, ev, qt, at, rows, bur, grp, gl, pool, mods, counters)
    else:
        event_snapshot(g, i, ev, qt, at, st, grp, gl, pool, trace, mods, one, counters)
    if nmatch:
        counters[C_SEDGES] += shared_edges(g, i, a, ev, qt, grp, rows, gl)
    add_event(i, grp[5][g], grp[1][g], gi, gl[9], gl[11], CD, KK, ecd, ek, wact, pool[0], pool[1], mods)


@njit(cache=True, _nrt=False)
def graphlet_snapshot(g, i, ev, qt, st, grp, rows, gl, trace, mods, one, counters):
    """The graphlet-level snapshot x: start(E,q) + every earlier matched predecessor (§3.7 (b))."""
    tcode, tie = ev[0], ev[1]
    ptr, ptv, ptm, flags, scan = qt[0], qt[1], qt[2], qt[3], qt[6]
    sums, cnt, qi, sto, sval = st[0], st[1], st[3], st[6], st[7]
    cands, kc, e_type, pv = grp[0], grp[1][g], grp[2][g], grp[6]
    Sval, CD, KK, gi, gS, last_x, idc = gl[0], gl[1], gl[2], gl[8], gl[10], gl[13], gl[14]
    sid = new_snapshot(gi, CD, KK, Sval)
    counters[C_SNAP] += 1
    ids_upto(g, tie[i], gi, rows[3], idc)
    for c in range(kc):
        if not gS[c]:
            continue
        x_value(cands[g, c], i, c, sid, e_type, tcode, tie, ptr, ptv, ptm, flags, scan, sums, cnt, qi, sto, sval, Sval,
                one, mods, counters)
        pc = pe_count(g, c, pv, idc)
        counters[C_SNEDGES] += pc if last_x[c] < 0 else 1 + pc - last_x[c]
        last_x[c] = pc
    if trace[0].shape[0]:
        trace_snapshot(0, g, sid, kc, gS, gi, Sval, trace[0], trace[1], trace[2])
    gi[G_HASX] = 1


@njit(cache=True, inline="always")
def signature(g, i, ev, grp, rows, bur, gl):
    """The sharing queries that match event i (``gM``) and Def. 3.11's signature case: (matches,
    the first sharing candidate, whether every sharing query has i in one signature class)."""
    masks = ev[3]
    cands, kc = grp[0], grp[1][g]
    sig_class = bur[3]
    gS, gM = gl[10], gl[11]
    r = rows[2][g, i]
    lo, hi, first = 1 << 62, -1, -1
    nmatch = 0
    for c in range(kc):
        gM[c] = gS[c] and masks[cands[g, c], i]
        nmatch += gM[c]
        if gS[c]:
            lo = min(lo, sig_class[r, c])
            hi = max(hi, sig_class[r, c])
            if first < 0:
                first = c
    return nmatch, first, lo == hi


@njit(cache=True, _nrt=False)
def clear_maps(ecd, ek, nm, ns):
    for mp in range(nm):
        for sid in range(ns):
            ek[mp, sid] = False
            for lane in range(ecd.shape[2]):
                ecd[mp, sid, lane] = 0.0


@njit(cache=True, inline="always")
def event_maps(g, i, first, ev, qt, at, rows, bur, grp, gl, pool, mods, counters):
    """One signature class: event i's coefficients are the committed events' maps (kind 1) or the
    maps of the predecessors no edge predicate blocks (kind 2), then the weighted maps."""
    tcode, tie, src, masks = ev
    cands, e_type = grp[0], grp[2][g]
    CD, KK, ecd, ek, gi, wact = gl[1], gl[2], gl[3], gl[4], gl[8], gl[12]
    nm, nl, ns = CD.shape[1], mods.shape[0], gi[G_NSNAP]
    kind = bur[4][rows[2][g, i], first]
    clear_maps(ecd, ek, nm, ns)
    if kind == 1:
        # no edge blocked: c = x + the committed events' maps
        for mp in range(nm):
            for sid in range(ns):
                ek[mp, sid] = KK[0, mp, sid]
                for lane in range(nl):
                    ecd[mp, sid, lane] = CD[0, mp, sid, lane]
        for lane in range(nl):
            ecd[0, 0, lane] = addm(ecd[0, 0, lane], 1.0, mods[lane])
        ek[0, 0] = True
        counters[C_PROP] += 1 + gi[G_TCOM]
    elif kind == 2:
        counters[C_PROP] += blocked_maps(i, g, cands[g, first], e_type, tcode, tie, masks, rows[0], qt[7], qt[8],
                                         qt[9], gi, ecd, ek, pool[0], pool[1], wact, mods)
    if kind == 1 or kind == 2:
        weighted_maps(src[i], at, ecd, ek, wact, ns, mods)


@njit(cache=True, _nrt=False)
def weighted_maps(row, at, ecd, ek, wact, ns, mods):
    """d[w] += w(e) * c for COUNT(E) (w = 1) and each attribute present and non-zero."""
    alanes, nonzero = at[0], at[2]
    for mp in range(1, ecd.shape[0]):
        if not wact[mp] or (mp >= 2 and not nonzero[mp - 2, row]):
            continue
        for sid in range(ns):
            if not ek[0, sid]:
                continue
            ek[mp, sid] = True
            for lane in range(mods.shape[0]):
                w = 1.0 if mp == 1 else alanes[mp - 2, row, lane]
                ecd[mp, sid, lane] = addm(ecd[mp, sid, lane], mulm(w, ecd[0, sid, lane], mods[lane]), mods[lane])


@njit(cache=True, _nrt=False)
def event_snapshot(g, i, ev, qt, at, st, grp, gl, pool, trace, mods, one, counters):
    """Signature classes differ: an event-level snapshot z, Eq. 2 per matching query (Def. 3.11)."""
    tcode, tie, src, masks = ev
    ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr, edges, ecodes = qt
    sums, cnt, mm, qi, sto, sval, smm = st[0], st[1], st[2], st[3], st[6], st[7], st[8]
    cands, kc, e_type, gext, gee, need = grp[0], grp[1][g], grp[2][g], grp[3], grp[4], grp[5][g]
    Sval, CD, KK, ecd, ek, vec, tot, tmm, gi, gq, gS, gM, _wact, _last_x, _idc = gl
    sid = new_snapshot(gi, CD, KK, Sval)
    counters[C_SNAP] += 1
    for c in range(kc):
        if gM[c]:
            z_value(c, cands[g, c], i, sid, e_type, need, gext[g, c], gee[g, c], tcode, tie, src, masks, ptr, ptv, ptm,
                    flags, tgt, mq, scan, e_ptr, edges, ecodes, at[0], at[1], sums, cnt, mm, qi, sto, sval, smm, gi,
                    gq, CD, pool[0], pool[1], Sval, vec, tot, tmm, mods, one, counters)
    if trace[0].shape[0]:
        trace_snapshot(1, g, sid, kc, gS, gi, Sval, trace[0], trace[1], trace[2])
    clear_maps(ecd, ek, CD.shape[1], gi[G_NSNAP])
    ek[0, sid] = True
    for lane in range(mods.shape[0]):
        ecd[0, sid, lane] = 1.0
    counters[C_PROP] += 1


@njit(cache=True, inline="always")
def shared_edges(g, i, a, ev, qt, grp, rows, gl):
    """Eq. 7's b*n*s_p, per event: |pe(e)| edges, each read at the coefficient vector's width."""
    tcode, tie, masks = ev[0], ev[1], ev[3]
    cands, kc, e_type, gext = grp[0], grp[1][g], grp[2][g], grp[3]
    gi, gM, idc = gl[8], gl[11], gl[14]
    any_ext = False
    for c in range(kc):
        any_ext |= gM[c] and gext[g, c]
    if any_ext:
        union = union_scan(a, i, g, cands, kc, gM, e_type, tcode, tie, masks, qt[2], gext, qt[7], qt[8], qt[9])
    else:
        ids_upto(g, tie[i], gi, rows[3], idc)
        union = union_ids(g, gM, kc, grp[6], idc)
    return union * gi[G_NSNAP]


@njit(cache=True, _nrt=False)
def open_graphlet(g, bi, cands, kc, e_type, tgt, mq, b_shared, gi, gq, gS, wact):
    """A new shared graphlet for the burst's shared set; its weights: COUNT(E) and the attributes of
    the sharing queries' targets of type E."""
    gi[G_OPEN] = 1
    gi[G_NSNAP] = 0
    gi[G_TCOM] = 0
    gi[G_TPEN] = 0
    gi[G_PTIE] = -1
    gi[G_NEV] = 0
    gi[G_CUP] = 0
    gi[G_HASX] = 0
    for mp in range(wact.shape[0]):
        wact[mp] = mp == 0
    for c in range(kc):
        gS[c] = b_shared[bi, c]
        for k in range(4):
            gq[k, c] = 0
        if gS[c]:
            q = cands[g, c]
            for j in range(mq[q]):
                if tgt[q, j, 0] == e_type:
                    wact[1] = True
                    if tgt[q, j, 1] >= 0:
                        wact[2 + tgt[q, j, 1]] = True


@njit(cache=True, _nrt=False)
def x_value(q, i, c, sid, e_type, tcode, tie, ptr, ptv, ptm, flags, scan, sums, cnt, qi, sto, sval, Sval, one, mods,
            counters):
    """The graphlet-level snapshot's value for q: start(E,q) + the committed running sums of pt(E,q)
    (fast path) or every stored predecessor before e_i (scan path: the edge predicates are left to
    the event-level snapshots)."""
    nw, nl = Sval.shape[2], Sval.shape[3]
    if flags[0, q, e_type]:
        for lane in range(nl):
            Sval[sid, c, 0, lane] = one[lane]
    if not scan[q]:
        for p in range(ptr[q, e_type], ptr[q, e_type + 1]):
            u = ptv[p]
            counters[C_READS] += cnt[0, q, u]
            for w in range(nw):
                for lane in range(nl):
                    Sval[sid, c, w, lane] = addm(Sval[sid, c, w, lane], sums[0, q, u, w, lane], mods[lane])
        return
    for k in range(qi[q, QI_STORED]):
        j = sto[q, k, 0]
        if j < tie[i] and ptm[q, e_type, tcode[j]]:
            counters[C_READS] += 1
            for w in range(nw):
                for lane in range(nl):
                    Sval[sid, c, w, lane] = addm(Sval[sid, c, w, lane], sval[q, k, w, lane], mods[lane])


@njit(cache=True, _nrt=False)
def blocked_maps(i, g, q0, e_type, tcode, tie, masks, burst_of, e_ptr, edges, ecodes, gi, ecd, ek, pcd, evt, wact,
                 mods):
    """One signature for the sharing queries that blocks some in-burst predecessors: c = x + the maps
    of the committed events that are not blocked; returns the terms read."""
    nl = ecd.shape[2]
    ek[0, 0] = True
    for lane in range(nl):
        ecd[0, 0, lane] = addm(ecd[0, 0, lane], 1.0, mods[lane])
    terms = 1
    bi = burst_of[g, i]
    for e in range(gi[G_CUP]):
        j = evt[e, E_ROW]
        if burst_of[g, j] == bi and tie[j] < tie[i] and masks[q0, j]:
            ok = True
            for k in range(e_ptr[q0], e_ptr[q0 + 1]):
                if edges[k, 0] == e_type and edges[k, 1] == e_type:
                    ok &= edge_ok(k, j, i, edges, ecodes)
            if not ok:
                continue
        off, ns = evt[e, E_OFF], evt[e, E_NS]
        terms += evt[e, E_LC]
        for mp in range(ecd.shape[0]):
            if mp > 0 and not wact[mp]:
                continue
            for sid in range(ns):
                if pcd[off + mp * ns + sid, nl] != 0.0:
                    ek[mp, sid] = True
                for lane in range(nl):
                    ecd[mp, sid, lane] = addm(ecd[mp, sid, lane], pcd[off + mp * ns + sid, lane], mods[lane])
    return terms


@njit(cache=True, inline="always")
def edge_ok(k, j, i, edges, ecodes):
    return holds(edges[k, 2], ecodes[k, 0, j], ecodes[k, 1, j], ecodes[k, 2, i], ecodes[k, 3, i])


@njit(cache=True, _nrt=False)
def z_value(c, q, i, sid, e_type, need, ext, ee, tcode, tie, src, masks, ptr, ptv, ptm, flags, tgt, mq, scan, e_ptr,
            edges, ecodes, alanes, arank, sums, cnt, mm, qi, sto, sval, smm, gi, gq, CD, pcd, evt, Sval, vec, tot, tmm,
            mods, one, counters):
    """The event-level snapshot's value for candidate c = q (Eq. 2): its external predecessors
    (running sums or scan), its committed in-graphlet predecessors, then start and own attribute."""
    nl = tot.shape[1]
    nedges, _reach = predecessors(q, i, tcode, tie, ptr, ptv, ptm, scan, e_ptr, edges, ecodes, sums, cnt, mm, qi, sto,
                                  sval, smm, mods, tot, tmm)
    counters[C_PROP] += nedges
    counters[C_READS] += 1
    # everything before the graphlet is q's graphlet-level snapshot x (one read), unless an edge
    # predicate into E can block an external edge: then they are scanned
    counters[C_SNEDGES] += nedges if ext else 1
    if need:
        z_events(c, q, i, e_type, tcode, masks, ee, e_ptr, edges, ecodes, gi, CD, pcd, evt, Sval, tgt, mq, vec, tot,
                 mods, counters)
    else:
        # the committed events' maps by linearity (an event q does not match has value 0 for q)
        eval_maps(vec, c, q, e_type, sid, 0, 0, CD, pcd, Sval, tgt, mq, mods)
        for w in range(tot.shape[0]):
            for lane in range(nl):
                tot[w, lane] = addm(tot[w, lane], vec[w, lane], mods[lane])
        counters[C_SNEDGES] += gq[Q_MCOM, c]
        counters[C_READS] += gq[Q_LCOM, c]
    own_value(q, i, tcode, src, flags, tgt, mq, alanes, arank, mods, one, tot, tmm, True)
    for w in range(tot.shape[0]):
        for lane in range(nl):
            Sval[sid, c, w, lane] = tot[w, lane]


@njit(cache=True, inline="always")
def z_events(c, q, i, e_type, tcode, masks, ee, e_ptr, edges, ecodes, gi, CD, pcd, evt, Sval, tgt, mq, vec, tot, mods,
             counters):
    """An event-level snapshot's in-graphlet part for q with edge predicates: every committed event
    matched by q whose E -> E edges to e_i hold, one read each."""
    nl = tot.shape[1]
    for e in range(gi[G_CUP]):
        j = evt[e, E_ROW]
        if not masks[q, j]:
            continue
        if ee:
            ok = True
            for k in range(e_ptr[q], e_ptr[q + 1]):
                if edges[k, 0] == e_type and edges[k, 1] == e_type:
                    ok &= edge_ok(k, j, i, edges, ecodes)
            if not ok:
                continue
        counters[C_SNEDGES] += 1
        counters[C_READS] += evt[e, E_LT]
        eval_maps(vec, c, q, e_type, evt[e, E_NS], 1, evt[e, E_OFF], CD, pcd, Sval, tgt, mq, mods)
        for w in range(tot.shape[0]):
            for lane in range(nl):
                tot[w, lane] = addm(tot[w, lane], vec[w, lane], mods[lane])


@njit(cache=True, inline="always")
def add_event(i, need, kc, gi, gq, gM, CD, KK, ecd, ek, wact, pcd, evt, mods):
    """G.add: the event's maps join the pending tie group (and, with edge predicates, are stored)."""
    ns = gi[G_NSNAP]
    nl = ecd.shape[2]
    for mp in range(ecd.shape[0]):
        if mp > 0 and not wact[mp]:
            continue
        for sid in range(ns):
            if ek[mp, sid]:
                KK[1, mp, sid] = True
                for lane in range(nl):
                    CD[1, mp, sid, lane] = addm(CD[1, mp, sid, lane], ecd[mp, sid, lane], mods[lane])
    lc, lt = count_keys(ek, wact, ns)
    gi[G_TPEN] += lc
    for c in range(kc):
        if gM[c]:
            gq[Q_MPEN, c] += 1
            gq[Q_LPEN, c] += lt
    if need:
        e = gi[G_NEV]
        off = 0 if e == 0 else evt[e - 1, E_OFF] + ecd.shape[0] * evt[e - 1, E_NS]
        if e >= evt.shape[0] or off + ecd.shape[0] * ns > pcd.shape[0]:
            gi[G_STATUS] = POOL_FULL
            return
        evt[e, E_ROW] = i
        evt[e, E_OFF] = off
        evt[e, E_NS] = ns
        evt[e, E_LC] = lc
        evt[e, E_LT] = lt
        for mp in range(ecd.shape[0]):
            for sid in range(ns):
                for lane in range(nl):
                    pcd[off + mp * ns + sid, lane] = ecd[mp, sid, lane] if (mp == 0 or wact[mp]) else 0.0
                pcd[off + mp * ns + sid, nl] = 1.0 if (ek[mp, sid] and (mp == 0 or wact[mp])) else 0.0
    gi[G_NEV] += 1


@njit(cache=True, _nrt=False)
def close_graphlet(g, e_type, cands, kc, flags, tgt, mq, scan, masks, sums, cnt, qi, res, sto, sval, gi, gq, gS, wact,
                   CD, KK, Sval, pcd, evt, vec, mods, counters):
    """Evaluate the open graphlet once per query and fold it into the per-query sums (§4.2 split)."""
    if gi[G_OPEN] == 0:
        return
    gi[G_OPEN] = 0
    if gi[G_NEV] == 0:
        return
    commit_maps(gi, gq, CD, KK, kc, mods)
    ns = gi[G_NSNAP]
    keys = 0
    for mp in range(CD.shape[1]):
        if mp > 0 and not wact[mp]:
            continue
        for sid in range(ns):
            keys += KK[0, mp, sid]
    nw, nl = vec.shape[0], vec.shape[1]
    for c in range(kc):
        if not gS[c]:
            continue
        q = cands[g, c]
        counters[C_EVAL] += keys
        eval_maps(vec, c, q, e_type, ns, 0, 0, CD, pcd, Sval, tgt, mq, mods)
        for w in range(nw):
            for lane in range(nl):
                sums[0, q, e_type, w, lane] = addm(sums[0, q, e_type, w, lane], vec[w, lane], mods[lane])
        cnt[0, q, e_type] += gq[Q_MCOM, c]
        if flags[1, q, e_type]:
            for w in range(nw):
                for lane in range(nl):
                    res[q, w, lane] = addm(res[q, w, lane], vec[w, lane], mods[lane])
        if scan[q]:
            # the scan path needs every event's own value as a later predecessor
            for e in range(gi[G_NEV]):
                j = evt[e, E_ROW]
                if not masks[q, j]:
                    continue
                eval_maps(vec, c, q, e_type, evt[e, E_NS], 1, evt[e, E_OFF], CD, pcd, Sval, tgt, mq, mods)
                k = qi[q, QI_STORED]
                sto[q, k, 0] = j
                sto[q, k, 1] = 1
                for w in range(nw):
                    for lane in range(nl):
                        sval[q, k, w, lane] = vec[w, lane]
                qi[q, QI_STORED] = k + 1


# ---------------------------------------------------------------------------------------------
# Driver side: bursts, decisions, buffers
# ---------------------------------------------------------------------------------------------

#: the policies whose decision depends on the burst's statistics and the group's state only (not on
#: its scope): their decisions, and the state after them, are memoized per (class, burst statistics, state)
PURE_POLICIES = frozenset({"dynamic", "static", "nonshared", "exhaustive"})
_MEMO_LIMIT = 100_000


def _burst_order(found: list) -> list[tuple[int, int, int]]:
    """(scope, group, burst) of every burst, scope by scope, group by group, in time order."""
    sizes = [len(gb.b) for gb in found]
    if not sum(sizes):
        return []
    scope = np.concatenate([gb.burst_scope for gb in found])
    group = np.repeat(np.arange(len(found)), sizes)
    burst = np.concatenate([np.arange(k) for k in sizes])
    o = np.lexsort((burst, group, scope))
    return list(zip(scope[o].tolist(), group[o].tolist(), burst[o].tolist(), strict=True))


def _burst_classes(gb) -> list:
    """Per burst its signature classes as the cost model keys them: () when every event is uniform."""
    if not len(gb.b):
        return []
    nonuniform = np.logical_or.reduceat(gb.sig_class.any(axis=1), gb.ptr[:-1]) if len(gb.rows) else \
        np.zeros(len(gb.b), dtype=bool)
    out: list = [()] * len(gb.b)
    for i in np.flatnonzero(nonuniform).tolist():
        out[i] = tuple(map(tuple, gb.sig_class[gb.ptr[i]:gb.ptr[i + 1]].tolist()))
    return out


def _decide_one(policy, gb, b: int, state, t) -> tuple:
    """The policy's decision on burst ``b`` of ``gb`` in ``state`` (updated in place): (Decision, shared
    row by candidate or None, whether it extends the open graphlet)."""
    burst = gb.burst(b)
    d = policy.decide(burst, state, t)
    queries = tuple(sorted(d.queries))
    row, ext = None, False
    if len(queries) >= 2:
        row = np.array([q in queries for q in gb.cands], dtype=bool)
        ext = bool(burst.continues and state.shared is not None and set(state.shared) == set(queries))
    state.after(burst, queries)
    return d, row, ext


def _decide(compiled, index: int, cls, found: list, decisions: list | None) -> tuple[list, list, list]:
    """Run the policy on every burst, scope by scope and group by group in time order (one
    GroupState per scope and group): per group the shared set of each burst (by candidate) and
    whether it may extend the open graphlet; the Decisions in order. A pure policy is asked only
    about (burst, state) pairs it has not seen in this class: its answer and the state after it are
    memoized, so that a seen burst costs a dictionary look-up (no Burst is built)."""
    from cepopt.hamlet.cost import GroupState
    from cepopt.hamlet.problem import mean_t, query_t

    policy = compiled.policy
    t_of = {cq.name: query_t(len(cq.types), cls.t_rule) for cq in cls.queries}

    def t(qs):
        return mean_t(t_of, qs)

    memo = compiled.memo.setdefault(index, {}) if policy.name in PURE_POLICIES else None
    if memo is not None and len(memo) > _MEMO_LIMIT:
        memo.clear()
    shared = [np.zeros((len(gb.b), max(len(gb.cands), 1)), dtype=bool) for gb in found]
    extend = [np.zeros(len(gb.b), dtype=bool) for gb in found]
    stats = [(gb.b.tolist(), gb.n.tolist(), gb.continues.tolist(), _burst_classes(gb)) if memo is not None else None
             for gb in found]
    made: list = []
    states: dict = {}
    for s, g, b in _burst_order(found):
        st = states.get((s, g))
        if st is None:
            st = states[(s, g)] = [None, 0, 0, 0]           # GroupState's shared, g, s, decided
        if memo is None:
            state = GroupState(*st)
            d, row, ext = _decide_one(policy, found[g], b, state, t)
            st[:3] = state.shared, state.g, state.s
        else:
            sb, sn, sc, scl = stats[g]
            key = (g, sb[b], sn[b], scl[b], sc[b], st[0], st[1], st[2], st[3] > 0)
            hit = memo.get(key)
            if hit is None:
                state = GroupState(*st)
                hit = memo[key] = (*_decide_one(policy, found[g], b, state, t), (state.shared, state.g, state.s))
            d, row, ext, after = hit
            st[:3] = after
        st[3] += 1
        made.append(d)
        if row is not None:
            shared[g][b, :len(row)] = row
            extend[g][b] = ext
    if decisions is not None:
        decisions.extend(made)
    return shared, extend, made


def _group_tables(inp, found: list, shared: list, extend: list) -> tuple:
    """The kernel's per-group, per-row and per-burst arrays (:func:`hamlet_groups`)."""
    lay = inp.layout
    cls = lay.cls
    names = [cq.name for cq in cls.queries]
    ng, n = len(found), lay.n
    kmax = max(len(gb.cands) for gb in found)
    cands = np.full((ng, kmax), -1, dtype=np.int64)
    gk = np.array([len(gb.cands) for gb in found], dtype=np.int64)
    g_e = np.array([lay.type_code(gb.kleene) for gb in found], dtype=np.int64)
    gext = np.zeros((ng, kmax), dtype=bool)
    gee = np.zeros((ng, kmax), dtype=bool)
    gneed = np.zeros(ng, dtype=bool)
    burst_of = np.full((ng, n), -1, dtype=np.int64)
    solo = np.zeros((ng, n), dtype=bool)
    brow = np.full((ng, n), -1, dtype=np.int64)
    pid = np.full((ng, n), -1, dtype=np.int64)
    pvs, firsts, b_shared, b_ext, classes, kinds = [], [], [], [], [], []
    nb = nr = 0
    for g, gb in enumerate(found):
        qidx = [names.index(q) for q in gb.cands]
        cands[g, :len(qidx)] = qidx
        e = gb.kleene
        for c, q in enumerate(qidx):
            cq = cls.queries[q]
            gext[g, c] = any(ep.dst == e for ep in cq.edges)
            gee[g, c] = any(ep.src == e and ep.dst == e for ep in cq.edges)
        gneed[g] = any(cls.queries[q].edges for q in qidx)
        burst_of[g] = np.where(gb.burst_of >= 0, gb.burst_of + nb, -1)
        solo[g] = gb.solo
        brow[g, gb.rows] = np.arange(len(gb.rows)) + nr
        # pe(., q) candidates per row: matched by q and of a type in pt(E, q)
        code = lay.type_code(e)
        sets, inv = _pe_sets(lay.masks, qidx, np.ascontiguousarray(inp.qt[2][qidx, code]), lay.tcode)
        nonempty = sets.any(axis=1)
        remap = np.cumsum(nonempty) - 1
        pid[g] = np.where(nonempty[inv], remap[inv], -1)
        pv = np.zeros((int(nonempty.sum()), kmax), dtype=bool)
        pv[:, :len(qidx)] = sets[nonempty]
        pvs.append(pv)
        starts = gb.rows[gb.ptr[:-1]] if len(gb.b) else np.zeros(0, dtype=np.int64)
        firsts.append(starts)
        sh = np.zeros((len(gb.b), kmax), dtype=bool)
        sh[:, :len(qidx)] = shared[g][:, :len(qidx)]
        b_shared.append(sh)
        b_ext.append(extend[g])
        cl = np.zeros((len(gb.rows), kmax), dtype=np.int64)
        kd = np.zeros((len(gb.rows), kmax), dtype=np.int64)
        cl[:, :len(qidx)] = gb.sig_class
        kd[:, :len(qidx)] = gb.sig_kind
        classes.append(cl)
        kinds.append(kd)
        nb += len(gb.b)
        nr += len(gb.rows)
    nid = max((len(p) for p in pvs), default=0)
    pv_all = np.zeros((ng, max(nid, 1), kmax), dtype=bool)
    for g, p in enumerate(pvs):
        pv_all[g, :len(p)] = p
    grp = (cands, gk, g_e, gext, gee, gneed, pv_all)
    rows = (burst_of, solo, brow, pid)
    bur = (np.concatenate(firsts).astype(np.int64), np.concatenate(b_shared).reshape(-1, kmax),
           np.concatenate(b_ext).astype(bool), np.concatenate(classes).reshape(-1, kmax),
           np.concatenate(kinds).reshape(-1, kmax))
    return grp, rows, bur, kmax, nid


@njit(cache=True)
def _pe_codes(masks, qidx, pte, tcode):
    """Per row the set of candidates c (bit c) that match it with its type in pt(E, q_c)
    (``pte[c, type]``), as an int64 code (at most 62 candidates)."""
    n = tcode.shape[0]
    out = np.zeros(n, dtype=np.int64)
    for c in range(qidx.shape[0]):
        q = qidx[c]
        bit = np.int64(1) << c
        for i in range(n):
            if masks[q, i] and pte[c, tcode[i]]:
                out[i] |= bit
    return out


def _pe_sets(masks: np.ndarray, qidx: list[int], pte: np.ndarray, tcode: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pe sets of the rows (rows of a boolean matrix over the candidates ``qidx``:
    matched by q_c and of a type in pt(E, q_c), ``pte[c, type]``) and each row's index among them.
    Up to 62 candidates a set is one int64 code whose few distinct values are found by hashing."""
    k = len(qidx)
    if k <= 62:
        inv, distinct = pd.factorize(_pe_codes(masks, np.asarray(qidx, dtype=np.int64), pte, tcode))
        dist = np.asarray(distinct, dtype=np.int64)
        return ((dist[:, None] >> np.arange(k)) & 1).astype(bool), inv.astype(np.int64)
    pm = masks[qidx] & np.take(pte, tcode, axis=1)
    uniq, inv = np.unique(np.packbits(pm.T, axis=1), axis=0, return_inverse=True)
    return np.unpackbits(uniq, axis=1)[:, :k].astype(bool), inv.reshape(-1)


def _max_snapshots(lay, found: list, shared: list) -> int:
    """An upper bound of the snapshots of one graphlet: per scope, its shared bursts (one x each) plus
    its burst rows whose shared set disagrees on their signatures (one z each)."""
    scope_of = lay.scope_of()
    size = max(lay.scopes, 1)
    per_scope = np.zeros(size, dtype=np.int64)
    for g, gb in enumerate(found):
        if not len(gb.b):
            continue
        sh = shared[g]
        on = sh.sum(axis=1) >= 2
        per_scope += np.bincount(gb.burst_scope[on], minlength=size)
        b_of_row = gb.burst_of[gb.rows]
        rs = sh[b_of_row]
        cl = np.where(rs, gb.sig_class, -1)
        lo = np.where(rs, gb.sig_class, 1 << 30).min(axis=1)
        z = on[b_of_row] & (cl.max(axis=1) != lo)
        per_scope += np.bincount(scope_of[gb.rows[z]], minlength=size)
    return int(per_scope.max()) + 1


def hamlet_run(compiled, index: int, inp, decisions: list | None, trace: list | None) -> tuple:
    """Hamlet on one layout: GRETA for the queries of no sharing group, the compiled walk for the
    groups; when the policy shared no burst of the layout, the walk would only run GRETA's step for
    every candidate, so GRETA runs every query (same values, same counters). Returns (out, out_mm,
    counters, extra metrics)."""
    from collections import Counter

    from cepopt.executor.greta import C_BURSTS, C_PRED, C_PROP, COUNTERS
    from cepopt.executor.trend_inputs import FIRST_LANES, exact_run, kernel_state
    from cepopt.hamlet.graphlets import group_bursts

    lay = inp.layout
    cls = lay.cls
    names = [cq.name for cq in cls.queries]
    grouped = {q for _e, qs in cls.groups for q in qs}
    alone = np.array([i for i, q in enumerate(names) if q not in grouped], dtype=np.int64)
    found = [group_bursts(lay, index, e, cands) for e, cands in cls.groups]
    shared, extend, made = _decide(compiled, index, cls, found, decisions)
    if not any(sh.any() for sh in shared):
        found, alone = [], np.arange(len(names), dtype=np.int64)
    tables = _group_tables(inp, found, shared, extend) if found else None
    smax = _max_snapshots(lay, found, shared) if found else 1
    rows_max = int(np.diff(lay.scope_start).max(initial=0))
    need = bool(found) and bool(tables[0][5].any())
    caps = {"pool": (rows_max * min(smax, 8) + 16) if need else 0, "trace": 2 * lay.n + 2 if trace is not None else 0}
    result: dict = {}

    def kernel(mods, one, at, out, omm, counters):
        from cepopt.executor.greta import greta_kernel

        lanes = len(mods)
        st = kernel_state(inp, lanes)
        if len(alone):
            part = np.zeros(len(COUNTERS), dtype=np.int64)
            greta_kernel(lay.scope_start, inp.ev, inp.qt, at, alone, st, mods, one, out, omm, part)
            part[C_PRED] = part[C_PROP]
            counters += part
        if tables is None:
            return
        grp, rows, bur, kmax, nid = tables
        nm = 2 + len(inp.cols)
        w = inp.width
        tm = inp.minmax
        base = counters.copy()
        while True:
            gl = (np.zeros((smax, kmax, w, lanes)), np.zeros((2, nm, smax, lanes)), np.zeros((2, nm, smax), bool),
                  np.zeros((nm, smax, lanes)), np.zeros((nm, smax), bool), np.zeros((w, lanes)), np.zeros((w, lanes)),
                  np.full((2, tm), -1, np.int64), np.zeros(16, np.int64), np.zeros((4, kmax), np.int64),
                  np.zeros(kmax, bool), np.zeros(kmax, bool), np.zeros(nm, bool), np.zeros(kmax, np.int64),
                  np.zeros(max(nid, 1), np.int64))
            pool = (np.zeros((caps["pool"], lanes + 1)), np.zeros((rows_max + 1 if need else 0, 5), np.int64))
            tr = (np.zeros((caps["trace"], 2), np.int64), np.zeros((caps["trace"], kmax), bool),
                  np.zeros((caps["trace"], kmax, lanes)))
            counters[:] = base
            status = hamlet_groups(lay.scope_start, inp.ev, inp.qt, at, st, grp, rows, bur, gl, pool, tr, mods, one,
                                   out, omm, counters)
            if status == OK:
                result["trace"] = (tr, int(gl[8][G_TRACE]), kmax)
                return
            caps["pool" if status == POOL_FULL else "trace"] *= 2

    out, omm, counters, lanes = exact_run(inp, kernel, compiled.lanes.get(index, FIRST_LANES))
    compiled.lanes[index] = lanes
    counters[C_BURSTS] = len(made)
    extra = {"predicted": float(sum(d.cost for d in made))}
    for action, n in Counter(d.action for d in made).items():
        extra[f"action_{action}"] = n
    if trace is not None and "trace" in result:
        _read_trace(result["trace"], found, names, trace)
    return out, omm, counters, extra


def _read_trace(got: tuple, found: list, names: list, trace: list) -> None:
    """Snapshots as (kind, type, {query: count}), exact."""
    from cepopt.executor.exact import crt

    (tr_i, tr_m, tr_v), count, _kmax = got
    if not count:
        return
    values = np.array(crt(tr_v[:count, :, 1:]), dtype=object).reshape(count, -1)
    for t in range(count):
        kind, g = int(tr_i[t, 0]), int(tr_i[t, 1])
        gb = found[g]
        trace.append(("graphlet" if kind == 0 else "event", gb.kleene,
                      {q: int(values[t, c]) for c, q in enumerate(gb.cands) if tr_m[t, c]}))


def finish_metrics(metrics: dict) -> dict:
    """``operations`` in Eq. 7 units and ``fastpath_operations`` (see the module docstring)."""
    metrics["fastpath_operations"] = (metrics.get("propagations", 0) + metrics.get("snapshot_reads", 0)
                                      + metrics.get("evaluations", 0))
    metrics["operations"] = (metrics.get("pred_edges", 0) + metrics.get("shared_edges", 0)
                             + metrics.get("snapshot_edges", 0) + metrics.get("evaluations", 0))
    return metrics
