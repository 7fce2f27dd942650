"""Sharon shared execution of a sharing plan over one partition (sharon.md §7); the empty plan is A-Seq.

Every query is split by the plan into segments (:func:`plan_segments`): each shared pattern is one
segment served by one instance for all the queries of its plan entry (computed once), every gap is a
private segment. An instance keeps, per START record (a time stamp with events of its first
position), the aggregates of its partial matches per prefix; segment k+1's START records carry, per
query and open window, the aggregate of the query's matches of Seg_1..Seg_k that end before them
(the boundary map H, §7.4), snapshotted when the START arrives, before any update at its time stamp:

    H^(k)[d][w] = sum over START c of Seg_k with c.time >= start(w) of H^(k-1)[c][w] (x) Full(c)

with H^(0) = ONE; window w's result is the same sum over Seg_r at its close. (x) is the product of the
aggregate semiring of §7.2 (counts multiply, sums cross-multiply with counts, min/max combine).

:func:`compile_plan` builds the plan's tables once; :func:`run_partition` prepares a partition's rows
(:mod:`cepopt.executor.aseq`) and runs the loops of :mod:`cepopt.executor.sharon_loops`, compiled by
numba unless the partition is tiny (``jit``), in int64 modulo 2^64, then, when the count totals say
a value may leave int64, modulo as many primes below 2^31 as that bound needs, joined by the Chinese
remainder theorem: counts and sums are exact at any size.

Operation counts (``ops``): "update" = count updates inside instances (k x live START records per
level >= 2 and batch with k events of that level, k per START event), the quantity Eq. 2/4/7 predict;
"combine" = START records read when snapshotting boundary maps and closing windows (Eq. 5's
combination, indexed by window here); a query's first segment is read once per instance, window and
time stamp for all the queries it starts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor import sharon_loops as loops
from cepopt.executor.aseq import (
    INT64_SAFE_LOG2,
    LevelKey,
    SumScale,
    crt,
    partition_rows,
    position_filters,
    primes,
    primes_for,
    query_leaves,
    query_types,
    row_sums_mod,
    time_scale,
)
from cepopt.executor.results import AggAccumulator, aggregate_label, format_group, group_attrs
from cepopt.model import Query, Window

__all__ = ["JIT_WORK", "KernelPlan", "PartitionResult", "compile_plan", "plan_segments", "run_partition",
           "sharon_partition"]

#: partitions whose work estimate (events x instance levels) is below this run the loops uncompiled:
#: loading the compiled kernel costs about a second per process
JIT_WORK = 50_000


def plan_segments(queries: Sequence[Query], plan) -> dict[str, list[tuple[int, int, tuple]]]:
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
        for pattern, qs in (plan.shared if plan is not None else ()):
            members = tuple(sorted(qs & names))
            if q.name in qs and len(members) >= 2:
                start = plan.position(types, pattern)
                spans.append((start, start + len(pattern), ("shared", tuple(pattern), members)))
        spans.sort()
        segs: list[tuple[int, int, tuple]] = []
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


# ---------------------------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryOut:
    """How a query's aggregates read the kernel's record: per aggregate (label, func, target index)."""

    aggs: tuple[tuple[str, str, int, int], ...]  # (label, func, sum/min-max target, AVG count target)
    #: per query sum target: (attribute index or -1, number of its levels in the pattern)
    sums: tuple[tuple[int, int], ...]
    #: per min/max target: attribute index
    mms: tuple[int, ...]
    #: the level key of every pattern position (a bound of the counts)
    lks: tuple[int, ...]


def _query_targets(q: Query) -> tuple[list, list, list]:
    """(sum targets, min/max targets, aggregate layout): targets are (levels, attr) pairs."""
    leaves = query_leaves(q)
    sums: list[tuple] = []
    mms: list[tuple] = []
    aggs = []

    def idx(lst, t):
        if t not in lst:
            lst.append(t)
        return lst.index(t)

    for a in q.aggregates:
        label = aggregate_label(a)
        if a.ref is None:
            aggs.append((label, "COUNT*", -1, -1))
            continue
        levels = frozenset(j for j, leaf in enumerate(leaves) if a.ref in (leaf.var, leaf.name))
        if a.func == "COUNT":
            aggs.append((label, "COUNT", idx(sums, (levels, None)), -1))
        elif a.func == "SUM":
            aggs.append((label, "SUM", idx(sums, (levels, a.attr)), -1))
        elif a.func == "AVG":
            aggs.append((label, "AVG", idx(sums, (levels, a.attr)), idx(sums, (levels, None))))
        else:
            aggs.append((label, a.func, idx(mms, (levels, a.attr)), -1))
    return sums, mms, aggs


class _Builder:
    """Instances, level keys, targets and boundaries of (queries, plan), then the Static tables."""

    def __init__(self, queries: Sequence[Query], plan):
        self.queries = list(queries)
        self.segs = plan_segments(queries, plan)
        self.lks: dict[tuple, int] = {}
        self.lk_list: list[LevelKey] = []
        self.frames: list[Window] = []
        self.inst: dict[tuple, int] = {}
        self.inst_lks: list[list[int]] = []
        self.inst_frame: list[int] = []
        self.inst_sig: list[tuple] = []
        self.inst_st: list[list[tuple]] = []  # per instance its sum targets (levels, attr)
        self.inst_mt: list[list[tuple]] = []
        self.inst_mm: list[bool] = []
        self.sum_attrs: list[str] = []
        self.mm_attrs: list[str] = []
        self.q_segs: list[list[int]] = []
        self.q_st: list[list[list[int]]] = []  # per query, per sum target, per segment: local target or -1
        self.q_mt: list[list[list[int]]] = []
        self.outs: list[QueryOut] = []

    def _lk(self, lk: LevelKey) -> int:
        if lk.sig not in self.lks:
            self.lks[lk.sig] = len(self.lk_list)
            self.lk_list.append(lk)
        return self.lks[lk.sig]

    def _frame(self, w: Window) -> int:
        if w not in self.frames:
            self.frames.append(w)
        return self.frames.index(w)

    def _instance(self, q: Query, key: tuple, lk_ids: list[int], types: Sequence[str]) -> int:
        frame = self._frame(q.window)
        sig = tuple(self.lk_list[x].sig for x in lk_ids)
        i = self.inst.get(key)
        if i is None:
            i = self.inst[key] = len(self.inst_lks)
            self.inst_lks.append(lk_ids)
            self.inst_frame.append(frame)
            self.inst_sig.append(sig)
            self.inst_st.append([])
            self.inst_mt.append([])
            self.inst_mm.append(False)
        elif self.inst_sig[i] != sig:
            raise CepoptError(f"queries sharing {','.join(types)} have different filters on it")
        elif self.inst_frame[i] != frame:
            raise CepoptError(f"queries sharing {','.join(types)} have different windows")
        return i

    @staticmethod
    def _local(targets: list, levels: frozenset, attr, s: int, e: int) -> int:
        loc = frozenset(j - s for j in levels if s <= j < e)
        if not loc:
            return -1
        if (loc, attr) not in targets:
            targets.append((loc, attr))
        return targets.index((loc, attr))

    def _attr(self, lst: list[str], attr) -> int:
        if attr is None:
            return -1
        if attr not in lst:
            lst.append(attr)
        return lst.index(attr)

    def add_query(self, q: Query) -> None:
        types, pf = query_types(q), position_filters(q)
        lk_ids = [self._lk(LevelKey(t, f)) for t, f in zip(types, pf, strict=True)]
        sums, mms, aggs = _query_targets(q)
        chain = [self._instance(q, key, lk_ids[s:e], types[s:e]) for s, e, key in self.segs[q.name]]
        self.q_segs.append(chain)
        self.q_st.append([[self._local(self.inst_st[i], lv, a, s, e)
                           for (s, e, _), i in zip(self.segs[q.name], chain, strict=True)] for lv, a in sums])
        self.q_mt.append([[self._local(self.inst_mt[i], lv, a, s, e)
                           for (s, e, _), i in zip(self.segs[q.name], chain, strict=True)] for lv, a in mms])
        if mms:
            for i in chain:
                self.inst_mm[i] = True
        self.outs.append(QueryOut(tuple(aggs), tuple((self._attr(self.sum_attrs, a), len(lv)) for lv, a in sums),
                                  tuple(self._attr(self.mm_attrs, a) for _, a in mms), tuple(lk_ids)))

    # ------------------------------------------------------------------ tables
    def _instance_tables(self) -> dict[str, np.ndarray]:
        hs = [len(x) for x in self.inst_lks]
        maxh = max(hs, default=1)
        il_off = np.concatenate(([0], np.cumsum(hs))).astype(np.int64)
        il_lk = np.asarray([x for lks in self.inst_lks for x in lks], dtype=np.int64)
        il_inst = np.repeat(np.arange(len(hs)), hs).astype(np.int64)
        il_j = np.concatenate([np.arange(h) for h in hs]).astype(np.int64) if hs else np.zeros(0, np.int64)
        nlk = len(self.lk_list)
        upd = [sorted((il for il in range(len(il_lk)) if il_lk[il] == lk and il_j[il] >= 1),
                      key=lambda il: -il_j[il]) for lk in range(nlk)]
        st = [[i for i, lks in enumerate(self.inst_lks) if lks[0] == lk] for lk in range(nlk)]

        def targets(per_inst: list[list[tuple]], attrs: list[str]):
            ptr = np.concatenate(([0], np.cumsum([len(t) for t in per_inst]))).astype(np.int64)
            flat = [t for ts in per_inst for t in ts]
            attr = np.asarray([self._attr(attrs, a) for _, a in flat], dtype=np.int64)
            lv = np.zeros((len(flat), maxh), dtype=np.int64)
            for g, (levels, _) in enumerate(flat):
                lv[g, sorted(levels)] = 1
            return ptr, attr, lv

        ist_ptr, ist_attr, ist_lv = targets(self.inst_st, self.sum_attrs)
        imt_ptr, imt_attr, imt_lv = targets(self.inst_mt, self.mm_attrs)
        return dict(il_off=il_off, il_lk=il_lk, il_inst=il_inst, il_j=il_j, **_csr("lk_il", upd), **_csr("lk_st", st),
                    inst_frame=np.asarray(self.inst_frame, dtype=np.int64),
                    inst_mm=np.asarray(self.inst_mm, dtype=np.int64), ist_ptr=ist_ptr, ist_attr=ist_attr,
                    ist_lv=ist_lv, imt_ptr=imt_ptr, imt_attr=imt_attr, imt_lv=imt_lv)

    def _query_tables(self, ist_ptr: np.ndarray, imt_ptr: np.ndarray) -> dict[str, np.ndarray]:
        maxr = max((len(c) for c in self.q_segs), default=1)

        def maps(per_q: list, ptr: np.ndarray):
            rows = []
            for chain, tl in zip(self.q_segs, per_q, strict=True):
                for loc in tl:
                    rows.append([ptr[i] + x if x >= 0 else -1 for i, x in zip(chain, loc, strict=True)]
                                + [-1] * (maxr - len(chain)))
            qptr = np.concatenate(([0], np.cumsum([len(t) for t in per_q]))).astype(np.int64)
            return qptr, np.asarray(rows, dtype=np.int64).reshape(len(rows), maxr)

        qst_ptr, qst_map = maps(self.q_st, ist_ptr)
        qmt_ptr, qmt_map = maps(self.q_mt, imt_ptr)
        pairs: list[tuple] = []  # (q, k, seg, next, prev, direct)
        q_direct, q_last = [], []
        for qi, chain in enumerate(self.q_segs):
            direct = len(chain) > 1 and len(self.inst_lks[chain[-1]]) == 1
            prev = -1
            for k in range(1, len(chain)):
                pairs.append((qi, k, chain[k - 1], chain[k], prev, int(direct and k == len(chain) - 1)))
                prev = len(pairs) - 1
            q_direct.append(int(direct))
            q_last.append(prev)
        cols = np.asarray(pairs, dtype=np.int64).reshape(len(pairs), 6)
        ni = len(self.inst_lks)
        by_next = [[p for p, row in enumerate(pairs) if row[3] == i] for i in range(ni)]
        q_frame = [self.inst_frame[c[0]] for c in self.q_segs]
        by_frame = [[q for q, f in enumerate(q_frame) if f == x] for x in range(len(self.frames))]
        # sinks: one event type, only ever the last segment of queries with several (their results are
        # made at the snapshots, so their START records are never read)
        sink = [int(len(self.inst_lks[i]) == 1 and all(row[3] != i or row[5] for row in pairs)
                    and all(row[2] != i for row in pairs) and all(c[-1] != i or len(c) > 1 for c in self.q_segs))
                for i in range(ni)]
        return dict(q_frame=np.asarray(q_frame, dtype=np.int64), **_csr("q_seg", self.q_segs),
                    inst_sink=np.asarray(sink, dtype=np.int64),
                    qst_ptr=qst_ptr, qst_map=qst_map, qmt_ptr=qmt_ptr, qmt_map=qmt_map,
                    q_direct=np.asarray(q_direct, dtype=np.int64), q_last_pair=np.asarray(q_last, dtype=np.int64),
                    p_q=cols[:, 0].copy(), p_k=cols[:, 1].copy(), p_seg=cols[:, 2].copy(), p_next=cols[:, 3].copy(),
                    p_prev=cols[:, 4].copy(), p_direct=cols[:, 5].copy(), **_csr("inst_pair", by_next),
                    **_csr("f_q", by_frame))

    def tables(self) -> dict[str, np.ndarray]:
        tables = self._instance_tables()
        tables.update(self._query_tables(tables["ist_ptr"], tables["imt_ptr"]))
        tables.update(self._sink_tables(tables))
        return tables

    def _sink_tables(self, t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per level key: the instances it starts that keep records, the boundaries into sinks it starts,
        one representative sink per frame (its START counters stand for all) and the number of sinks."""
        nlk, sink = len(self.lk_list), t["inst_sink"]
        first = [lks[0] for lks in self.inst_lks]
        st = [[i for i, lk in enumerate(first) if lk == x and not sink[i]] for x in range(nlk)]
        # boundaries into sinks: COUNT(*) queries reading their first segment go in groups of one first
        # segment and frame (one read, then a product per query); the others one by one
        plain = [not self.outs[q].sums and not self.outs[q].mms for q in range(len(self.outs))]
        into = [p for p in range(len(t["p_q"])) if sink[t["p_next"][p]]]
        grouped = [p for p in into if t["p_prev"][p] < 0 and plain[t["p_q"][p]]]
        sp = [[p for p in into if p not in grouped and first[t["p_next"][p]] == x] for x in range(nlk)]
        groups: dict[tuple, list[int]] = {}
        for p in grouped:
            groups.setdefault((first[t["p_next"][p]], t["p_seg"][p], self.inst_frame[t["p_seg"][p]]), []).append(
                int(t["p_q"][p]))
        keys = sorted(groups)
        lk_sg_ptr = np.searchsorted([k[0] for k in keys], np.arange(nlk + 1)).astype(np.int64)
        sg = {"lk_sg_ptr": lk_sg_ptr, "sg_seg": np.asarray([k[1] for k in keys], dtype=np.int64),
              "sg_frame": np.asarray([k[2] for k in keys], dtype=np.int64), **_csr("sg_q", [groups[k] for k in keys])}
        sg["sg_ptr"] = sg.pop("sg_q_ptr")
        rep = np.arange(len(first), dtype=np.int64)
        reps: list[list[int]] = [[] for _ in range(nlk)]
        by_key: dict[tuple, int] = {}
        for i in np.flatnonzero(sink).tolist():
            key = (first[i], self.inst_frame[i])
            if key not in by_key:
                by_key[key] = i
                reps[first[i]].append(i)
            rep[i] = by_key[key]
        ns = np.bincount([first[i] for i in np.flatnonzero(sink).tolist()], minlength=nlk).astype(np.int64)
        return {**_csr("lk_st", st), **_csr("lk_sp", sp), **_csr("lk_sr", reps), "lk_ns": ns, "inst_rep": rep, **sg}


def _csr(name: str, lists: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    ptr = np.concatenate(([0], np.cumsum([len(x) for x in lists]))).astype(np.int64)
    flat = np.asarray([x for xs in lists for x in xs], dtype=np.int64)
    return {f"{name}_ptr": ptr, name: flat}


@dataclass(frozen=True)
class KernelPlan:
    """(queries, plan) compiled for the kernel: the loops' static tables and what decodes results."""

    queries: tuple[Query, ...]
    #: the static tables by name, and packed for the loops (:func:`cepopt.executor.sharon_loops.pack`)
    tables: dict[str, np.ndarray]
    static: np.ndarray
    lks: tuple[LevelKey, ...]
    type_names: tuple[str, ...]
    frames: tuple[Window, ...]
    sum_attrs: tuple[str, ...]
    mm_attrs: tuple[str, ...]
    outs: tuple[QueryOut, ...]
    time_scale: int
    #: per (query, aggregate position): function code (index in FUNCS, -1 none), target column, AVG's
    #: count column, attribute index (-1: none)
    agg_func: np.ndarray
    agg_col: np.ndarray
    agg_col2: np.ndarray
    agg_attr: np.ndarray
    #: the queries with sum targets (COUNT(E), SUM, AVG)
    with_sums: tuple[int, ...]


def compile_plan(queries: Sequence[Query], plan) -> KernelPlan:
    """The kernel's tables of ``plan`` (a SharonPlan; None or empty: Non-Shared) for ``queries``.

    Raises CepoptError for an invalid plan, or queries sharing a pattern with different filters or
    windows on it."""
    b = _Builder(queries, plan)
    for q in b.queries:
        b.add_query(q)
    tables = b.tables()
    scalars = {"n_inst": len(b.inst_lks), "n_q": len(b.queries), "n_pair": len(tables["p_q"]),
               "n_lk": len(b.lk_list), "maxh": tables["ist_lv"].shape[1], "maxr": tables["qst_map"].shape[1],
               "n_il": len(tables["il_lk"])}
    static = loops.pack([tables[n] for n in loops.STATIC], [scalars[n] for n in loops.STATIC_SCALARS])
    scale = time_scale([x for w in b.frames if w.slide is not None for x in (w.length, w.slide)])
    return KernelPlan(tuple(b.queries), tables, static, tuple(b.lk_list), tuple(sorted({lk.type for lk in b.lk_list})),
                      tuple(b.frames), tuple(b.sum_attrs), tuple(b.mm_attrs), tuple(b.outs), scale,
                      *_aggregate_tables(b.outs), tuple(q for q, o in enumerate(b.outs) if o.sums))


def _aggregate_tables(outs: Sequence[QueryOut]) -> tuple[np.ndarray, ...]:
    width = max([len(o.aggs) for o in outs] + [1])
    tables = np.full((4, len(outs), width), -1, dtype=np.int64)
    for q, o in enumerate(outs):
        for a, (_, func, t, t2) in enumerate(o.aggs):
            attr = -1 if t < 0 else (o.sums[t][0] if func in ("COUNT", "SUM", "AVG") else o.mms[t])
            tables[:, q, a] = (FUNCS.index(func), max(t, 0), max(t2, 0), attr)
    return tuple(tables)


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------


FUNCS = ("COUNT*", "COUNT", "SUM", "AVG", "MIN", "MAX")


@dataclass
class PartitionResult:
    """The results of one partition, per (query, window) with matches, as columns: the count, the
    query sum targets (scaled integers, see :class:`cepopt.executor.aseq.SumScale`) and min/max ranks."""

    kp: KernelPlan
    query: np.ndarray                  # query index per row
    window: np.ndarray
    count: np.ndarray                  # int64, or Python ints (object) past int64
    sums: np.ndarray                   # (rows, sum targets): int64 or object
    mins: np.ndarray                   # (rows, min/max targets): ranks, NO_MIN when none
    maxs: np.ndarray
    scales: list                       # per sum attribute its SumScale
    uniq: list                         # per min/max attribute its distinct values
    ops: dict[str, int]
    #: passes of the loops: 1 (int64 modulo 2^64) + the prime passes the bounds asked for
    passes: int = 1

    def aggregate_columns(self):
        """Per aggregate position and function: (rows, aggregate index, values, weights or None); rows
        whose MIN/MAX has no value (or AVG no event) are left out, as the results do."""
        kp = self.kp
        for a in range(kp.agg_func.shape[1]):
            funcs = kp.agg_func[self.query, a]
            for code in np.unique(funcs[funcs >= 0]).tolist():
                idx = np.flatnonzero(funcs == code)
                yield from self._function(kp, a, FUNCS[code], idx)

    def _function(self, kp: KernelPlan, a: int, func: str, idx: np.ndarray):
        q = self.query[idx]
        col, attr = kp.agg_col[q, a], kp.agg_attr[q, a]
        if func == "COUNT*":
            yield idx, a, self.count[idx], None
        elif func == "COUNT":
            yield idx, a, self.sums[idx, col], None
        elif func in ("SUM", "AVG"):
            for x in np.unique(attr).tolist():
                sel = np.flatnonzero(attr == x)
                vals = self.sums[idx[sel], col[sel]]
                vals = vals if x < 0 else _scaled_values(self.scales[x], vals)
                if func == "SUM":
                    yield idx[sel], a, vals, None
                else:
                    weights = self.sums[idx[sel], kp.agg_col2[q[sel], a]]
                    ok = np.flatnonzero(weights > 0)
                    yield idx[sel][ok], a, _take(vals, ok), weights[ok]
        else:
            ranks = (self.mins if func == "MIN" else self.maxs)[idx, col]
            for x in np.unique(attr).tolist():
                sel = np.flatnonzero((attr == x) & (ranks != (loops.NO_MIN if func == "MIN" else loops.NO_MAX)))
                yield idx[sel], a, self.uniq[x][ranks[sel]], None

    @property
    def rows(self) -> list[tuple[int, int, int, list]]:
        """(query index, window, count, [value per aggregate: AVG as (sum, count), None when none])."""
        return [(q, w, c, vals) for q, w, c, vals in _row_values(self)]


def _take(vals, idx: np.ndarray):
    return vals[idx] if isinstance(vals, np.ndarray) else [vals[i] for i in idx.tolist()]


def _scaled_values(scale: SumScale, vals: np.ndarray):
    """Sums of one attribute from their scaled integers: ints, or correctly rounded floats."""
    if scale.is_int:
        return vals
    if vals.dtype != object and (len(vals) == 0 or int(np.abs(vals).max()) < 2 ** 53) and -1000 < scale.exp < 900:
        return np.ldexp(vals.astype(np.float64), scale.exp)  # exact: |vals| < 2^53
    return np.asarray([scale.value(int(v)) for v in vals.tolist()], dtype=np.float64)


def _row_values(res: PartitionResult):
    """Per row its aggregates' values (the accumulator interface)."""
    if not len(res.query):
        return []
    kp = res.kp
    out = {r: [None] * len(kp.outs[q].aggs) for r, q in enumerate(res.query.tolist())}
    for idx, a, vals, weights in res.aggregate_columns():
        vals = vals.tolist() if isinstance(vals, np.ndarray) else list(vals)
        if weights is not None:
            vals = list(zip(vals, weights.tolist(), strict=True))
        for r, v in zip(idx.tolist(), vals, strict=True):
            out[r][a] = v
    counts = res.count.tolist()
    return [(q, w, counts[r], out[r]) for r, (q, w) in enumerate(zip(res.query.tolist(), res.window.tolist(),
                                                                      strict=True))]


def _frames(kp: KernelPlan, rows, events_ts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Window frames in scaled time units: (length, slide, offset) per frame of the plan."""
    d = kp.time_scale
    out = []
    for w in kp.frames:
        if w.slide is not None:
            out.append((int(w.length * d), int(w.slide * d), 0))
            continue
        span = (rows.ts_max - rows.ts_min) // d if rows.n_events else 0
        if span > w.length:
            names = ", ".join(q.name for q in kp.queries if q.window == w)
            raise CepoptError(
                f"query {names}: WITHIN {w.length} without SLIDE over a partition spanning {span} time units: "
                "the sequence executors need a SLIDE (or a window covering the stream)")
        # one window holding the whole partition, index 0
        out.append(((span + 1) * d, (span + 1) * d, rows.ts_min))
    arr = np.asarray(out, dtype=np.int64).reshape(len(out), 3)
    if (arr[:, :2] <= 0).any():
        raise CepoptError("window lengths and slides must be positive")
    return arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()


def _part(rows, frames, mod: int) -> np.ndarray:
    sums = row_sums_mod(rows.row_sum, mod)
    return loops.pack([rows.bts, rows.row_ptr, rows.row_lk, rows.row_k, sums, rows.row_min, rows.row_max, *frames],
                      [len(rows.bts), sums.shape[1], rows.row_min.shape[1], len(frames[0])])


def _crude_log2(kp: KernelPlan, rows, q: int) -> float:
    """log2 of a bound of query q's counts from the partition's events per position (their product:
    a match takes one event per position)."""
    return sum(math.log2(max(1, int(rows.lk_events[x]))) for x in kp.outs[q].lks)


def _needed_primes(kp: KernelPlan, rows, O: np.ndarray, OB: np.ndarray, n: int) -> int:
    """How many prime passes the results need beside the int64 one (0: int64 is exact). Bounds are
    log2 (a bound past the float range still counts primes): the kernel's float count bound OB where
    it is finite, else the product of the events per position."""
    if not n:
        return 0
    per_q = np.full(len(kp.queries), -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        np.maximum.at(per_q, O[:n, 0], np.log2(OB[:n] * 1.001 + 1))
    for q in np.flatnonzero(np.isnan(per_q) | (per_q == np.inf)).tolist():
        per_q[q] = _crude_log2(kp, rows, q)
    for q in kp.with_sums:
        for attr, nlev in kp.outs[q].sums:  # |sum| <= count x target events per match x largest |value|
            top = 1 if attr < 0 else max(rows.scales[attr].top, 1)
            per_q[q] = max(per_q[q], per_q[q] + math.log2(max(nlev, 1)) + math.log2(top))
    worst = float(per_q.max())
    return 0 if worst < INT64_SAFE_LOG2 else primes_for(worst)


def _use_jit(kp: KernelPlan, rows, jit: bool | None) -> bool:
    if jit is not None:
        return jit
    return loops._JIT is not None or rows.n_events * int(kp.static[loops.N_IL]) >= JIT_WORK


def run_partition(kp: KernelPlan, events: pd.DataFrame, *, jit: bool | None = None,
                  windows: tuple[int, float] = (0, math.inf), extra_primes: int = 0) -> PartitionResult:
    """Run the plan over one partition's events (any row order): the results of windows [lo, hi).

    ``jit``: run the loops compiled by numba (True), as Python (False), or by the partition's size
    (None, see :data:`JIT_WORK`); ``extra_primes``: prime passes to run beside those the count bounds
    ask for (the Chinese-remainder path on small numbers, for tests)."""
    rows = partition_rows(events, kp.lks, kp.type_names, kp.sum_attrs, kp.mm_attrs, kp.time_scale)
    if not len(rows.bts):
        empty = np.zeros(0, dtype=np.int64)
        none = np.zeros((0, 1), dtype=np.int64)
        return PartitionResult(kp, empty, empty, empty, none, none, none, [], [], {"update": 0, "combine": 0})
    frames = _frames(kp, rows, rows.bts)
    ns = loops.namespace(_use_jit(kp, rows, jit))
    with np.errstate(over="ignore"):  # the uncompiled loops wrap around 2^64 as the compiled ones do
        O, OB, n, upd, comb = _run(kp, ns, rows, frames, 0)
        mods = primes(_needed_primes(kp, rows, O, OB, n) + extra_primes)
        passes = [O] + [_run(kp, ns, rows, frames, p)[0] for p in mods]
    return _decode(kp, rows, passes, n, mods, windows, {"update": upd, "combine": comb})


def _run(kp: KernelPlan, ns: dict, rows, frames, mod: int) -> tuple:
    """One pass of the loops modulo ``mod`` (0: 2^64): (rows, bounds, number of rows, update, combine)."""
    K, X, T = loops.alloc(kp.tables, rows.bts, rows.row_ptr, rows.row_lk, frames, ns)
    nrow = loops.max_rows(kp.tables, rows.bts, frames)
    width = 3 + int(K[loops.K_MS]) + 2 * int(K[loops.K_MM])
    O = np.zeros((nrow, width), dtype=np.int64)
    OB = np.zeros(nrow, dtype=np.float64)
    n, upd, comb = ns["run"](kp.static, _part(rows, frames, mod), K, X, T, O, OB, mod)
    return O, OB, int(n), int(upd), int(comb)


def _exact(passes: list, n: int, mods: list[int], cols) -> np.ndarray:
    """Columns of the first n output rows: int64 from the int64 pass, or Python ints joined by the CRT."""
    arrs = [p[:n, cols] for p in passes]
    if not mods:
        return arrs[0]
    flat = crt([x.reshape(-1) for x in arrs], mods)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arrs[0].shape)


def _decode(kp: KernelPlan, rows, passes: list, n: int, mods: list[int], windows: tuple[int, float],
            ops: dict) -> PartitionResult:
    """The result rows with matches (count > 0) in windows [lo, hi)."""
    O = passes[0]
    ms = max([len(o.sums) for o in kp.outs] + [1])
    mm = max([len(o.mms) for o in kp.outs] + [1])
    count = _exact(passes, n, mods, 2)
    w = O[:n, 1]
    keep = np.flatnonzero((count > 0) & (w >= windows[0]) & (w < windows[1]))
    sums = _exact(passes, n, mods, slice(3, 3 + ms))
    return PartitionResult(kp, O[keep, 0], w[keep], count[keep], sums[keep], O[keep, 3 + ms:3 + ms + mm],
                           O[keep, 3 + ms + mm:3 + ms + 2 * mm], rows.scales, rows.uniq, ops, len(passes))


# ---------------------------------------------------------------------------------------------
# the accumulator interface (tests, the pandas driver)
# ---------------------------------------------------------------------------------------------


def accumulators(kp: KernelPlan, result: PartitionResult, key: dict | None = None) -> dict[str, AggAccumulator]:
    """Per query name an :class:`AggAccumulator` of a partition's results (``key``: its partition
    attribute values, for the group text)."""
    key = key or {}
    accs = {q.name: AggAccumulator(q) for q in kp.queries}
    for q, w, c, vals in result.rows:
        query = kp.queries[q]
        vals = [v.item() if isinstance(v, np.generic) else v for v in vals]
        per: dict[tuple, list] = {t: [0, 0, None, None] for t in accs[query.name].targets}
        for a, v in zip(query.aggregates, vals, strict=True):
            if a.ref is None:
                continue
            cell = per[(a.ref, a.attr)]
            if a.func == "COUNT":
                cell[0] = v
            elif a.func == "SUM":
                cell[1] = v
            elif a.func == "AVG":
                cell[1], cell[0] = v
            elif a.func == "MIN":
                cell[2] = v
            else:
                cell[3] = v
        g = group_attrs(query)
        accs[query.name].add(format_group(g, [key.get(x) for x in g]), w, int(c), {t: tuple(v) for t, v in per.items()})
    return accs


_PLANS: dict[tuple, KernelPlan] = {}


def sharon_partition(queries: Sequence[Query], plan, events: pd.DataFrame, key: dict | None = None, *,
                     jit: bool | None = None, extra_primes: int = 0
                     ) -> tuple[dict[str, AggAccumulator], dict[str, int]]:
    """Execute ``plan`` (a SharonPlan, or None for Non-Shared) for ``queries`` over one partition.

    ``events``: the partition's events (any order); ``key``: its GROUP-BY/equivalence values.
    Returns per query name an :class:`AggAccumulator` and the operation counts
    {"update": ..., "combine": ...}. (The protocol's :func:`cepopt.executor.sharon_exec.compile_sharon`
    compiles once; this compiles per call, remembering the last few plans by value.)
    """
    ck = (tuple(queries), plan)
    kp = _PLANS.get(ck)
    if kp is None:
        kp = compile_plan(queries, plan)
        if len(_PLANS) >= 8:
            _PLANS.clear()
        _PLANS[ck] = kp
    result = run_partition(kp, events, jit=jit, extra_primes=extra_primes)
    return accumulators(kp, result, key), result.ops
