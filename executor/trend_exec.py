"""The trend executors behind the partition-kernel protocol (executor/partitions.py).

:func:`compile_hamlet` (GRETA = the non-shared plan; static, dynamic, every policy, a ``replay`` plan)
and :func:`compile_gloria` compile ``(problem, plan)`` once, on the driver, into a picklable object
with ``classes`` (one :class:`~cepopt.executor.partitions.PartitionClass` per sharing class) and
``run(index, events, block) -> (partials, metrics)``, the kernel of one partition: the events of one
value of the class's keys (the partition attributes; several values are fine too) and one block of
``windows_per_block`` consecutive windows. ``run`` lays the events out per scope
(:func:`cepopt.hamlet.scope.class_layout`: windows of the block, partitions, time order, query masks,
all vectorized), runs the family's compiled kernel over every scope at once and returns the partial
aggregates of the block's windows (:func:`~cepopt.executor.partitions.partial_rows`) and counters
that add up over partitions.

Exact values: the kernels compute residue lanes (:mod:`cepopt.executor.exact`); a run whose shadow
lane shows results beyond the lanes' range runs again with enough lanes (a shadow that overflows the
float range is recomputed by GRETA with scaled counts). The lanes of the last run of a class are the
first guess of the next.

After summing the metrics of every partition the driver calls ``finish(metrics)``: the derived
counters (``operations``; Hamlet's ``fastpath_operations``) and, for a replayed Hamlet plan, the check
that the stream had exactly the bursts the plan decided (CepoptError). A replayed plan run on a burst
it did not decide raises CepoptError from ``run``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cepopt.executor.partitions import PartitionClass, block_bounds, empty_partials, partial_rows

__all__ = ["DEFAULT_WINDOWS_PER_BLOCK", "GloriaCompiled", "HamletCompiled", "compile_gloria", "compile_hamlet",
           "run_all"]

#: K, the windows one partition computes, unless the class's windows need more (K >= ceil(W/S))
DEFAULT_WINDOWS_PER_BLOCK = 64
#: residue lanes of a class's first run (about 50 bits); later runs start from the last run's need
FIRST_LANES = 2


def _columns(cls) -> tuple[str, ...]:
    """``ts``, ``type`` and every attribute the kernels read: partition keys, filters, edge
    predicates, aggregate targets."""
    cols: dict[str, None] = {"ts": None, "type": None}
    cols.update(dict.fromkeys(cls.partition))
    for cq in cls.queries:
        cols.update(dict.fromkeys(attr for _t, attr, _op, _v in cq.filters))
        for ep in cq.edges:
            cols.update(dict.fromkeys((ep.left, ep.right)))
        cols.update(dict.fromkeys(attr for _ref, attr in cq.targets if attr is not None))
    return tuple(cols)


def _partition_class(cls, windows_per_block: int | None) -> PartitionClass:
    length, slide = float(cls.length), float(cls.slide)
    k = None
    if windows_per_block is not None:
        k = max(int(windows_per_block), -int(-length // slide))  # K >= ceil(W / S)
    return PartitionClass(tuple(sorted(cls.types)), _columns(cls), tuple(cls.partition), length, slide, k)


# ---------------------------------------------------------------------------------------------
# Kernel inputs from a layout
# ---------------------------------------------------------------------------------------------


@dataclass
class _Inputs:
    """What the compiled kernels read of one layout: event arrays, query tables, attributes."""

    layout: Any
    ev: tuple
    qt: tuple
    attrs: list                     # attribute names of the slots
    cols: list                      # AttrColumn per slot
    width: int
    targets: int

    def attr_tables(self, mods: np.ndarray) -> tuple:
        from cepopt.executor.exact import attribute_lanes

        nsrc = len(self.layout.frame)
        lanes = len(mods)
        a = max(len(self.cols), 1)
        alanes = np.zeros((a, nsrc, lanes))
        nonzero = np.zeros((a, nsrc), dtype=bool)
        rank = np.full((a, nsrc), -1, dtype=np.int64)
        for s, col in enumerate(self.cols):
            alanes[s] = attribute_lanes(col, mods)
            nonzero[s] = col.present & (col.shadow != 0)
            rank[s] = col.rank
        return alanes, rank, nonzero


def _inputs(layout) -> _Inputs:
    """Event arrays (``ev``), query tables (``qt``) and attribute columns of a layout."""
    from cepopt.executor.exact import attribute_column
    from cepopt.hamlet.scope import OP_CODES

    cls = layout.cls
    code = {t: i for i, t in enumerate(layout.type_names)}
    k, nt, n = len(cls.queries), len(layout.type_names), layout.n
    attrs: list[str] = []
    for cq in cls.queries:
        for _ref, attr in cq.targets:
            if attr is not None and attr not in attrs:
                attrs.append(attr)
    mmax = max((len(cq.targets) for cq in cls.queries), default=0)
    ptr = np.zeros((k, nt + 1), dtype=np.int64)
    ptv: list[int] = []
    ptm = np.zeros((k, nt, nt), dtype=bool)
    flags = np.zeros((2, k, nt), dtype=bool)
    tgt = np.full((k, max(mmax, 1), 3), -1, dtype=np.int64)
    mq = np.zeros(k, dtype=np.int64)
    scan = np.zeros(k, dtype=bool)
    e_ptr = np.zeros(k + 1, dtype=np.int64)
    edges: list = []
    for q, cq in enumerate(cls.queries):
        pt = cq.pt_map
        for t in range(nt):
            ptr[q, t] = len(ptv)
            preds = sorted(code[u] for u in pt.get(layout.type_names[t], ()) if u in code)
            ptv.extend(preds)
            ptm[q, t, preds] = True
            flags[0, q, t] = layout.type_names[t] in cq.start
            flags[1, q, t] = layout.type_names[t] in cq.end
        ptr[q, nt] = len(ptv)
        mq[q] = len(cq.targets)
        for j, ((_ref, attr), ttype) in enumerate(zip(cq.targets, cq.target_types, strict=True)):
            tgt[q, j] = (code.get(ttype, -1), attrs.index(attr) if attr is not None else -1, (_ref, attr) in cq.minmax)
        scan[q] = bool(cq.edges)
        edges.extend(cq.edges)
        e_ptr[q + 1] = len(edges)
    ne = len(edges)
    etab = np.array([(code.get(ep.src, -1), code.get(ep.dst, -1), OP_CODES[ep.op]) for ep in edges],
                    dtype=np.int64).reshape(ne, 3)
    ecodes = np.zeros((ne, 4, n), dtype=np.int64)
    for e, ep in enumerate(edges):
        ecodes[e] = np.stack(layout.edge_codes(ep.left, ep.right))
    qt = (ptr, np.array(ptv, dtype=np.int64), ptm, flags, tgt, mq, scan, e_ptr, etab, ecodes)
    frame = layout.frame
    cols = []
    for attr in attrs:
        if attr in frame.columns:
            cols.append(attribute_column(frame[attr].to_numpy(), pd.api.types.is_float_dtype(frame[attr])))
        else:
            cols.append(attribute_column(np.full(len(frame), None, dtype=object), False))
    ev = (layout.tcode, layout.tie, layout.src, layout.masks)
    return _Inputs(layout, ev, qt, attrs, cols, 1 + 2 * mmax, mmax)


# ---------------------------------------------------------------------------------------------
# Exact runs: lanes from the shadow's bound
# ---------------------------------------------------------------------------------------------


def _bound_log2(inp: _Inputs, out: np.ndarray, scale: int) -> float | None:
    """log2 of the largest result magnitude in integer units (None when the shadow overflowed)."""
    shadow = out[..., 0]
    if not np.all(np.isfinite(shadow)) or (shadow.size and shadow.max() > 2.0 ** 1000):
        return None
    best = -math.inf
    cls = inp.layout.cls
    for q, cq in enumerate(cls.queries):
        m = len(cq.targets)
        for w in range(1 + m):
            top = float(shadow[:, q, w].max(initial=0.0))
            if top > 0:
                best = max(best, math.log2(top))
        for j, (_ref, attr) in enumerate(cq.targets):
            top = float(shadow[:, q, 1 + m + j].max(initial=0.0))
            if top > 0 and attr is not None:
                best = max(best, math.log2(top) - inp.cols[inp.attrs.index(attr)].emin)
    if best == -math.inf:
        return 0.0 if scale == 0 else scale - 990.0
    # float sums of non-negative terms: relative error far below 2^-20; underflowed terms are tiny
    return max(best + scale + 1e-6, scale - 990.0) if scale else best + 1e-6


def _scaled_shadow_bound(inp: _Inputs, st_factory) -> float:
    """The results' bound when the plan's own shadow overflowed: GRETA on every query with counts
    scaled by 2^-s, s = 1000, 2000, ... until the float range holds them."""
    from cepopt.executor.exact import moduli
    from cepopt.executor.greta import COUNTERS, greta_kernel

    mods = moduli(0)
    at = inp.attr_tables(mods)
    k = len(inp.layout.cls.queries)
    scale = 1000
    while True:
        out, omm = _outputs(inp, 1)
        one = np.array([2.0 ** -scale])
        greta_kernel(inp.layout.scope_start, inp.ev, inp.qt, at, np.arange(k), st_factory(1), mods, one, out, omm,
                     np.zeros(len(COUNTERS), dtype=np.int64))
        bound = _bound_log2(inp, out, scale)
        if bound is not None:
            return bound
        scale += 1000


def _outputs(inp: _Inputs, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Result lanes ``out[scope, q]`` (width x lanes) and MIN/MAX ranks ``out_mm[0|1, scope, q]``."""
    s, k = inp.layout.scopes, len(inp.layout.cls.queries)
    return np.zeros((s, k, inp.width, lanes)), np.full((2, s, k, max(inp.targets, 1)), -1, dtype=np.int64)


def _new_state(inp: _Inputs, lanes: int) -> tuple:
    from cepopt.executor.greta import new_state

    lay = inp.layout
    scan = bool(inp.qt[6].any())
    stored = int(np.diff(lay.scope_start).max(initial=0)) if scan else 0
    return new_state(len(lay.cls.queries), len(lay.type_names), inp.width, lanes, inp.targets, stored)


def exact_run(inp: _Inputs, kernel, first_lanes: int) -> tuple:
    """``kernel(mods, one, at, out, out_mm, counters)`` with enough lanes for exact results:
    (out, out_mm, counters, lanes)."""
    from cepopt.executor.exact import moduli, needed_lanes
    from cepopt.executor.greta import COUNTERS

    lanes = max(1, first_lanes)
    while True:
        mods = moduli(lanes)
        out, omm = _outputs(inp, lanes + 1)
        counters = np.zeros(len(COUNTERS), dtype=np.int64)
        kernel(mods, np.ones(lanes + 1), inp.attr_tables(mods), out, omm, counters)
        bound = _bound_log2(inp, out, 0)
        if bound is None:
            bound = _scaled_shadow_bound(inp, lambda ln: _new_state(inp, ln))
        need = needed_lanes(bound)
        if need <= lanes:
            return out, omm, counters, lanes
        lanes = need


# ---------------------------------------------------------------------------------------------
# Results as partial rows
# ---------------------------------------------------------------------------------------------


def _partials(inp: _Inputs, out: np.ndarray, omm: np.ndarray, queries: list[int], lo: int, hi: float,
              ) -> pd.DataFrame:
    """Partial rows (module docstring of executor/partitions.py) of ``queries`` in the windows [lo, hi)."""
    from cepopt.executor.exact import crt, scaled_value
    from cepopt.executor.results import aggregate_label, format_group

    lay = inp.layout
    cls = lay.cls
    keep = [s for s in range(lay.scopes) if lo <= lay.scope_window[s] < hi]
    if not keep or not queries:
        return empty_partials()
    lanes = out[np.ix_(keep, queries)][..., 1:]
    values = np.array(crt(lanes), dtype=object).reshape(lanes.shape[:-1])
    gidx = [cls.partition.index(a) for a in cls.group]
    rows = []
    for si, s in enumerate(keep):
        key = lay.scope_key[s]
        group = format_group(cls.group, [key[i] for i in gidx])
        window = int(lay.scope_window[s])
        for qi, q in enumerate(queries):
            cq = cls.queries[q]
            count = values[si, qi, 0]
            if count == 0:
                continue
            m = len(cq.targets)
            for agg in cq.query.aggregates:
                label = aggregate_label(agg)
                if agg.ref is None:
                    rows.append((cq.name, group, window, label, "sum", int(count)))
                    continue
                j = cq.targets.index((agg.ref, agg.attr))
                c = int(values[si, qi, 1 + j])
                col = inp.cols[inp.attrs.index(agg.attr)] if agg.attr is not None else None
                if agg.func == "COUNT":
                    rows.append((cq.name, group, window, label, "sum", c))
                elif agg.func in ("SUM", "AVG"):
                    total = scaled_value(int(values[si, qi, 1 + m + j]), col.emin, col.is_float)
                    if agg.func == "SUM":
                        rows.append((cq.name, group, window, label, "sum", total))
                    elif c > 0:
                        rows.append((cq.name, group, window, label, "avg", total, c))
                else:
                    r = omm[0 if agg.func == "MIN" else 1, s, q, j]
                    if r >= 0:
                        rows.append((cq.name, group, window, label, agg.func.lower(), col.values[r]))
    return partial_rows(rows) if rows else empty_partials()


def _metrics(counters: np.ndarray, names: tuple[str, ...]) -> dict:
    from cepopt.executor.greta import COUNTERS

    return {name: int(counters[COUNTERS.index(name)]) for name in names}


def _empty_run(names: tuple[str, ...]) -> tuple[pd.DataFrame, dict]:
    return empty_partials(), dict.fromkeys(names, 0)


# ---------------------------------------------------------------------------------------------
# Hamlet / GRETA
# ---------------------------------------------------------------------------------------------

GRETA_METRICS = ("propagations", "values")
HAMLET_METRICS = ("propagations", "values", "snapshots", "snapshot_reads", "evaluations", "bursts",
                  "shared_bursts", "graphlets", "pred_edges", "shared_edges", "snapshot_edges")


@dataclass
class HamletCompiled:
    """A Hamlet plan (or GRETA, ``policy`` None) compiled for the partition kernels."""

    sharing: tuple                      # the workload's SharingClasses (cepopt.hamlet.problem)
    policy: Any                         # a cepopt.hamlet.policy.Policy, None = GRETA
    classes: tuple[PartitionClass, ...] = field(default=())
    lanes: dict = field(default_factory=dict, repr=False, compare=False)
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def run(self, index: int, events: pd.DataFrame, block: int | None, *, decisions: list | None = None,
            trace: list | None = None) -> tuple[pd.DataFrame, dict]:
        """The kernel of one partition (module docstring); ``decisions`` collects the policy's
        Decision per burst, ``trace`` every snapshot created as (kind, type, {query: count})."""
        from cepopt.hamlet.scope import class_layout

        start = time.perf_counter()
        names = GRETA_METRICS if self.policy is None else HAMLET_METRICS
        cls, pc = self.sharing[index], self.classes[index]
        lo, hi = block_bounds(pc, block)
        layout = class_layout(cls, events, (lo, hi))
        if not layout.n:
            partials, metrics = _empty_run(names)
        else:
            inp = _inputs(layout)
            if self.policy is None:
                out, omm, counters = self._greta(index, inp)
                metrics = _metrics(counters, names)
            else:
                from cepopt.executor.hamlet_kernel import hamlet_run

                out, omm, counters, extra = hamlet_run(self, index, inp, decisions, trace)
                metrics = {**_metrics(counters, names), **extra}
            partials = _partials(inp, out, omm, list(range(len(cls.queries))), lo, hi)
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = int(layout.n)
        if self.policy is not None:
            metrics.setdefault("predicted", 0.0)
        return partials, metrics

    def _greta(self, index: int, inp: _Inputs) -> tuple:
        from cepopt.executor.greta import greta_kernel

        k = len(inp.layout.cls.queries)

        def kernel(mods, one, at, out, omm, counters):
            greta_kernel(inp.layout.scope_start, inp.ev, inp.qt, at, np.arange(k), _new_state(inp, len(mods)), mods,
                         one, out, omm, counters)

        out, omm, counters, lanes = exact_run(inp, kernel, self.lanes.get(index, FIRST_LANES))
        self.lanes[index] = lanes
        return out, omm, counters

    def finish(self, metrics: dict) -> dict:
        """Derived counters of the summed metrics (``operations``, ``fastpath_operations``); raises
        CepoptError when a replayed plan decided another number of bursts than the stream has."""
        if self.policy is None:
            metrics["operations"] = metrics.get("propagations", 0)
            return metrics
        from cepopt.executor.hamlet_kernel import finish_metrics

        self.policy.finished(metrics.get("bursts", 0))
        finish_metrics(metrics)
        metrics["policy"] = self.policy.name
        return metrics


def compile_hamlet(problem: Any, plan: Any = None, *, windows_per_block: int | None = DEFAULT_WINDOWS_PER_BLOCK,
                   ) -> HamletCompiled:
    """Compile a Hamlet plan (a HamletPlan or a policy name; None or "greta": GRETA, no bursts)
    for ``problem`` (a HamletProblem, or anything with ``classes`` / a ``workload``).
    ``windows_per_block``: K (None: the whole stream of a key is one partition)."""
    from cepopt.hamlet.plan import plan_policy
    from cepopt.hamlet.problem import compile_workload

    sharing = getattr(problem, "classes", None)
    if sharing is None:
        sharing = compile_workload(problem.workload)
    policy = None if plan is None or plan == "greta" else plan_policy(problem, plan)
    classes = tuple(_partition_class(cls, windows_per_block) for cls in sharing)
    return HamletCompiled(tuple(sharing), policy, classes)


# ---------------------------------------------------------------------------------------------
# Gloria
# ---------------------------------------------------------------------------------------------

GLORIA_METRICS = ("propagations", "evaluations", "snapshots", "values", "reused")


@dataclass
class GloriaCompiled:
    """A Gloria plan (None = unshared) compiled for the partition kernels."""

    sharing: tuple
    plan: Any
    classes: tuple[PartitionClass, ...] = field(default=())
    #: the queries the Gloria kernel runs with GRETA (other aggregates than COUNT(*), edge predicates)
    greta_queries: tuple[str, ...] = ()
    lanes: dict = field(default_factory=dict, repr=False, compare=False)

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        from cepopt.hamlet.scope import class_layout

        start = time.perf_counter()
        cls, pc = self.sharing[index], self.classes[index]
        lo, hi = block_bounds(pc, block)
        layout = class_layout(cls, events, (lo, hi))
        if not layout.n:
            partials, metrics = _empty_run(GLORIA_METRICS)
        else:
            from cepopt.executor.gloria_kernel import gloria_run

            inp = _inputs(layout)
            out, omm, counters = gloria_run(self, index, inp)
            metrics = _metrics(counters, GLORIA_METRICS)
            partials = _partials(inp, out, omm, list(range(len(cls.queries))), lo, hi)
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = int(layout.n)
        return partials, metrics

    def finish(self, metrics: dict) -> dict:
        """``operations`` = propagations (Eqs. 2-3) + evaluations (Eq. 4); ``greta_queries``."""
        metrics["operations"] = metrics.get("propagations", 0) + metrics.get("evaluations", 0)
        metrics["greta_queries"] = list(self.greta_queries)
        return metrics


def compile_gloria(problem: Any, plan: Any = None, *, windows_per_block: int | None = DEFAULT_WINDOWS_PER_BLOCK,
                   ) -> GloriaCompiled:
    """Compile a Gloria plan (cepopt.gloria.plan.GloriaPlan; None = unshared) for ``problem`` (a
    GloriaProblem or anything with a ``workload``): one class per (slide, partition attributes),
    windows of one slide but different lengths together (gloria.md §10 A13)."""
    from cepopt.hamlet.problem import compile_workload

    sharing = compile_workload(problem.workload, mixed_lengths=True)
    greta = tuple(sorted(cq.name for cls in sharing for cq in cls.queries
                         if cq.edges or any(not a.is_count_star for a in cq.query.aggregates)))
    classes = tuple(_partition_class(cls, windows_per_block) for cls in sharing)
    return GloriaCompiled(tuple(sharing), plan, classes, greta)


def run_all(compiled: Any, events: pd.DataFrame, **options) -> tuple[pd.DataFrame, dict]:
    """Every class of ``compiled`` on a whole pandas stream, one partition per class (block None):
    the in-process path of the kernels' ``run_local``; results table and finished metrics.
    ``options`` go to ``run`` (Hamlet: ``decisions``, ``trace``)."""
    from cepopt.executor.partitions import merge_partials

    parts = []
    metrics: dict = {}
    start = time.perf_counter()
    for index in range(len(compiled.classes)):
        partials, m = compiled.run(index, events, None, **options)
        parts.append(partials)
        for key, value in m.items():
            metrics[key] = metrics.get(key, 0) + value
    frame = pd.concat(parts, ignore_index=True) if parts else empty_partials()
    metrics = compiled.finish(metrics)
    metrics["time_s"] = time.perf_counter() - start
    return merge_partials(frame), metrics
