"""A-Seq: online, non-shared sequence aggregation without sequence construction (sharon.md §2.4, §7.3).

The core is :class:`SegmentInstance`: for a (sub)pattern X = (X_1..X_h) it keeps one START record
per time stamp at which X_1 events arrived, with the aggregates of every prefix X_1..X_j of the
partial matches starting there (count, and per target a sum, min and max). Events are processed in
batches of equal time stamps, levels from the last to the first, so every update reads the state
from before the batch (an event never extends a match at its own time stamp; repeated types work).
All arithmetic is vectorised over the live START records.

Counts are exact: the state is int64 while a running upper bound of the counts (times the
largest integer attribute) stays below 2^62, and turns into Python ints (object arrays) per instance
when it does not; combinations that could leave int64 are computed with Python ints.

Windows follow sharon.md §1.5: window k = [kS, kS+W); a match is in window k iff its first event is
at or after kS and its last before kS+W. A window closes when the first event at or after its end
arrives (or at the end of the partition); its result is the sum over START records at or after kS of
their full-pattern aggregates. START records older than the oldest open window are dropped.

:func:`aseq_partition` runs every query of a workload as its own single-segment instance (the
Non-Shared method). Operation counts: one "update" per (event, live START record) an event of a
non-first level touches, one per START event, and one "combine" per START record read when a window
closes; these are the quantities Eq. 2 predicts (Rate(E_1) x Rate(P) per window).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.results import AggAccumulator, format_group, group_attrs
from cepopt.model import Filter, Query, Type, is_flat_seq
from cepopt.predicates import compare_arrays

__all__ = ["Frame", "PartitionEvents", "SegmentInstance", "Target", "aseq_partition", "filter_mask",
           "query_types", "query_targets"]

_INT64_SAFE = 2 ** 62


# ---------------------------------------------------------------------------------------------
# Events of one partition, as arrays, batched by time stamp
# ---------------------------------------------------------------------------------------------


class PartitionEvents:
    """The events of one partition sorted by time (stable), with batch boundaries per time stamp."""

    def __init__(self, df: pd.DataFrame):
        if len(df) and not df["ts"].is_monotonic_increasing:
            df = df.sort_values("ts", kind="stable")
        self.df = df.reset_index(drop=True)
        self.ts = self.df["ts"].to_numpy(dtype=np.int64)
        self.type = self.df["type"].astype(str).to_numpy()
        n = len(self.ts)
        if n:
            cuts = np.flatnonzero(np.diff(self.ts)) + 1
            self.starts = np.concatenate(([0], cuts))
            self.batch_ts = self.ts[self.starts]
        else:
            self.starts = np.zeros(0, dtype=np.int64)
            self.batch_ts = np.zeros(0, dtype=np.int64)
        #: batch index of every event
        self.batch_of = np.repeat(np.arange(len(self.starts)), np.diff(np.append(self.starts, n)))
        self._num: dict[str, np.ndarray] = {}
        self._type_idx: dict[str, np.ndarray] = {}
        self._levels: dict[tuple, tuple] = {}

    def __len__(self) -> int:
        return len(self.ts)

    def level(self, type_name: str, filters: Sequence[Filter], ntargets: int):
        """Events of ``type_name`` passing ``filters``: (indices, batch ids, first index of each batch
        in indices, counts per batch, {batch: (count, (None,) * ntargets)}), cached."""
        key = (type_name, tuple(sorted((f.attr, f.op, repr(f.value)) for f in filters)), ntargets)
        hit = self._levels.get(key)
        if hit is None:
            if type_name not in self._type_idx:
                self._type_idx[type_name] = np.flatnonzero(self.type == type_name)
            idx = self._type_idx[type_name]
            if filters:
                idx = idx[filter_mask(self, filters)[idx]]
            b = self.batch_of[idx]
            if len(b):
                # events are sorted by time, so batch ids are non-decreasing
                first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
                ub = b[first]
                counts = np.diff(np.r_[first, len(b)])
            else:
                first = ub = counts = np.zeros(0, dtype=np.int64)
            none = (None,) * ntargets
            plain = dict(zip(ub.tolist(), ((c, none) for c in counts.tolist()), strict=True))
            hit = (idx, ub, first, counts, plain)
            self._levels[key] = hit
        return hit

    def numeric(self, attr: str) -> np.ndarray:
        """Attribute as float64 or int64 (missing values NaN; absent column all NaN)."""
        if attr not in self._num:
            if attr not in self.df.columns:
                arr = np.full(len(self.ts), np.nan)
            else:
                col = self.df[attr]
                if pd.api.types.is_integer_dtype(col.dtype) and not col.isna().any():
                    arr = col.to_numpy(dtype=np.int64)
                else:
                    arr = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
                    finite = arr[~np.isnan(arr)]
                    if len(finite) == len(arr) and len(arr) and np.all(finite == np.round(finite)) \
                            and np.all(np.abs(finite) < 2 ** 53) and pd.api.types.is_integer_dtype(col.dtype):
                        arr = arr.astype(np.int64)
            self._num[attr] = arr
        return self._num[attr]


def filter_mask(ev: PartitionEvents, filters: Sequence[Filter]) -> np.ndarray:
    """Events passing every filter: the oracle's comparison, vectorised (cepopt.predicates: a missing
    value never passes, nor an ordering of values without one; an absent column is all missing)."""
    mask = np.ones(len(ev), dtype=bool)
    for f in filters:
        if f.attr not in ev.df.columns:
            return np.zeros(len(ev), dtype=bool)
        mask &= compare_arrays(f.op, ev.df[f.attr], f.value)
    return mask


# ---------------------------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------------------------


@dataclass
class Frame:
    """Window arithmetic: window k = [kS, kS+W) over shifted time ``ts - offset``."""

    length: Any
    slide: Any
    offset: int = 0

    def __post_init__(self) -> None:
        self.exact = isinstance(self.length, int) and isinstance(self.slide, int)
        if not self.exact:
            self.length, self.slide = Fraction(self.length), Fraction(self.slide)
        self.slots = int(math.ceil(self.length / self.slide)) + 1

    def k_hi(self, t: int) -> int:
        """Last window containing time t."""
        return math.floor((t - self.offset) / self.slide) if not self.exact else (t - self.offset) // self.slide

    def k_lo(self, t: int) -> int:
        """First window containing time t (>= 0)."""
        x = t - self.offset - self.length
        k = (x // self.slide + 1) if self.exact else math.floor(x / self.slide) + 1
        return max(0, int(k))

    def start(self, k: int):
        """Start of window k in absolute time (a bound for searchsorted)."""
        s = k * self.slide + self.offset
        return s if self.exact else math.ceil(s)

    def end(self, k: int):
        """First absolute time not in window k."""
        e = k * self.slide + self.length + self.offset
        return e if self.exact else math.ceil(e)

    @classmethod
    def of(cls, query: Query, ev: PartitionEvents) -> Frame:
        w = query.window
        if w.slide is not None:
            return cls(w.length, w.slide)
        if len(ev) == 0:
            return cls(1, 1)
        span = int(ev.ts[-1] - ev.ts[0])
        if span > w.length:
            raise CepoptError(
                f"query {query.name}: WITHIN {w.length} without SLIDE over a partition spanning {span} "
                "time units: the sequence executors need a SLIDE (or a window covering the stream)")
        # one window holding the whole partition, index 0
        return cls(span + 1, span + 1, int(ev.ts[0]))


# ---------------------------------------------------------------------------------------------
# Segment instance
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What a segment aggregates besides the count: per match, the sum / min / max of ``attr``
    (or of 1 when attr is None: a count of events) over the events at ``levels`` (0-based)."""

    levels: frozenset[int]
    attr: str | None


class SegmentInstance:
    """Per-START prefix aggregates of one segment X_1..X_h (spec §7.3), over one partition.

    ``levels``: one mask per position (events of that type passing that position's filters).
    State rows = START records (one per batch with X_1 events), columns = levels.
    """

    def __init__(self, types: Sequence[str], filters: Sequence[Sequence[Filter]], targets: Sequence[Target],
                 frame: Frame, ev: PartitionEvents, int_dtype: Any):
        self.types = tuple(types)
        self.h = len(self.types)
        self.targets = list(targets)
        self.frame = frame
        self.ev = ev
        self.idt = int_dtype
        self.ops_update = 0
        cap = 16
        self.n = 0
        self.head = 0
        self.time = np.zeros(cap, dtype=np.int64)
        self.cnt = np.zeros((cap, self.h), dtype=int_dtype)
        self.tdt = []
        self.sum, self.min, self.max = [], [], []
        # per level: {batch: (number of events, per-target (sum, min, max) or None)}
        self.level_batches: list[dict[int, tuple]] = []
        tvals = []
        for tg in self.targets:
            vals = np.ones(len(ev), dtype=np.int64) if tg.attr is None else ev.numeric(tg.attr)
            dt = np.float64 if vals.dtype.kind == "f" else int_dtype
            self.tdt.append(dt)
            tvals.append(vals)
            self.sum.append(np.zeros((cap, self.h), dtype=dt))
            self.min.append(np.full((cap, self.h), np.inf))
            self.max.append(np.full((cap, self.h), -np.inf))
        # |sum| <= count * scale for every integer target (a match holds at most h target events)
        self.scale = self.h * max([1] + [int(np.abs(v).max()) for v in tvals if v.dtype.kind == "i" and len(v)])
        #: upper bounds of the counts per level over the live rows (Python ints): while
        #: bound * scale < 2^62 the int64 arrays cannot overflow; past it the state turns into Python ints
        self.ub = [0] * self.h
        nt = len(self.targets)
        for j, (t, f) in enumerate(zip(self.types, filters, strict=True)):
            idx, ub, first, counts, plain = ev.level(t, f, nt)
            if not any(j in tg.levels for tg in self.targets) or len(idx) == 0:
                self.level_batches.append(plain)
                continue
            per_t = []
            for tg, vals in zip(self.targets, tvals, strict=True):
                if j in tg.levels:
                    v = vals[idx]
                    if v.dtype.kind == "f":
                        vz = np.where(np.isnan(v), 0.0, v)
                        vlo = np.where(np.isnan(v), np.inf, v)
                        vhi = np.where(np.isnan(v), -np.inf, v)
                    else:
                        vz, vlo, vhi = v, v.astype(np.float64), v.astype(np.float64)
                    per_t.append((np.add.reduceat(vz, first).tolist(), np.minimum.reduceat(vlo, first).tolist(),
                                  np.maximum.reduceat(vhi, first).tolist()))
                else:
                    per_t.append(None)
            tv = [tuple(None if p is None else (p[0][i], p[1][i], p[2][i]) for p in per_t)
                  for i in range(len(ub))]
            self.level_batches.append(dict(zip(ub.tolist(), zip(counts.tolist(), tv, strict=True), strict=True)))
        self.active_batches = set().union(*self.level_batches)
        self.start_batches = set(self.level_batches[0])
        self.attachments: dict[tuple, list] = {}

    # ------------------------------------------------------------------ storage
    def _grow(self) -> None:
        cap = len(self.time)
        live = self.n - self.head
        new_cap = max(16, 2 * live + 16) if self.head > cap // 2 else 2 * cap
        sl = slice(self.head, self.n)

        def move(a, fill):
            out = np.full((new_cap,) + a.shape[1:], fill, dtype=a.dtype)
            out[:live] = a[sl]
            return out

        self.time = move(self.time, 0)
        self.cnt = move(self.cnt, 0)
        self.sum = [move(a, 0) for a in self.sum]
        self.min = [move(a, np.inf) for a in self.min]
        self.max = [move(a, -np.inf) for a in self.max]
        for key, arrs in self.attachments.items():
            self.attachments[key] = [move(a, f) for a, f in zip(arrs, _att_fill(arrs), strict=True)]
        self.n, self.head = live, 0

    def attach(self, key: tuple, ntargets: int, sum_dtypes: Sequence[Any]) -> None:
        """Per-row window-slot maps H for a query boundary (spec §7.4): count + per target
        sum/min/max, shape (capacity, slots)."""
        cap, m = len(self.time), self.frame.slots
        arrs = [np.zeros((cap, m), dtype=self.idt)]
        for dt in sum_dtypes:
            arrs += [np.zeros((cap, m), dtype=dt), np.full((cap, m), np.inf), np.full((cap, m), -np.inf)]
        self.attachments[key] = arrs

    # ------------------------------------------------------------------ processing
    def update(self, b: int) -> None:
        """Apply batch ``b`` to the existing START records (levels >= 2, last level first)."""
        live = slice(self.head, self.n)
        nlive = self.n - self.head
        if nlive == 0:
            return
        for j in range(self.h - 1, 0, -1):
            info = self.level_batches[j].get(b)
            if info is None:
                continue
            k, tv = info
            self.ops_update += k * nlive
            if self.idt is not object:
                bound = self.ub[j] + k * self.ub[j - 1]
                if bound * self.scale >= _INT64_SAFE:
                    self._refresh()
                    bound = self.ub[j] + k * self.ub[j - 1]
                    if bound * self.scale >= _INT64_SAFE:
                        self._promote()
                self.ub[j] = bound
            prev = self.cnt[live, j - 1]
            for ti in range(len(self.targets)):
                s = self.sum[ti]
                s[live, j] += k * s[live, j - 1]
                cand_lo = self.min[ti][live, j - 1]
                cand_hi = self.max[ti][live, j - 1]
                if tv[ti] is not None:
                    bs, blo, bhi = tv[ti]
                    if bs:
                        # a float sum takes Python-int counts as floats (it is a float anyway)
                        s[live, j] += bs * (prev.astype(np.float64) if s.dtype.kind == "f" and prev.dtype == object
                                            else prev)
                    cand_lo = np.minimum(cand_lo, blo)
                    cand_hi = np.maximum(cand_hi, bhi)
                has = prev > 0
                lo = self.min[ti][live, j]
                hi = self.max[ti][live, j]
                self.min[ti][live, j] = np.where(has, np.minimum(lo, cand_lo), lo)
                self.max[ti][live, j] = np.where(has, np.maximum(hi, cand_hi), hi)
            self.cnt[live, j] += k * prev

    def add_start(self, b: int) -> int | None:
        """Create the START record of batch ``b`` if it has X_1 events; returns its row."""
        info = self.level_batches[0].get(b)
        if info is None:
            return None
        if self.n == len(self.time):
            self._grow()
        k, tv = info
        r = self.n
        self.n += 1
        self.ops_update += k
        self.time[r] = self.ev.batch_ts[b]
        self.cnt[r] = 0
        self.cnt[r, 0] = k
        self.ub[0] = max(self.ub[0], k)
        for ti in range(len(self.targets)):
            self.sum[ti][r] = 0
            self.min[ti][r] = np.inf
            self.max[ti][r] = -np.inf
            if tv[ti] is not None:
                self.sum[ti][r, 0] = tv[ti][0]
                self.min[ti][r, 0] = tv[ti][1]
                self.max[ti][r, 0] = tv[ti][2]
        return r

    def _refresh(self) -> None:
        """Tighten the count bounds to the live rows' actual maxima."""
        live = slice(self.head, self.n)
        for j in range(self.h):
            self.ub[j] = int(self.cnt[live, j].max()) if self.n > self.head else 0

    def _promote(self) -> None:
        """Counts (and integer sums) become Python ints: exact past 2^63."""
        self.idt = object
        self.cnt = self.cnt.astype(object)
        self.sum = [a if a.dtype.kind == "f" else a.astype(object) for a in self.sum]
        self.tdt = [d if d is np.float64 else object for d in self.tdt]

    def expire_before(self, t) -> None:
        """Drop START records older than ``t`` (no open window can hold them)."""
        if self.n > self.head:
            self.head += int(np.searchsorted(self.time[self.head:self.n], t, side="left"))

    def rows_from(self, t) -> slice:
        """Live rows with time >= t."""
        # bisect over the few live rows is cheaper than a numpy call
        return slice(bisect.bisect_left(self.time, t, self.head, self.n), self.n)


def _att_fill(arrs):
    fills = [0]
    for _ in range((len(arrs) - 1) // 3):
        fills += [0, np.inf, -np.inf]
    return fills


# ---------------------------------------------------------------------------------------------
# Query helpers
# ---------------------------------------------------------------------------------------------


def query_types(query: Query) -> tuple[str, ...]:
    """The type sequence of a flat SEQ query; other patterns raise CepoptError."""
    if not is_flat_seq(query.pattern):
        raise CepoptError(f"query {query.name}: the sequence executors handle SEQ of event types only")
    p = query.pattern
    return (p.name,) if isinstance(p, Type) else tuple(item.name for item in p.items)


def query_leaves(query: Query) -> tuple[Type, ...]:
    p = query.pattern
    return (p,) if isinstance(p, Type) else tuple(p.items)


def query_targets(query: Query) -> list[tuple[str, str | None]]:
    """The (ref, attr) pairs a query's aggregates need: (ref, None) counts ref-events."""
    out: dict = {}
    for a in query.aggregates:
        if a.ref is None:
            continue
        out.setdefault((a.ref, None), None)
        if a.attr is not None:
            out.setdefault((a.ref, a.attr), None)
    return list(out)


def position_filters(query: Query) -> list[list[Filter]]:
    leaves = query_leaves(query)
    return [[f for f in query.filters if f.ref in (leaf.var, leaf.name)] for leaf in leaves]


def cells_to_acc(acc: AggAccumulator, group: str, window: int, cnt, per: dict) -> None:
    if cnt:
        acc.add(group, window, int(cnt), per)


def _py(v):
    return v.item() if hasattr(v, "item") else v


def combine(inst: SegmentInstance, rows: slice, tids: Sequence[int], prev: list | None,
            slot: int, prev_bound: int = 1, scale: int = 1) -> tuple:
    """Sum over START rows of H[row, slot] (x) Full(row); H = ONE when ``prev`` is None.

    ``tids``: the instance target index of each query target. ``prev`` = [count, then sum, min, max
    per query target] arrays of a boundary map whose counts are at most ``prev_bound``; ``scale``
    bounds |sum| / count of the query's targets. Returns (count, [(sum, min, max) per target]);
    min/max are over rows where both sides have matches. Products that could leave int64 are
    computed with Python ints.
    """
    h = inst.h - 1
    fc = inst.cnt[rows, h]
    nrows = rows.stop - rows.start
    big = (prev_bound * inst.ub[h] * max(scale, inst.scale) * max(nrows, 1)) >= _INT64_SAFE

    def exact(a):
        return a.astype(object) if big and a.dtype.kind in "iu" else a

    fc = exact(fc)
    per = []
    if prev is None:
        cnt = fc.sum()
        if not tids:
            return cnt, per
        has = fc > 0
        for ti in tids:
            per.append((exact(inst.sum[ti][rows, h]).sum(),
                        inst.min[ti][rows, h][has].min(initial=np.inf),
                        inst.max[ti][rows, h][has].max(initial=-np.inf)))
        return cnt, per
    hc = exact(prev[0][rows, slot])
    cnt = (hc * fc).sum()
    if not tids:
        return cnt, per
    has = (hc > 0) & (fc > 0)
    for i, ti in enumerate(tids):
        hs, hlo, hhi = exact(prev[1 + 3 * i][rows, slot]), prev[2 + 3 * i][rows, slot], prev[3 + 3 * i][rows, slot]
        s = (hs * fc).sum() + (hc * exact(inst.sum[ti][rows, h])).sum()
        lo = np.minimum(hlo, inst.min[ti][rows, h])[has].min(initial=np.inf)
        hi = np.maximum(hhi, inst.max[ti][rows, h])[has].max(initial=-np.inf)
        per.append((s, lo, hi))
    return cnt, per


def acc_targets(query: Query, per: Sequence[tuple], int_attrs: dict[str, bool]) -> dict:
    """Kernel per-target values -> the (count, sum, min, max) per (ref, attr) of AggAccumulator."""
    tg = query_targets(query)
    vals = dict(zip(tg, per, strict=True))
    out = {}
    for ref, attr in dict.fromkeys((a.ref, a.attr) for a in query.aggregates if a.ref is not None):
        count = _py(vals[(ref, None)][0])
        if attr is None:
            out[(ref, None)] = (count, count, None, None)
            continue
        s, lo, hi = vals[(ref, attr)]
        lo = None if lo == np.inf else _num(lo, int_attrs.get(attr, False))
        hi = None if hi == -np.inf else _num(hi, int_attrs.get(attr, False))
        out[(ref, attr)] = (count, _num(s, int_attrs.get(attr, False)), lo, hi)
    return out


def _num(v, is_int: bool):
    v = _py(v)
    if is_int and isinstance(v, float) and v.is_integer():
        return int(v)
    if is_int:
        return int(v) if not isinstance(v, float) else v
    return v


def int_attr_map(queries: Sequence[Query], ev: PartitionEvents) -> dict[str, bool]:
    out = {}
    for q in queries:
        for _, attr in query_targets(q):
            if attr is not None and attr not in out:
                out[attr] = ev.numeric(attr).dtype.kind == "i"
    return out


def group_of(query: Query, key: dict) -> str:
    """Group text of a partition key (dict attr -> value) for ``query``."""
    g = group_attrs(query)
    return format_group(g, [key.get(a) for a in g])


# ---------------------------------------------------------------------------------------------
# A-Seq: every query on its own
# ---------------------------------------------------------------------------------------------


def aseq_partition(queries: Sequence[Query], events: pd.DataFrame, key: dict | None = None
                   ) -> tuple[dict[str, AggAccumulator], dict[str, int]]:
    """Run A-Seq (Non-Shared) for ``queries`` over the events of one partition.

    ``events`` must hold one partition of every query (same GROUP-BY and equivalence values);
    ``key`` maps those attributes to their values (for the group text). Returns per query name an
    :class:`AggAccumulator` and the operation counts {"update": ..., "combine": ...}.
    """
    from cepopt.executor import aseq_fast

    if aseq_fast.eligible(queries):
        # COUNT(*) only: the vectorized kernel, unless int64 could overflow
        try:
            return aseq_fast.fast_partition(queries, None, events, key)
        except aseq_fast.Fallback:
            pass
    return aseq_general(queries, events, key)


def aseq_general(queries: Sequence[Query], events: pd.DataFrame, key: dict | None = None
                 ) -> tuple[dict[str, AggAccumulator], dict[str, int]]:
    """A-Seq with the general per-instance kernel (every aggregate, Python ints past int64)."""
    ev = PartitionEvents(events)
    key = key or {}
    idt = np.int64  # promoted to Python ints per instance when a bound says so
    int_attrs = int_attr_map(queries, ev)
    accs = {q.name: AggAccumulator(q) for q in queries}
    ops = {"update": 0, "combine": 0}
    for q in queries:
        _aseq_query(q, ev, key, idt, int_attrs, accs[q.name], ops)
    return accs, ops


def _aseq_query(q: Query, ev: PartitionEvents, key: dict, idt: Any, int_attrs: dict, acc: AggAccumulator,
                ops: dict) -> None:
    """A-Seq for one query over one partition: one segment instance, results at window close."""
    types = query_types(q)
    leaves = query_leaves(q)
    frame = Frame.of(q, ev)
    tg = query_targets(q)
    targets = [Target(frozenset(j for j, leaf in enumerate(leaves) if ref in (leaf.var, leaf.name)), attr)
               for ref, attr in tg]
    inst = SegmentInstance(types, position_filters(q), targets, frame, ev, idt)
    group = group_of(q, key)
    tids = list(range(len(targets)))
    next_k = 0

    def close_until(limit_k: int) -> None:
        nonlocal next_k
        if inst.n == inst.head:
            next_k = max(next_k, limit_k + 1)
            return
        first = max(next_k, frame.k_lo(int(inst.time[inst.head])))
        for k in range(first, limit_k + 1):
            rows = inst.rows_from(frame.start(k))
            if rows.start >= rows.stop:
                break
            ops["combine"] += rows.stop - rows.start
            cnt, per = combine(inst, rows, tids, None, 0)
            cells_to_acc(acc, group, k, _py(cnt), acc_targets(q, per, int_attrs))
            inst.expire_before(frame.start(k + 1))
        next_k = max(next_k, limit_k + 1)

    for b in sorted(inst.active_batches):
        t = int(ev.batch_ts[b])
        # windows whose end <= t close before the batch
        close_until(frame.k_lo(t) - 1)
        inst.update(b)
        inst.add_start(b)
    if inst.n > inst.head:
        close_until(frame.k_hi(int(inst.time[inst.n - 1])))
    ops["update"] += inst.ops_update
