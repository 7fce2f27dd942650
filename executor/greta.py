"""GRETA: non-shared online trend aggregation, one partition and window at a time (hamlet.md §2).

Per query q and matched event e (Eqs. 1-3)::

    count(e,q) = start(e,q) + sum of count(e',q) over the predecessor events pe(e,q)
    fcount(q)  = sum of count(e,q) over matched events of an end type

and for an aggregate target (E, attr) (§2.5): countE(e) = sum countE(e') + [e.type=E]*count(e),
sum(e) = sum sum(e') + [e.type=E]*e.attr*count(e), min/max over predecessors with count > 0 and
e.attr. A predecessor is an earlier (strictly, §8.10) matched event of a type in pt(E,q), in the same
partition and window, whose edge predicates hold (§2.3).

Two paths, as §2.7 says: without edge predicates, per-type running sums give each event's
predecessor aggregate in O(|pt|) (the fast path); with edge predicates, the stored events are
scanned (the faithful O(n) path). Counts are Python ints (exact, 40+ digits); SUM over float attributes
is kept as an exact Fraction and converted at the end. Predicate masks, windows and partitions are
vectorized (NumPy / pandas); the recurrence itself is a loop over Python ints, since no vector op
is exact for big integers.

Measured operations: ``propagations`` = the number of (predecessor, event, query) edges whose values
are added, the quantity Eq. 4 (k*n^2) bounds; ``values`` = the (event, query) counts computed.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from cepopt.executor.results import AggAccumulator, format_group, results_frame
from cepopt.hamlet.problem import CompiledQuery, SharingClass, compile_workload
from cepopt.predicates import compare_arrays, is_missing

__all__ = ["QueryState", "Scope", "greta_scope", "matched_mask", "run_local", "scopes", "window_bounds"]


# ---------------------------------------------------------------------------------------------
# Vectorized helpers: predicate masks, windows, partitions
# ---------------------------------------------------------------------------------------------


def matched_mask(cq: CompiledQuery, part: pd.DataFrame) -> np.ndarray:
    """Events of ``part`` matched by ``cq``: type of the pattern and every local filter holds (not on a
    missing value, cepopt.predicates)."""
    types = part["type"].astype(str).to_numpy()
    mask = np.isin(types, list(cq.types))
    for t, attr, op, value in cq.filters:
        on_t = types == t
        if attr not in part.columns:
            mask &= ~on_t
            continue
        mask &= ~on_t | compare_arrays(op, part[attr], value)
    return mask


def window_bounds(ts: np.ndarray, length: float, slide: float) -> tuple[np.ndarray, np.ndarray]:
    """First and last window index k with kS <= t < kS + W (sharon.md §1.5), vectorized and exact
    for integral time stamps and windows."""
    if float(length).is_integer() and float(slide).is_integer() and np.issubdtype(ts.dtype, np.integer):
        w, s = int(length), int(slide)
        lo = np.maximum(0, (ts - w) // s + 1)
        hi = ts // s
    else:
        tsf = ts.astype(float)
        lo = np.maximum(0, np.floor((tsf - length) / slide) + 1).astype(np.int64)
        hi = np.floor(tsf / slide).astype(np.int64)
    return lo.astype(np.int64), hi.astype(np.int64)


def assign_windows(df: pd.DataFrame, length: float, slide: float) -> pd.DataFrame:
    """``df`` with a ``window`` column: one row per (event, window holding it)."""
    ts = df["ts"].to_numpy()
    lo, hi = window_bounds(ts, length, slide)
    reps = np.maximum(hi - lo + 1, 0)
    idx = np.repeat(np.arange(len(df)), reps)
    offs = np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps)
    out = df.iloc[idx].reset_index(drop=True)
    out["window"] = lo[idx] + offs
    return out


class Scope:
    """One partition and window of a sharing class: events sorted by time (stable: ties keep their
    order), with per-query match masks and the group text of the results."""

    def __init__(self, cls: SharingClass, part: pd.DataFrame, key: tuple, window: int):
        self.cls = cls
        self.df = part
        self.key = key
        self.window = int(window)
        self.ts = part["ts"].to_numpy()
        self.types = part["type"].astype(str).to_numpy()
        self.n = len(part)
        self.masks = {cq.name: matched_mask(cq, part) for cq in cls.queries}
        # window k spans [k*slide, k*slide + length); a class of mixed lengths (Gloria) has scopes of
        # the longest window, and a shorter query's window ends earlier
        self.ends = {cq.name: self.window * cls.slide + cq.length for cq in cls.queries}
        for cq in cls.queries:
            if cq.length < cls.length:
                self.masks[cq.name] = self.masks[cq.name] & (self.ts < self.ends[cq.name])
        gidx = [cls.partition.index(a) for a in cls.group]
        self.group = format_group(cls.group, [key[i] for i in gidx])
        self._records: list[dict] | None = None
        self._cols = {c: part[c].to_numpy() for c in part.columns if c not in ("ts", "type", "window")}

    @functools.cached_property
    def matched_before(self) -> np.ndarray:
        """``[k]``: the events before position k matched by some query of the class (n of Eq. 7)."""
        anyq = np.zeros(self.n, dtype=bool)
        for m in self.masks.values():
            anyq |= m
        return np.r_[0, np.cumsum(anyq)]

    def attr(self, i: int, name: str) -> Any:
        col = self._cols.get(name)
        if col is None:
            return None
        v = col[i]
        if is_missing(v):
            return None
        return v.item() if hasattr(v, "item") else v

    def record(self, i: int) -> dict:
        if self._records is None:
            self._records = [{c: self.attr(j, c) for c in self._cols} for j in range(self.n)]
        return self._records[i]


def _norm_key(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if v.is_integer():
            return int(v)
    return v.item() if hasattr(v, "item") else v


def scopes(cls: SharingClass, events: pd.DataFrame) -> Iterator[tuple[tuple, int, pd.DataFrame]]:
    """(partition key, window k, events of that partition and window sorted by time) of a class."""
    types = cls.types
    df = events[events["type"].astype(str).isin(types)]
    if df.empty:
        return
    df = df.reset_index(drop=True)
    df = assign_windows(df, cls.length, cls.slide)
    attrs = list(cls.partition)
    for a in attrs:
        if a not in df.columns:
            df[a] = None
    keys = [df[a].map(_norm_key) for a in attrs]
    gcols = [f"__k{i}" for i in range(len(attrs))]
    for c, k in zip(gcols, keys, strict=True):
        df[c] = k.astype(object).where(k.notna(), "__null__")
    df["__pos"] = np.arange(len(df))
    for gk, part in df.groupby(gcols + ["window"], sort=True, dropna=False):
        gk = gk if isinstance(gk, tuple) else (gk,)
        key = tuple(None if v == "__null__" else v for v in gk[:-1])
        part = part.sort_values(["ts", "__pos"], kind="stable").drop(columns=gcols + ["__pos"])
        yield key, int(gk[-1]), part.reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Per-query GRETA state
# ---------------------------------------------------------------------------------------------


def _num(v: Any) -> Any:
    """Attribute values in exact arithmetic: floats become Fractions."""
    if isinstance(v, float):
        return Fraction(v)
    return v


class QueryState:
    """GRETA state of one query in one scope.

    A value is a list ``[count, countE_1.., sum_1..]`` over the query's targets plus the lists of
    minima and maxima. Per type T the committed running sums ``acc[T]`` cover the matched events of
    T strictly before the current time stamp; ``pending`` holds the current tie group.
    """

    def __init__(self, cq: CompiledQuery, scope: Scope):
        self.cq = cq
        self.scope = scope
        self.pt = cq.pt_map
        self.m = len(cq.targets)
        self.width = 1 + 2 * self.m
        self.scan = bool(cq.edges)
        self.edges_into: dict[str, list] = {}
        for ep in cq.edges:
            self.edges_into.setdefault(ep.dst, []).append(ep)
        self.need_mm = [t in cq.minmax for t in cq.targets]
        self.acc: dict[str, list] = {}
        self.acc_min: dict[str, list] = {}
        self.acc_max: dict[str, list] = {}
        self.acc_n: dict[str, int] = {}
        self.pending: list[tuple[str, list, list, list]] = []
        self.pending_ts = None
        self.stored: list[tuple[int, list, list, list]] = []  # scan path: (pos, value, mins, maxs)
        self.R = [0] * self.width
        self.Rmin: list = [None] * self.m
        self.Rmax: list = [None] * self.m
        self.propagations = 0
        self.values = 0

    # -- time -------------------------------------------------------------------------------
    def advance(self, ts: Any) -> None:
        """Commit the pending tie group when time moves past it."""
        if self.pending and ts != self.pending_ts:
            for t, val, mn, mx in self.pending:
                self._commit(t, val, mn, mx, 1)
            self.pending = []
        self.pending_ts = ts

    def _commit(self, t: str, val: list, mn: list, mx: list, nevents: int) -> None:
        acc = self.acc.get(t)
        if acc is None:
            self.acc[t] = list(val)
            self.acc_min[t] = list(mn)
            self.acc_max[t] = list(mx)
            self.acc_n[t] = nevents
            return
        for j in range(self.width):
            acc[j] += val[j]
        self.acc_n[t] += nevents
        if self.m:
            _mins(self.acc_min[t], mn)
            _maxs(self.acc_max[t], mx)

    def add_committed(self, t: str, val: list, mn: list, mx: list, nevents: int) -> None:
        """Fold values computed elsewhere (a shared graphlet) into the committed sums of type t."""
        self._commit(t, val, mn, mx, nevents)

    # -- Eq. 2 ------------------------------------------------------------------------------
    def predecessors(self, i: int) -> tuple[list, list, list]:
        """Aggregate over pe(e_i, q): (sum of values, min of mins, max of maxs)."""
        etype = self.scope.types[i]
        pts = self.pt.get(etype, ())
        tot = [0] * self.width
        mn: list = [None] * self.m
        mx: list = [None] * self.m
        if not self.scan:
            for t in pts:
                acc = self.acc.get(t)
                if acc is None:
                    continue
                self.propagations += self.acc_n[t]
                for j in range(self.width):
                    tot[j] += acc[j]
                if self.m:
                    _mins(mn, self.acc_min[t])
                    _maxs(mx, self.acc_max[t])
            return tot, mn, mx
        ts_i = self.scope.ts[i]
        preds = self.edges_into.get(etype, ())
        rec_i = self.scope.record(i) if preds else None
        types = self.scope.types
        for pos, val, vmn, vmx in self.stored:
            if types[pos] not in pts or not self.scope.ts[pos] < ts_i:
                continue
            if preds and not all(ep.holds(self.scope.record(pos), rec_i) for ep in preds
                                 if ep.src == types[pos]):
                continue
            self.propagations += 1
            for j in range(self.width):
                tot[j] += val[j]
            if self.m:
                _mins(mn, vmn)
                _maxs(mx, vmx)
        return tot, mn, mx

    def value(self, i: int, pred: tuple[list, list, list]) -> tuple[list, list, list]:
        """Eqs. 1-2 and §2.5: the value of event i from its predecessors' aggregate."""
        tot, mn, mx = pred
        etype = self.scope.types[i]
        val = list(tot)
        if etype in self.cq.start:
            val[0] += 1
        c = val[0]
        mn = list(mn)
        mx = list(mx)
        if c == 0:
            return val, [None] * self.m, [None] * self.m
        for j, ((_ref, attr), ttype) in enumerate(zip(self.cq.targets, self.cq.target_types, strict=True)):
            if ttype != etype:
                continue
            val[1 + j] += c
            if attr is not None:
                v = self.scope.attr(i, attr)
                if v is not None:
                    val[1 + self.m + j] += _num(v) * c
                    if self.need_mm[j]:
                        if mn[j] is None or v < mn[j]:
                            mn[j] = v
                        if mx[j] is None or v > mx[j]:
                            mx[j] = v
        return val, mn, mx

    def record(self, i: int, val: list, mn: list, mx: list) -> None:
        """Store event i's value (pending until time moves on) and add it to the result if end type."""
        etype = self.scope.types[i]
        self.values += 1
        if self.scan:
            self.stored.append((i, val, mn, mx))
        else:
            self.pending.append((etype, val, mn, mx))
        if etype in self.cq.end and val[0]:
            self.add_result(val, mn, mx)

    def add_result(self, val: list, mn: list, mx: list) -> None:
        for j in range(self.width):
            self.R[j] += val[j]
        if self.m:
            _mins(self.Rmin, mn)
            _maxs(self.Rmax, mx)

    def process(self, i: int) -> None:
        """GRETA on one matched event."""
        self.advance(self.scope.ts[i])
        val, mn, mx = self.value(i, self.predecessors(i))
        self.record(i, val, mn, mx)

    def emit(self, acc: AggAccumulator) -> None:
        """Add this scope's result (if any trend) to the query's accumulator."""
        if not self.R[0]:
            return
        per = {}
        for j, target in enumerate(self.cq.targets):
            s = self.R[1 + self.m + j]
            if isinstance(s, Fraction):
                s = int(s) if s.denominator == 1 and not self._float_attr(target) else float(s)
            per[target] = (self.R[1 + j], s, self.Rmin[j], self.Rmax[j])
        acc.add(self.scope.group, self.scope.window, self.R[0], per)

    def _float_attr(self, target) -> bool:
        attr = target[1]
        return attr is not None and attr in self.scope.df.columns and \
            pd.api.types.is_float_dtype(self.scope.df[attr])


def _mins(dst: list, src: list) -> None:
    for j, v in enumerate(src):
        if v is not None and (dst[j] is None or v < dst[j]):
            dst[j] = v


def _maxs(dst: list, src: list) -> None:
    for j, v in enumerate(src):
        if v is not None and (dst[j] is None or v > dst[j]):
            dst[j] = v


def greta_scope(cq: CompiledQuery, scope: Scope) -> QueryState:
    """Run GRETA for one query over one scope; returns the final state (results and counters)."""
    st = QueryState(cq, scope)
    for i in np.flatnonzero(scope.masks[cq.name]).tolist():
        st.process(i)
    return st


def greta_class(cls: SharingClass, scope: Scope, accs: dict[str, AggAccumulator], metrics: dict) -> None:
    """GRETA for every query of a class on one scope (the non-shared plan)."""
    for cq in cls.queries:
        st = greta_scope(cq, scope)
        st.emit(accs[cq.name])
        metrics["propagations"] = metrics.get("propagations", 0) + st.propagations
        metrics["values"] = metrics.get("values", 0) + st.values


def run_local(workload, events: pd.DataFrame, params: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """GRETA over a whole stream in-process (no Spark): results table and operation counters."""
    start = time.perf_counter()
    classes = compile_workload(workload, params)
    accs = {cq.name: AggAccumulator(cq.query) for cls in classes for cq in cls.queries}
    metrics: dict = {"propagations": 0, "values": 0}
    for cls in classes:
        for key, k, part in scopes(cls, events):
            greta_class(cls, Scope(cls, part, key, k), accs, metrics)
    rows = [r for acc in accs.values() for r in acc.rows()]
    metrics["operations"] = metrics["propagations"]
    metrics["time_s"] = time.perf_counter() - start
    return results_frame(rows), metrics
