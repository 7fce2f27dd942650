"""Vectorized Sharon / A-Seq kernel for COUNT(*) workloads (sharon.md §7.3-7.4, same semantics and
operation counts as :mod:`cepopt.executor.sharon_kernel`).

All segment instances of a partition live in one int64 matrix ``cnt[row, col]``: one row per
(instance, level), one column per START batch (a ring of the batches that can still be in an open
window). A batch at time t is applied to every instance at once:

    cnt[rows_t, :] += k[rows_t] * cnt[rows_t - 1, :]

(fancy indexing reads the old state, so an event never extends a match at its own time stamp), then
the START columns of t are written. The boundary maps of all (query, boundary) pairs live in
``H[pair, col, slot]``; a snapshot for the pairs whose next segment starts at t is one product of
the Full rows with the window masks, and a window close is one masked row sum per query. The Python
work is per batch, not per instance, per START record or per segment, so the time follows the count
updates and combinations the cost model counts.

Exactness: the kernel keeps float upper bounds of every row and map; when one could leave int64
(``aseq._INT64_SAFE``) it raises :class:`Fallback` and the caller reruns the partition with the
general kernel, which switches to Python ints. Queries whose aggregates need per-target sums,
min or max (anything but COUNT(*)) also use the general kernel (:func:`eligible`).

Operation counts: "update" = k x live START records per (instance, level, batch) with events, plus
the START events; "combine" = START records read per (boundary pair or closing query, window), a
query's first segment read once per (instance, window, batch) as in the general kernel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from cepopt.executor import aseq as _aseq
from cepopt.executor.aseq import Frame, PartitionEvents, group_of, position_filters, query_targets, query_types
from cepopt.executor.results import AggAccumulator
from cepopt.model import Query

__all__ = ["Fallback", "eligible", "fast_partition"]

_SENT = np.iinfo(np.int64).min // 4


class Fallback(Exception):
    """The partition needs the general kernel (counts could leave int64)."""


def eligible(queries: Sequence[Query]) -> bool:
    """True when every query only asks COUNT(*) (no per-target state)."""
    return all(not query_targets(q) for q in queries)


def _filter_sig(filters) -> tuple:
    return tuple(sorted((f.attr, f.op, repr(f.value)) for f in filters))


_CACHE: dict[tuple, tuple] = {}


def _static(queries: Sequence[Query], plan) -> dict:
    """The partition-independent structure of (queries, plan): instances, rows, boundary pairs."""
    ck = (tuple(id(q) for q in queries), id(plan))
    hit = _CACHE.get(ck)
    if hit is not None:
        return hit[2]
    from cepopt.errors import CepoptError
    from cepopt.executor.sharon_kernel import plan_segments

    segs = plan_segments(queries, plan)
    inst_ids: dict[tuple, int] = {}
    inst_spec: list[dict] = []
    for q in queries:
        types = query_types(q)
        pf = position_filters(q)
        for s, e, k in segs[q.name]:
            sig = [_filter_sig(f) for f in pf[s:e]]
            if k not in inst_ids:
                inst_ids[k] = len(inst_spec)
                inst_spec.append({"types": types[s:e], "filters": pf[s:e], "sig": sig, "window": q.window})
            spec = inst_spec[inst_ids[k]]
            if spec["sig"] != sig:
                raise CepoptError(f"queries sharing {','.join(types[s:e])} have different filters on it")
            if spec["window"] != q.window:
                raise CepoptError(f"queries sharing {','.join(types[s:e])} have different windows")
    n_inst = len(inst_spec)
    base = np.zeros(n_inst + 1, dtype=np.int64)
    for i, sp in enumerate(inst_spec):
        base[i + 1] = base[i] + len(sp["types"])
    levels: dict[tuple, tuple[list, list]] = {}
    for i, sp in enumerate(inst_spec):
        for j, (t, f) in enumerate(zip(sp["types"], sp["filters"], strict=True)):
            lk = (t, tuple(f))
            levels.setdefault(lk, ([], []))[0 if j == 0 else 1].append(int(base[i] + j))
    levels = {lk: (np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)) for lk, (a, b) in levels.items()}
    wids: dict = {}
    frame_queries: list[Query] = []
    pair_full, pair_prev, pair_seginst, pair_start, pair_frame = [], [], [], [], []
    q_last_row, q_last_pair, q_last_inst, q_fid = [], [], [], []
    for q in queries:
        if q.window not in wids:
            wids[q.window] = len(frame_queries)
            frame_queries.append(q)
        fid = wids[q.window]
        chain = [inst_ids[k] for _, _, k in segs[q.name]]
        prev = -1
        for k in range(1, len(chain)):
            pair_full.append(int(base[chain[k - 1] + 1] - 1))
            pair_prev.append(prev)
            pair_seginst.append(chain[k - 1])
            pair_start.append(chain[k])
            pair_frame.append(fid)
            prev = len(pair_full) - 1
        q_last_row.append(int(base[chain[-1] + 1] - 1))
        q_last_pair.append(prev)
        q_last_inst.append(chain[-1])
        q_fid.append(fid)
    arr = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    q_fid = arr(q_fid)
    pairs_of_inst: list[list[int]] = [[] for _ in range(n_inst)]
    for p, i in enumerate(pair_start):
        pairs_of_inst[i].append(p)
    fg_q = [np.flatnonzero(q_fid == g) for g in range(len(frame_queries))]
    fg_inst = [arr(sorted({inst_ids[k] for qi in fg_q[g].tolist() for _, _, k in segs[queries[qi].name]}))
               for g in range(len(frame_queries))]
    st = {"names": [q.name for q in queries], "frame_queries": frame_queries, "n_inst": n_inst,
          "n_rows": int(base[-1]), "n_pairs": len(pair_full),
          "inst_of_row": np.repeat(np.arange(n_inst), np.diff(base)), "levels": levels,
          "pair_full": arr(pair_full), "pair_prev": arr(pair_prev), "pair_seginst": arr(pair_seginst),
          "pair_frame": arr(pair_frame), "q_last_row": arr(q_last_row), "q_last_pair": arr(q_last_pair),
          "q_last_inst": arr(q_last_inst), "fg_q": fg_q, "fg_inst": fg_inst,
          "pairs_of_inst": [arr(x) for x in pairs_of_inst],
          "n_pairs_of_inst": arr([len(x) for x in pairs_of_inst])}
    if len(_CACHE) > 16:
        _CACHE.clear()
    # the key objects stay referenced, so their ids cannot be reused while the entry lives
    _CACHE[ck] = (list(queries), plan, st)
    return st


def fast_partition(queries: Sequence[Query], plan, events, key: dict | None = None):
    """Like :func:`cepopt.executor.sharon_kernel.sharon_partition` for COUNT(*) queries; raises
    :class:`Fallback` when int64 could overflow."""
    safe = float(_aseq._INT64_SAFE)
    ev = events if isinstance(events, PartitionEvents) else PartitionEvents(events)
    key = key or {}
    st = _static(queries, plan)
    names = st["names"]
    accs = {q.name: AggAccumulator(q) for q in queries}
    groups = {q.name: group_of(q, key) for q in queries}
    ops = {"update": 0, "combine": 0}
    # frames: one per distinct window (a window without SLIDE depends on the partition's span)
    flist = [Frame.of(q, ev) for q in st["frame_queries"]]
    n_inst, n_rows, n_pairs = st["n_inst"], st["n_rows"], st["n_pairs"]
    inst_of_row = st["inst_of_row"]
    pair_full, pair_prev, pair_seginst, pair_frame = (st["pair_full"], st["pair_prev"], st["pair_seginst"],
                                                       st["pair_frame"])
    q_last_row, q_last_pair, q_last_inst = st["q_last_row"], st["q_last_pair"], st["q_last_inst"]
    fg_q, fg_inst, pairs_of_inst = st["fg_q"], st["fg_inst"], st["pairs_of_inst"]

    # ---- (row, batch, k) entries: updates (level >= 2) and STARTs (level 1), one level() per type
    u_row, u_b, u_k, s_row, s_b, s_k = [], [], [], [], [], []
    for (t, f), (rows0, rows1) in st["levels"].items():
        _, ub, _, counts, _ = ev.level(t, f, 0)
        if not len(ub):
            continue
        for rows, R, B, K in ((rows0, s_row, s_b, s_k), (rows1, u_row, u_b, u_k)):
            if len(rows):
                R.append(np.repeat(rows, len(ub)))
                B.append(np.tile(ub, len(rows)))
                K.append(np.tile(counts, len(rows)))

    def cat(parts):
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    u_row, u_b, u_k, s_row, s_b, s_k = map(cat, (u_row, u_b, u_k, s_row, s_b, s_k))
    active = np.unique(np.concatenate([u_b, s_b]))
    if not len(active):
        return accs, ops
    a_ts = ev.batch_ts[active].astype(np.int64)

    def by_batch(b, *arrs):
        order = np.argsort(b, kind="stable")
        bo = b[order]
        ptr = np.searchsorted(bo, active, side="left")
        end = np.searchsorted(bo, active, side="right")
        return ptr.tolist(), end.tolist(), [a[order] for a in arrs]

    u_ptr, u_end, (u_row, u_k) = by_batch(u_b, u_row, u_k)
    u_prev = u_row - 1
    u_inst = inst_of_row[u_row]
    s_ptr, s_end, (s_row, s_k) = by_batch(s_b, s_row, s_k)
    s_inst = inst_of_row[s_row]
    n_active = len(active)
    # pairs whose Seg_{k+1} starts at each batch
    p_lists: list[np.ndarray | None] = [None] * n_active
    if n_pairs and len(s_inst):
        npi = st["n_pairs_of_inst"][s_inst]
        sel = npi > 0
        if sel.any():
            s_ord = np.repeat(np.arange(n_active), np.asarray(s_end) - np.asarray(s_ptr))[sel]
            pb = np.repeat(s_ord, npi[sel])
            pp = np.concatenate([pairs_of_inst[i] for i in s_inst[sel].tolist()])
            cuts = np.searchsorted(pb, np.arange(n_active + 1))
            for o in np.unique(pb).tolist():
                p_lists[o] = pp[cuts[o]:cuts[o + 1]]

    # ---- ring of START columns
    span = max(int(math.ceil(f.length)) for f in flist) + 1
    lo = np.searchsorted(a_ts, a_ts - span, side="left")
    cap = int((np.arange(n_active) - lo).max()) + 2
    cap = min(cap, n_active)
    m = max(f.slots for f in flist)
    cnt = np.zeros((n_rows, cap), dtype=np.int64)
    H = np.zeros((max(n_pairs, 1), cap, m), dtype=np.int64)
    col_ts = np.full(cap, _SENT, dtype=np.int64)
    # int64, not bool: it enters matrix products (operation counts)
    is_start = np.zeros((n_inst, cap), dtype=np.int64)
    nlive = np.zeros(n_inst, dtype=np.int64)
    ub = np.zeros(n_rows)
    ubH = np.zeros(max(n_pairs, 1))

    next_k = [0] * len(flist)
    close_at = [f.end(0) for f in flist]

    def refresh():
        nonlocal ub, ubH
        ub = cnt.max(axis=1).astype(np.float64)
        if n_pairs:
            ubH = H.max(axis=(1, 2)).astype(np.float64)

    def check(bound) -> None:
        if len(bound) and float(np.max(bound)) >= safe:
            raise Fallback

    def close_group(g: int, limit: int) -> None:
        fr = flist[g]
        valid = col_ts > _SENT
        if valid.any():
            first = max(next_k[g], fr.k_lo(int(col_ts[valid].min())))
            last = min(limit, fr.k_hi(int(col_ts[valid].max())))
            qs = fg_q[g]
            rows = q_last_row[qs]
            lp = q_last_pair[qs]
            has_p = lp >= 0
            lp_h = lp[has_p]
            single = np.unique(q_last_inst[qs][~has_p])
            pair_inst = q_last_inst[qs][has_p]
            for w in range(first, last + 1):
                cols = np.flatnonzero(col_ts >= fr.start(w))
                if not len(cols):
                    break
                nc = len(cols)
                bound = nc * ub[rows] * np.where(has_p, ubH[np.maximum(lp, 0)], 1.0)
                if len(bound) and float(bound.max()) >= safe:
                    refresh()
                    bound = nc * ub[rows] * np.where(has_p, ubH[np.maximum(lp, 0)], 1.0)
                    check(bound)
                F = cnt[rows][:, cols]
                if len(lp_h):
                    F[has_p] *= H[lp_h][:, cols, w % fr.slots]
                res = F.sum(axis=1)
                ops["combine"] += int(is_start[single][:, cols].sum()) + int(is_start[pair_inst][:, cols].sum())
                for qi, c in zip(qs[res > 0].tolist(), res[res > 0].tolist(), strict=True):
                    accs[names[qi]].add(groups[names[qi]], w, int(c), {})
        next_k[g] = max(next_k[g], limit + 1)
        # expiry: live START records of the group's instances are those at or after the oldest open window
        insts = fg_inst[g]
        nlive[insts] = is_start[insts] @ (col_ts >= fr.start(next_k[g])).astype(np.int64)

    M = np.zeros((cap, m), dtype=np.int64)
    for o in range(n_active):
        t = int(a_ts[o])
        # 1. close windows that end at or before t
        for g, fr in enumerate(flist):
            if t < close_at[g]:
                continue
            limit = fr.k_lo(t) - 1
            if limit >= next_k[g]:
                close_group(g, limit)
            close_at[g] = fr.end(limit + 1)
        col = o % cap
        # the column's previous batch is outside every open window: reuse it
        if col_ts[col] != _SENT:
            cnt[:, col] = 0
            if n_pairs:
                H[:, col, :] = 0
            is_start[:, col] = 0
            col_ts[col] = _SENT
        # 2. boundary snapshots for pairs whose next segment starts at t (state before t)
        P = p_lists[o]
        if P is not None:
            for g, fr in enumerate(flist):
                Pg = P if len(flist) == 1 else P[pair_frame[P] == g]
                if not len(Pg):
                    continue
                M[:] = 0
                k0 = fr.k_lo(t)
                for w in range(k0, fr.k_hi(t) + 1):
                    M[:, w % fr.slots] = col_ts >= fr.start(w)
                # the first window holds every column the later ones hold
                ncols = int(M[:, k0 % fr.slots].sum())
                cw = M.sum(axis=1)
                prev = pair_prev[Pg]
                hp = prev >= 0
                bound = ncols * ub[pair_full[Pg]] * np.where(hp, ubH[np.maximum(prev, 0)], 1.0)
                if len(bound) and float(bound.max()) >= safe:
                    refresh()
                    bound = ncols * ub[pair_full[Pg]] * np.where(hp, ubH[np.maximum(prev, 0)], 1.0)
                    check(bound)
                F = cnt[pair_full[Pg]]
                val = np.empty((len(Pg), m), dtype=np.int64)
                if (~hp).any():
                    val[~hp] = F[~hp] @ M
                    # a first segment is read once per (instance, window) per batch
                    ops["combine"] += int(is_start[np.unique(pair_seginst[Pg][~hp])].sum(axis=0) @ cw)
                if hp.any():
                    val[hp] = np.einsum("pc,pcs,cs->ps", F[hp], H[prev[hp]], M)
                    ops["combine"] += int(is_start[pair_seginst[Pg][hp]].sum(axis=0) @ cw)
                H[Pg, col, :] = val
                ubH[Pg] = np.maximum(ubH[Pg], bound)
        # 3. updates of every instance active at t
        a, e = u_ptr[o], u_end[o]
        if e > a:
            rows, k, prv = u_row[a:e], u_k[a:e], u_prev[a:e]
            cnt[rows] += k[:, None] * cnt[prv]
            ops["update"] += int((k * nlive[u_inst[a:e]]).sum())
            nb = ub[rows] + k * ub[prv]
            if float(nb.max()) >= safe:
                refresh()
                nb = ub[rows] + k * ub[prv]
                check(nb)
            ub[rows] = nb
        # 4. new START records
        a, e = s_ptr[o], s_end[o]
        if e > a:
            rows, k, insts = s_row[a:e], s_k[a:e], s_inst[a:e]
            col_ts[col] = t
            cnt[rows, col] = k
            is_start[insts, col] = 1
            nlive[insts] += 1
            ops["update"] += int(k.sum())
            ub[rows] = np.maximum(ub[rows], k)
    # flush: close every remaining window
    for g, fr in enumerate(flist):
        valid = col_ts > _SENT
        if valid.any():
            close_group(g, fr.k_hi(int(col_ts[valid].max())))
    return accs, ops
