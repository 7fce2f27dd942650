"""Sharon shared execution of a sharing plan over one partition (sharon.md §7).

Every query is split by the plan into segments (:meth:`SharonPlan.segments`): each shared pattern is
one segment served by one :class:`~cepopt.executor.aseq.SegmentInstance` for all the queries of its
plan entry (computed once), every gap is a private segment. Segment k+1's START records carry, per
query and open window, the aggregate of the query's matches of Seg_1..Seg_k that end before them
(the boundary map H, §7.4), snapshotted when the START arrives, before any update at its time stamp:

    H^(k)[d][w] = sum over START c of Seg_k with c.time >= wS of H^(k-1)[c][w] (x) Full(c)

with H^(0) = ONE. Window w's result is the same sum over Seg_r at its close. (x) is the product of
the aggregate semiring of §7.2 (counts multiply, sums cross-multiply with counts, min/max combine).
The empty plan gives A-Seq (one private segment per query).

Operation counts (``ops``): "update" = count updates inside instances (one per event x live START
record, one per START event), the quantity Eq. 2/4/7 predict; "combine" = START records read when
snapshotting boundary maps and closing windows (Eq. 5's combination, indexed by window here).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.aseq import (
    _INT64_SAFE,
    Frame,
    PartitionEvents,
    SegmentInstance,
    Target,
    _py,
    acc_targets,
    cells_to_acc,
    combine,
    group_of,
    int_attr_map,
    position_filters,
    query_leaves,
    query_targets,
    query_types,
)
from cepopt.executor.results import AggAccumulator
from cepopt.model import Query

__all__ = ["general_partition", "sharon_partition", "plan_segments"]


def plan_segments(queries: Sequence[Query], plan) -> dict[str, list[tuple[int, int, tuple | None]]]:
    """Per query name, its segments (start, end, instance key) under ``plan``.

    The key of a shared segment is ("shared", pattern, sorted query names of the plan entry); a
    private segment's key is ("private", query name, start). Plan entries naming queries that are not
    in ``queries`` are restricted to the present ones (an entry left with one query is private).
    """
    names = {q.name for q in queries}
    out = {}
    for q in queries:
        types = query_types(q)
        spans = []
        if plan is not None:
            for pattern, qs in plan.shared:
                if q.name not in qs:
                    continue
                members = tuple(sorted(qs & names))
                if len(members) < 2:
                    continue
                start = plan.position(types, pattern)
                spans.append((start, start + len(pattern), ("shared", tuple(pattern), members)))
        spans.sort()
        segs = []
        cur = 0
        for s, e, key in spans:
            if s < cur:
                raise CepoptError(f"plan is invalid: two shared patterns overlap in query {q.name!r}")
            if s > cur:
                segs.append((cur, s, ("private", q.name, cur)))
            segs.append((s, e, key))
            cur = e
        if cur < len(types):
            segs.append((cur, len(types), ("private", q.name, cur)))
        out[q.name] = segs
    return out


def _filter_sig(filters) -> tuple:
    return tuple(sorted((f.attr, f.op, repr(f.value)) for f in filters))


def sharon_partition(queries: Sequence[Query], plan, events: pd.DataFrame, key: dict | None = None
                     ) -> tuple[dict[str, AggAccumulator], dict[str, int]]:
    """Execute ``plan`` (a SharonPlan, or None for Non-Shared) for ``queries`` over one partition.

    ``events``: the partition's events (any order); ``key``: its GROUP-BY/equivalence values.
    Returns per query name an :class:`AggAccumulator` and the operation counts
    {"update": ..., "combine": ...}.
    """
    from cepopt.executor import aseq_fast

    if aseq_fast.eligible(queries):
        # COUNT(*) only: the vectorized kernel, unless int64 could overflow
        try:
            return aseq_fast.fast_partition(queries, plan, events, key)
        except aseq_fast.Fallback:
            pass
    return general_partition(queries, plan, events, key)


def general_partition(queries: Sequence[Query], plan, events: pd.DataFrame, key: dict | None = None
                      ) -> tuple[dict[str, AggAccumulator], dict[str, int]]:
    """The general kernel (every aggregate, Python ints past int64): per instance NumPy state."""
    ev = PartitionEvents(events)
    key = key or {}
    idt = np.int64  # each instance turns to Python ints when its count bounds say so
    int_attrs = int_attr_map(queries, ev)
    by_name = {q.name: q for q in queries}
    segs = plan_segments(queries, plan)
    frames = {q.name: Frame.of(q, ev) for q in queries}

    # ---- instances: one per distinct segment key; targets merged across the queries using it
    inst_spec: dict[tuple, dict] = {}
    q_tids: dict[str, list[list[int]]] = {}
    for q in queries:
        types, leaves = query_types(q), query_leaves(q)
        pf = position_filters(q)
        tids_q = []
        for s, e, k in segs[q.name]:
            spec = inst_spec.get(k)
            sig = [_filter_sig(f) for f in pf[s:e]]
            if spec is None:
                spec = {"types": types[s:e], "filters": pf[s:e], "sig": sig, "targets": [],
                        "window": q.window, "frame": frames[q.name], "queries": []}
                inst_spec[k] = spec
            elif spec["sig"] != sig:
                raise CepoptError(f"queries sharing {','.join(types[s:e])} have different filters on it")
            elif spec["window"] != q.window:
                raise CepoptError(f"queries sharing {','.join(types[s:e])} have different windows")
            spec["queries"].append(q.name)
            tl = []
            for ref, attr in query_targets(q):
                tgt = Target(frozenset(j - s for j in range(s, e) if ref in (leaves[j].var, leaves[j].name)),
                             attr)
                if tgt not in spec["targets"]:
                    spec["targets"].append(tgt)
                tl.append(spec["targets"].index(tgt))
            tids_q.append(tl)
        q_tids[q.name] = tids_q
    insts = {k: SegmentInstance(sp["types"], sp["filters"], sp["targets"], sp["frame"], ev, idt)
             for k, sp in inst_spec.items()}

    # ---- boundary maps H^(k) of query q live in the instance of its segment k+1
    for q in queries:
        chain = segs[q.name]
        dts = [np.float64 if attr is not None and not int_attrs.get(attr, False) else idt
               for _, attr in query_targets(q)]
        for k in range(1, len(chain)):
            insts[chain[k][2]].attach((q.name, k), len(dts), dts)

    # |sum| <= count * qscale for every integer target of the query
    qscale = {}
    for q in queries:
        top = 1
        for _, attr in query_targets(q):
            if attr is not None and int_attrs.get(attr, False) and len(ev):
                top = max(top, int(np.abs(ev.numeric(attr)).max()))
        qscale[q.name] = len(query_types(q)) * top
    #: upper bound of the counts stored in each boundary map (Python ints)
    att_ub: dict[tuple, int] = {}
    accs = {q.name: AggAccumulator(q) for q in queries}
    groups = {q.name: group_of(q, key) for q in queries}
    next_k = {q.name: 0 for q in queries}
    ops = {"update": 0, "combine": 0}

    cache: dict[tuple, object] = {}

    def boundary(qname: str, k: int, w: int):
        """Sum over Seg_k START rows (time >= start of w) of H^(k-1) (x) Full: (cnt, per)."""
        chain = segs[qname]
        ik = chain[k - 1][2]
        tids = q_tids[qname][k - 1]
        if k == 1:
            # H^(0) = ONE: the sum depends only on the instance, targets and window, so queries whose
            # first segment is one shared instance read it once per batch (spec §7.4)
            ckey = (ik, tuple(tids), w)
            if ckey in cache:
                return cache[ckey]
        inst = insts[ik]
        frame = frames[qname]
        rows = inst.rows_from(frame.start(w))
        if rows.start >= rows.stop:
            res = None
        else:
            ops["combine"] += rows.stop - rows.start
            prev = inst.attachments[(qname, k - 1)] if k > 1 else None
            res = combine(inst, rows, tids, prev, w % frame.slots, att_ub.get((qname, k - 1), 1),
                          qscale[qname])
        if k == 1:
            cache[ckey] = res
        return res

    def close(qname: str, limit_k: int) -> None:
        """Close windows next_k..limit_k of query qname."""
        chain = segs[qname]
        last = insts[chain[-1][2]]
        frame = frames[qname]
        first = next_k[qname]
        if last.n > last.head:
            first = max(first, frame.k_lo(int(last.time[last.head])))
            for w in range(first, limit_k + 1):
                res = boundary(qname, len(chain), w)
                if res is None:
                    break
                cnt, per = res
                cnt = _py(cnt)
                if cnt:
                    q = by_name[qname]
                    cells_to_acc(accs[qname], groups[qname], w, cnt, acc_targets(q, per, int_attrs))
        next_k[qname] = max(next_k[qname], limit_k + 1)

    def expire() -> None:
        for k, sp in inst_spec.items():
            frame = sp["frame"]
            oldest = min(next_k[n] for n in sp["queries"])
            insts[k].expire_before(frame.start(oldest))

    # which (query, boundary) snapshots each instance's STARTs need
    snap_for: dict[tuple, list[tuple[str, int]]] = {k: [] for k in insts}
    for q in queries:
        chain = segs[q.name]
        for k in range(1, len(chain)):
            snap_for[chain[k][2]].append((q.name, k))

    # queries grouped by window frame: windows close for all of them at the same time stamps
    frame_groups: dict[tuple, list[str]] = {}
    for q in queries:
        f = frames[q.name]
        frame_groups.setdefault((f.length, f.slide, f.offset), []).append(q.name)
    close_at = {fk: frames[names[0]].end(0) for fk, names in frame_groups.items()}
    by_batch: dict[int, list[tuple]] = {}
    for ik, inst in insts.items():
        for b in inst.active_batches:
            by_batch.setdefault(b, []).append(ik)
    for b in sorted(by_batch):
        t = int(ev.batch_ts[b])
        active = by_batch[b]
        cache.clear()
        # 1. close the windows that end at or before t
        closed = False
        for fk, names in frame_groups.items():
            if t < close_at[fk]:
                continue
            frame = frames[names[0]]
            limit = frame.k_lo(t) - 1
            for qname in names:
                if limit >= next_k[qname]:
                    close(qname, limit)
            close_at[fk] = frame.end(limit + 1)
            closed = True
        if closed:
            expire()
            cache.clear()
        # 2. snapshots for the new START records of boundary segments (state before time t)
        pending: dict[tuple, list] = {}
        starting = [ik for ik in active if b in insts[ik].start_batches]
        for ik in starting:
            for qname, k in snap_for[ik]:
                frame = frames[qname]
                vals = []
                for w in range(frame.k_lo(t), frame.k_hi(t) + 1):
                    res = boundary(qname, k, w)
                    if res is not None:
                        vals.append((w, res))
                pending[(ik, qname, k)] = vals
        # 3. updates of every instance active at t, each once
        for ik in active:
            insts[ik].update(b)
        # 4. new START records and their boundary maps
        for ik in starting:
            inst = insts[ik]
            r = inst.add_start(b)
            for qname, k in snap_for[ik]:
                arrs = inst.attachments[(qname, k)]
                arrs[0][r] = 0
                for i in range(1, len(arrs), 3):
                    arrs[i][r] = 0
                    arrs[i + 1][r] = np.inf
                    arrs[i + 2][r] = -np.inf
                m = frames[qname].slots
                vals = pending[(ik, qname, k)]
                top = max([att_ub.get((qname, k), 0)] + [int(c) for _, (c, _) in vals])
                att_ub[(qname, k)] = top
                if top * qscale[qname] >= _INT64_SAFE and arrs[0].dtype != object:
                    # this map's counts or sums could leave int64: Python ints from now on
                    arrs = [a.astype(object) if a.dtype.kind in "iu" else a for a in arrs]
                    inst.attachments[(qname, k)] = arrs
                for w, (cnt, per) in vals:
                    slot = w % m
                    arrs[0][r, slot] = cnt
                    for i, (s, lo, hi) in enumerate(per):
                        arrs[1 + 3 * i][r, slot] = s
                        arrs[2 + 3 * i][r, slot] = lo
                        arrs[3 + 3 * i][r, slot] = hi
    # flush: close every remaining window (the last batch's cached reads predate its updates)
    cache.clear()
    for q in queries:
        last = insts[segs[q.name][-1][2]]
        if last.n > last.head:
            close(q.name, frames[q.name].k_hi(int(last.time[last.n - 1])))
    ops["update"] += sum(i.ops_update for i in insts.values())
    return accs, ops
