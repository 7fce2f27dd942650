"""Gloria plan execution: per transition, per Q-set, shared snapshot expressions or per-query values
(specs/gloria.md §2.2, cepopt/gloria/plan.py), a compiled loop over every scope of a partition.

Events are taken one time stamp at a time. Every block of the plan's partition of a transition
t = (Ei, Ej) keeps a *running aggregate* of the Ei events folded into it so far, and an Ej event takes
the running aggregates of its incoming blocks as its contributions (events of one time stamp never
extend each other):

* an unshared block {q}: the running sum of q's values of the predecessors (Eq. 2);
* a shared block (S)^X with X = Ei (a fresh share, local snapshot or merge): each predecessor e' is
  folded in as its own snapshot variable sp_e', holding its per-query values for S (``len = 1``);
* a shared block (S)^X with an upstream X (REUSE): each predecessor's own expression over the
  X-snapshots is added term by term (``len = |X|`` terms at most, Eq. 3). When a predecessor cannot
  hand on one expression for all of S (a query of S does not match it, has it as a start type, or
  reaches it through a transition of another block), it is folded in as a snapshot instead: the
  executor re-snapshots where the plan's assumption does not hold, so every plan gives the
  non-shared results (Gloria's own correctness claim, checked here by brute force). A query whose
  window has already closed (queries of one slide but different lengths share one scope) is ignored.

``value(e, q) = start(e, q) + the sum of e's contributions for q``; a shared contribution is evaluated
for q (``len`` operations) only where it is needed: at end types (results), to fill a snapshot, and
for unshared successors (Eq. 4).

Implementation: a shared block keeps its running expression as the list of its snapshot keys (what
``len`` counts) and, per query of the block, the expression's value (the sum of coefficient x
snapshot value, updated as terms are folded in): every value is linear in the snapshots, so
evaluating an expression for q is reading that sum, and the counters count the terms the expression
has. Values are exact residue lanes (cepopt.executor.exact).

Counted, as the cost model prices them: ``propagations`` = one per (predecessor, event, query) for
unshared blocks (Eq. 2, pairwise) and one per expression term folded into a shared block (Eq. 3, which
has no |E| factor: an event reads its blocks' running expressions for free); ``evaluations`` (Eq. 4
terms); ``snapshots``; ``reused`` (predecessor expressions handed on unchanged). Only COUNT(*) is
shared; queries with other aggregates, and every query with edge predicates, run with GRETA
(:mod:`cepopt.executor.greta`) and are listed in ``metrics["greta_queries"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from cepopt.executor.greta import C_EVAL, C_PROP, C_REUSED, C_SNAP, C_VALUES, addm
from cepopt.hamlet.scope import before_window_end

__all__ = ["gloria_kernel", "gloria_run"]

#: kernel status: done, or the keys buffer was too small (the caller enlarges it and runs again)
OK, KEYS_FULL = 0, 1


def _blocks_for(plan: Any, source: str, target: str, queries: list[str]) -> list[tuple[tuple[str, ...], str | None]]:
    """The plan's blocks of transition (source, target) restricted to ``queries``; queries the plan
    does not place run unshared."""
    out = []
    placed: set[str] = set()
    for block in (plan.blocks(source, target) if plan is not None else ()):
        qs = tuple(q for q in block.queries if q in queries)
        if not qs:
            continue
        placed.update(qs)
        if block.snapshot is not None and len(qs) >= 2:
            out.append((qs, block.snapshot))
        else:
            out.extend(((q,), None) for q in qs)
    out.extend(((q,), None) for q in queries if q not in placed)
    return out


def block_table(cls, plan: Any, queries: list[int], type_names: tuple[str, ...]) -> tuple:
    """The plan's blocks for the class's Gloria queries (indexes ``queries``): per block its source and
    target type, snapshot type (-1 unshared; a type of no query gets a code of its own), queries,
    and the id of its ordered query tuple (a snapshot is one per event and tuple); the blocks reaching
    and leaving each type, in the specification's order."""
    names = [cls.queries[q].name for q in queries]
    pos = {n: j for j, n in enumerate(names)}
    pt = {n: cls.queries[q].pt_map for n, q in zip(names, queries, strict=True)}
    code = {t: i for i, t in enumerate(type_names)}
    used = sorted(frozenset().union(*(cls.queries[q].types for q in queries)))
    blocks, tuples = [], {}
    for tj in used:
        for ti in used:
            qs = [n for n in names if ti in pt[n].get(tj, ())]
            for block_qs, snapshot in (_blocks_for(plan, ti, tj, qs) if qs else ()):
                if snapshot is not None and snapshot not in code:
                    code[snapshot] = len(code)
                blocks.append((code[ti], code[tj], -1 if snapshot is None else code[snapshot],
                               [pos[n] for n in block_qs], tuples.setdefault(block_qs, len(tuples))))
    nt, kq, nb = len(type_names), len(queries), len(blocks)
    binfo = np.zeros((nb, 4), dtype=np.int64)      # source, target, snapshot, tuple id
    bqs = np.zeros((nb, max(kq, 1)), dtype=bool)
    incoming: list[list[int]] = [[] for _ in range(nt)]
    outgoing: list[list[int]] = [[] for _ in range(nt)]
    for b, (ti, tj, x, members, tid) in enumerate(blocks):
        binfo[b] = (ti, tj, x, tid)
        bqs[b, members] = True
        incoming[tj].append(b)
        outgoing[ti].append(b)
    in_ptr = np.r_[0, np.cumsum([len(x) for x in incoming])].astype(np.int64)
    out_ptr = np.r_[0, np.cumsum([len(x) for x in outgoing])].astype(np.int64)
    in_v = np.array([b for x in incoming for b in x], dtype=np.int64)
    out_v = np.array([b for x in outgoing for b in x], dtype=np.int64)
    return binfo, bqs, in_ptr, in_v, out_ptr, out_v, max(len(tuples), 1), nb


@njit(cache=True, inline="always")
def value(r, qj, q, i, tcode, masks, flags, pn, pb, plen, pval, bqs, binfo, vdone, vcache, mods, one,
          counters):
    """count(e, q) of batch event r (row i), evaluating e's shared contributions for q (Eq. 4) once:
    into ``vcache[r, qj]``; False when q does not match e (its value is 0)."""
    if not masks[q, i]:
        return False
    if vdone[r, qj]:
        return True
    nl = mods.shape[0]
    for lane in range(nl):
        vcache[r, qj, lane] = one[lane] if flags[0, q, tcode[i]] else 0.0
    for p in range(pn[r]):
        b = pb[r, p]
        if not bqs[b, qj]:
            continue
        if binfo[b, 2] >= 0:
            counters[C_EVAL] += plen[r, p]
        for lane in range(nl):
            vcache[r, qj, lane] = addm(vcache[r, qj, lane], pval[r, p, qj, lane], mods[lane])
    vdone[r, qj] = True
    counters[C_VALUES] += 1
    return True


@njit(cache=True, _nrt=False)
def gloria_kernel(scope_start, ev, qt, gq, blk, buf, mods, one, out, counters):
    """Execute the plan's blocks (module docstring) for the Gloria queries ``gq[0]`` on every scope;
    returns a status (OK, or KEYS_FULL: a block's key list needs more room)."""
    tie = ev[1]
    run = gq[0]
    res = buf[14]
    stamp = 0
    for s in range(scope_start.shape[0] - 1):
        a, e = scope_start[s], scope_start[s + 1]
        reset_scope(buf, run.shape[0], mods.shape[0])
        nsid = 0
        i = a
        while i < e:
            j = i
            while j < e and tie[j] == tie[i]:
                j += 1
            read_batch(i, j, ev, gq, blk, buf, counters)
            stamp, nsid, status = fold_batch(i, j, stamp, nsid, ev, qt, gq, blk, buf, mods, one, counters)
            if status != OK:
                return status
            i = j
        for qj in range(run.shape[0]):
            for lane in range(mods.shape[0]):
                out[s, run[qj], 0, lane] = res[qj, lane]
    return OK


@njit(cache=True, _nrt=False)
def reset_scope(buf, kq, nl):
    """Empty running aggregates, key lists and results for a new scope."""
    bsum, bfold, bev, keys, klen, kmem = buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]
    res = buf[14]
    for b in range(bsum.shape[0]):
        bfold[b] = 0
        for lane in range(nl):
            bsum[b, lane] = 0.0
        for qj in range(kq):
            for lane in range(nl):
                bev[b, qj, lane] = 0.0
        for k in range(klen[b]):
            kmem[b, keys[b, k]] = False
        klen[b] = 0
    for qj in range(kq):
        for lane in range(nl):
            res[qj, lane] = 0.0


@njit(cache=True, _nrt=False)
def read_batch(i, j, ev, gq, blk, buf, counters):
    """Every event of the batch (rows i..j, one time stamp) takes its blocks' running aggregates."""
    tcode, masks = ev[0], ev[3]
    run = gq[0]
    binfo, bqs, in_ptr, in_v = blk[0], blk[1], blk[2], blk[3]
    bsum, bfold, bev, klen, pn, pb, plen, pval, vdone = buf[0], buf[1], buf[2], buf[4], buf[7], buf[8], buf[9], \
        buf[10], buf[11]
    kq, nl = run.shape[0], bsum.shape[1]
    for r in range(j - i):
        row = i + r
        pn[r] = 0
        for qj in range(kq):
            vdone[r, qj] = False
        t = tcode[row]
        for ib in range(in_ptr[t], in_ptr[t + 1]):
            b = in_v[ib]
            if not block_hit(b, row, run, masks, bqs):
                continue
            p = pn[r]
            pb[r, p] = b
            plen[r, p] = klen[b]
            if binfo[b, 2] < 0:
                counters[C_PROP] += bfold[b]
            for qj in range(kq):
                if bqs[b, qj]:
                    for lane in range(nl):
                        pval[r, p, qj, lane] = bsum[b, lane] if binfo[b, 2] < 0 else bev[b, qj, lane]
            pn[r] = p + 1


@njit(cache=True, inline="always")
def block_hit(b, row, run, masks, bqs):
    """Whether a query of block b matches the event at ``row``."""
    for qj in range(run.shape[0]):
        if bqs[b, qj] and masks[run[qj], row]:
            return True
    return False


@njit(cache=True, _nrt=False)
def fold_batch(i, j, stamp, nsid, ev, qt, gq, blk, buf, mods, one, counters):
    """The batch's results, then each event folded into the blocks leaving its type: (stamp, nsid,
    status)."""
    tcode, masks = ev[0], ev[3]
    flags = qt[3]
    run = gq[0]
    binfo, bqs, out_ptr, out_v = blk[0], blk[1], blk[4], blk[5]
    pn, pb, plen, pval, vdone, vcache, ev_sid, res = buf[7], buf[8], buf[9], buf[10], buf[11], buf[12], buf[13], \
        buf[14]
    for r in range(j - i):
        row = i + r
        t = tcode[row]
        for qj in range(run.shape[0]):
            q = run[qj]
            if flags[1, q, t] and value(r, qj, q, row, tcode, masks, flags, pn, pb, plen, pval, bqs, binfo, vdone,
                                        vcache, mods, one, counters):
                for lane in range(mods.shape[0]):
                    res[qj, lane] = addm(res[qj, lane], vcache[r, qj, lane], mods[lane])
        for x in range(ev_sid.shape[0]):
            ev_sid[x] = -1
        for ob in range(out_ptr[t], out_ptr[t + 1]):
            stamp += 1
            nsid, status = fold(r, row, out_v[ob], t, stamp, nsid, ev, qt, gq, blk, buf, mods, one, counters)
            if status != OK:
                return stamp, nsid, status
    return stamp, nsid, OK


@njit(cache=True, _nrt=False)
def fold(r, row, b, t, stamp, nsid, ev, qt, gq, blk, buf, mods, one, counters):
    """Add e to the running aggregate of block b leaving its type: its value (unshared), its own
    snapshot (X = its type, or when its expression is not one for the whole block), or its
    expression over the block's X snapshots (REUSE, Eq. 3: one propagation per term)."""
    run = gq[0]
    binfo = blk[0]
    if binfo[b, 2] < 0:
        fold_unshared(r, row, b, ev, qt, gq, blk, buf, mods, one, counters)
        return nsid, OK
    if not block_hit(b, row, run, ev[3], blk[1]):
        return nsid, OK
    if binfo[b, 2] != t and expression(r, row, b, t, stamp, ev, qt, gq, blk, buf, mods):
        counters[C_REUSED] += 1
        return nsid, fold_reuse(r, b, stamp, gq, blk, buf, mods, counters)
    return fold_snapshot(r, row, b, nsid, ev, qt, gq, blk, buf, mods, one, counters)


@njit(cache=True, _nrt=False)
def fold_unshared(r, row, b, ev, qt, gq, blk, buf, mods, one, counters):
    """An unshared block {q}: q's value of e joins the running sum."""
    tcode, masks, flags = ev[0], ev[3], qt[3]
    run = gq[0]
    binfo, bqs = blk[0], blk[1]
    bsum, bfold, pn, pb, plen, pval, vdone, vcache = buf[0], buf[1], buf[7], buf[8], buf[9], buf[10], buf[11], buf[12]
    for qj in range(run.shape[0]):
        if bqs[b, qj]:
            if value(r, qj, run[qj], row, tcode, masks, flags, pn, pb, plen, pval, bqs, binfo, vdone, vcache, mods, one,
                     counters):
                for lane in range(mods.shape[0]):
                    bsum[b, lane] = addm(bsum[b, lane], vcache[r, qj, lane], mods[lane])
                bfold[b] += 1
            return


@njit(cache=True, _nrt=False)
def fold_reuse(r, b, stamp, gq, blk, buf, mods, counters):
    """REUSE: the union of the parts' keys (marked with ``stamp``) joins block b's keys, the
    expression's values (``xbuf``) its running values; OK or KEYS_FULL."""
    kq = gq[0].shape[0]
    bqs = blk[1]
    bev, keys, klen, kmem, mark, pn, pb, plen, xbuf = buf[2], buf[3], buf[4], buf[5], buf[6], buf[7], buf[8], buf[9], \
        buf[15]
    for p in range(pn[r]):
        bp = pb[r, p]
        if not included(b, bp, bqs, kq):
            continue
        for k in range(plen[r, p]):
            sid = keys[bp, k]
            if mark[sid] != stamp:
                continue
            mark[sid] = -stamp
            counters[C_PROP] += 1
            if not kmem[b, sid]:
                if klen[b] >= keys.shape[1]:
                    return KEYS_FULL
                kmem[b, sid] = True
                keys[b, klen[b]] = sid
                klen[b] += 1
    for qj in range(kq):
        if bqs[b, qj]:
            for lane in range(mods.shape[0]):
                bev[b, qj, lane] = addm(bev[b, qj, lane], xbuf[qj, lane], mods[lane])
    return OK


@njit(cache=True, _nrt=False)
def fold_snapshot(r, row, b, nsid, ev, qt, gq, blk, buf, mods, one, counters):
    """e folded in as its own snapshot (one per event and query tuple): (nsid, OK or KEYS_FULL)."""
    tcode, masks, flags = ev[0], ev[3], qt[3]
    run = gq[0]
    binfo, bqs = blk[0], blk[1]
    bev, keys, klen, kmem = buf[2], buf[3], buf[4], buf[5]
    pn, pb, plen, pval, vdone, vcache, ev_sid = buf[7], buf[8], buf[9], buf[10], buf[11], buf[12], buf[13]
    kq = run.shape[0]
    tid = binfo[b, 3]
    sid = ev_sid[tid]
    if sid < 0:
        if nsid >= kmem.shape[1]:
            return nsid, KEYS_FULL
        sid = nsid
        nsid += 1
        ev_sid[tid] = sid
        counters[C_SNAP] += 1
        for qj in range(kq):
            if bqs[b, qj]:
                value(r, qj, run[qj], row, tcode, masks, flags, pn, pb, plen, pval, bqs, binfo, vdone, vcache, mods,
                      one, counters)
    counters[C_PROP] += 1
    if klen[b] >= keys.shape[1]:
        return nsid, KEYS_FULL
    kmem[b, sid] = True
    keys[b, klen[b]] = sid
    klen[b] += 1
    for qj in range(kq):
        if bqs[b, qj] and masks[run[qj], row]:
            for lane in range(mods.shape[0]):
                bev[b, qj, lane] = addm(bev[b, qj, lane], vcache[r, qj, lane], mods[lane])
    return nsid, OK


@njit(cache=True, inline="always")
def included(b, bp, bqs, kq):
    """Whether a part of block bp enters block b's expression: their query sets intersect."""
    for qj in range(kq):
        if bqs[b, qj] and bqs[bp, qj]:
            return True
    return False


@njit(cache=True, _nrt=False)
def expression(r, row, b, t, stamp, ev, qt, gq, blk, buf, mods):
    """Whether e's expression over block b's snapshot type is one for every query of the block
    (then its keys are marked with ``stamp`` and its value per query is in ``xbuf``)."""
    if not live_queries_match(row, b, t, ev[3], qt[3], gq, blk[1]):
        return False
    nused = parts_used(r, b, gq[0].shape[0], blk, buf)
    if nused < 0 or not transitions_match(row, b, t, nused, qt, gq, blk[1], buf[16]):
        return False
    expression_value(r, b, stamp, gq[0].shape[0], blk[1], buf, mods)
    return True


@njit(cache=True, _nrt=False)
def live_queries_match(row, b, t, masks, flags, gq, bqs):
    """Every query of block b whose window is still open matches e and has no start at its type (a
    query whose window has closed before e never reads e's expression again: ignored)."""
    run, live = gq
    for qj in range(run.shape[0]):
        q = run[qj]
        if bqs[b, qj] and live[q, row] and (not masks[q, row] or flags[0, q, t]):
            return False
    return True


@njit(cache=True, _nrt=False)
def parts_used(r, b, kq, blk, buf):
    """The source types of e's parts that enter block b (marked in ``used``), or -1 when a part has
    another snapshot type or lacks a query of b."""
    binfo, bqs = blk[0], blk[1]
    pn, pb, used = buf[7], buf[8], buf[16]
    x = binfo[b, 2]
    for u in range(used.shape[0]):
        used[u] = False
    nused = 0
    for p in range(pn[r]):
        bp = pb[r, p]
        if not included(b, bp, bqs, kq):
            continue
        if binfo[bp, 2] != x:
            return -1
        for qj in range(kq):
            if bqs[b, qj] and not bqs[bp, qj]:
                return -1
        if not used[binfo[bp, 0]]:
            used[binfo[bp, 0]] = True
            nused += 1
    return nused


@njit(cache=True, _nrt=False)
def transitions_match(row, b, t, nused, qt, gq, bqs, used):
    """Every live query of the block reaches e through exactly the used transitions."""
    ptr, ptv = qt[0], qt[1]
    run, live = gq
    for qj in range(run.shape[0]):
        q = run[qj]
        if not (bqs[b, qj] and live[q, row]):
            continue
        if ptr[q, t + 1] - ptr[q, t] != nused:
            return False
        for k in range(ptr[q, t], ptr[q, t + 1]):
            if not used[ptv[k]]:
                return False
    return True


@njit(cache=True, _nrt=False)
def expression_value(r, b, stamp, kq, bqs, buf, mods):
    """Mark the keys of e's parts in block b with ``stamp``; their values per query into ``xbuf``."""
    keys, mark, pn, pb, plen, pval, xbuf = buf[3], buf[6], buf[7], buf[8], buf[9], buf[10], buf[15]
    nl = mods.shape[0]
    for qj in range(kq):
        for lane in range(nl):
            xbuf[qj, lane] = 0.0
    for p in range(pn[r]):
        bp = pb[r, p]
        if not included(b, bp, bqs, kq):
            continue
        for k in range(plen[r, p]):
            mark[keys[bp, k]] = stamp
        for qj in range(kq):
            if bqs[b, qj]:
                for lane in range(nl):
                    xbuf[qj, lane] = addm(xbuf[qj, lane], pval[r, p, qj, lane], mods[lane])


def gloria_run(compiled, index: int, inp) -> tuple:
    """The plan on one layout: GRETA for the queries the Gloria kernel does not share (other
    aggregates than COUNT(*), edge predicates), the compiled block walk for the others. Returns
    (out, out_mm, counters)."""
    from cepopt.executor.greta import C_PROP, COUNTERS, greta_kernel
    from cepopt.executor.trend_inputs import FIRST_LANES, exact_run, kernel_state

    lay = inp.layout
    cls = lay.cls
    greta = set(compiled.greta_queries)
    alone = np.array([i for i, cq in enumerate(cls.queries) if cq.name in greta], dtype=np.int64)
    run = np.array([i for i, cq in enumerate(cls.queries) if cq.name not in greta], dtype=np.int64)
    blk = block_table(cls, compiled.plan, list(run), lay.type_names)
    binfo, bqs, in_ptr, in_v, out_ptr, out_v, ntuples, nb = blk
    window_of = np.repeat(lay.scope_window, np.diff(lay.scope_start))
    live = np.zeros((len(cls.queries), lay.n), dtype=bool)
    for q in run:  # the row lies before its query's window end (int64, not through a float)
        live[q] = before_window_end(lay.ts, window_of, cls.slide, cls.queries[q].length)
    ties = np.diff(np.flatnonzero(np.r_[lay.tie == np.arange(lay.n), True])) if lay.n else np.zeros(0, int)
    batch = int(ties.max(initial=1))
    maxin = int(np.diff(in_ptr).max(initial=0)) or 1
    rows_max = int(np.diff(lay.scope_start).max(initial=0))
    caps = {"keys": 2 * rows_max + 16}

    def kernel(mods, one, at, out, omm, counters):
        lanes = len(mods)
        if len(alone):
            part = np.zeros(len(COUNTERS), dtype=np.int64)
            greta_kernel(lay.scope_start, inp.ev, inp.qt, at, alone, kernel_state(inp, lanes), mods, one, out, omm,
                         part)
            counters[C_PROP] += part[C_PROP]
        if not len(run):
            return
        base = counters.copy()
        kq = len(run)
        while True:
            cap = caps["keys"]
            buf = (np.zeros((nb, lanes)), np.zeros(nb, np.int64), np.zeros((nb, kq, lanes)),
                   np.zeros((nb, cap), np.int64), np.zeros(nb, np.int64), np.zeros((nb, cap), bool),
                   np.zeros(cap, np.int64), np.zeros(batch, np.int64), np.zeros((batch, maxin), np.int64),
                   np.zeros((batch, maxin), np.int64), np.zeros((batch, maxin, kq, lanes)),
                   np.zeros((batch, kq), bool), np.zeros((batch, kq, lanes)), np.zeros(ntuples, np.int64),
                   np.zeros((kq, lanes)), np.zeros((kq, lanes)), np.zeros(len(lay.type_names), bool))
            counters[:] = base
            status = gloria_kernel(lay.scope_start, inp.ev, inp.qt, (run, live), (binfo, bqs, in_ptr, in_v, out_ptr,
                                   out_v), buf, mods, one, out, counters)
            if status == OK:
                return
            caps["keys"] *= 2

    out, omm, counters, lanes = exact_run(inp, kernel, compiled.lanes.get(index, FIRST_LANES))
    compiled.lanes[index] = lanes
    return out, omm, counters
