"""What the trend kernels (executor/greta.py, hamlet_kernel.py, gloria_kernel.py) read and return
for one partition's layout (:func:`cepopt.hamlet.scope.class_layout`).

:func:`kernel_inputs` turns a layout into event arrays, query tables and attribute columns;
:func:`exact_run` runs a kernel over residue lanes (:mod:`cepopt.executor.exact`) until the lanes
cover its results: a run whose shadow lane shows results beyond the lanes' range runs again with
enough lanes (past 2^1000, where the float shadow bounds nothing, the lanes come from the log-space
bound of :mod:`cepopt.executor.trend_bound`, a proof at any size);
:func:`partial_results` reads the lanes back as exact partial rows (executor/partitions.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cepopt.executor.exact import attribute_column, attribute_lanes, crt, moduli, needed_lanes, scaled_value
from cepopt.executor.greta import COUNTERS, new_state
from cepopt.executor.partitions import empty_partials
from cepopt.executor.results import int_text
from cepopt.executor.trend_bound import results_log2_bound
from cepopt.hamlet.scope import OP_CODES

__all__ = ["FIRST_LANES", "KernelInputs", "counter_metrics", "exact_run", "kernel_inputs", "kernel_state",
           "partial_results"]

#: residue lanes of a class's first run (about 50 bits); later runs start from the last run's need
FIRST_LANES = 2


# ---------------------------------------------------------------------------------------------
# Kernel inputs from a layout
# ---------------------------------------------------------------------------------------------


@dataclass
class KernelInputs:
    """What the compiled kernels read of one layout: event arrays, query tables, attributes."""

    layout: Any
    ev: tuple
    qt: tuple
    attrs: list                     # attribute names of the slots
    cols: list                      # AttrColumn per slot
    width: int
    targets: int

    @property
    def minmax(self) -> int:
        """Columns of the kernels' MIN/MAX ranks: the targets when some query has a MIN or MAX, else 0."""
        return self.targets if any(cq.minmax for cq in self.layout.cls.queries) else 0

    def attr_tables(self, mods: np.ndarray) -> tuple:
        nsrc = len(self.layout.frame)
        lanes = len(mods)
        a = max(len(self.cols), 1)
        alanes = np.zeros((a, nsrc, lanes))
        nonzero = np.zeros((a, nsrc), dtype=bool)
        rank = np.full((a, nsrc), -1, dtype=np.int64)
        for s, col in enumerate(self.cols):
            attribute_lanes(col, mods, out=alanes[s])
            nonzero[s] = col.present & (col.shadow != 0)
            rank[s] = col.rank
        return alanes, rank, nonzero


def kernel_inputs(layout) -> KernelInputs:
    """Event arrays (``ev``), query tables (``qt``) and attribute columns of a layout."""
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
    return KernelInputs(layout, ev, qt, attrs, cols, 1 + 2 * mmax, mmax)


# ---------------------------------------------------------------------------------------------
# Exact runs: lanes from the shadow's bound
# ---------------------------------------------------------------------------------------------


def _shadow_log2(inp: KernelInputs, out: np.ndarray) -> float | None:
    """log2 of a bound of every result magnitude in integer units from the shadow lane, or None when
    the shadow is past 2^1000 (or overflowed): it then bounds nothing, and the log kernel must."""
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
    # float sums and products of non-negative terms: relative error far below 2^-20 (needed_lanes
    # keeps a spare bit besides)
    return 0.0 if best == -math.inf else best + 1e-6


def _outputs(inp: KernelInputs, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Result lanes ``out[scope, q]`` (width x lanes) and MIN/MAX ranks ``out_mm[0|1, scope, q]``."""
    s, k = inp.layout.scopes, len(inp.layout.cls.queries)
    return np.zeros((s, k, inp.width, lanes)), np.full((2, s, k, max(inp.targets, 1)), -1, dtype=np.int64)


def kernel_state(inp: KernelInputs, lanes: int) -> tuple:
    lay = inp.layout
    scan = bool(inp.qt[6].any())
    stored = int(np.diff(lay.scope_start).max(initial=0)) if scan else 0
    return new_state(len(lay.cls.queries), len(lay.type_names), inp.width, lanes, inp.minmax, stored)


def exact_run(inp: KernelInputs, kernel, first_lanes: int) -> tuple:
    """``kernel(mods, one, at, out, out_mm, counters)`` with enough lanes for exact results:
    (out, out_mm, counters, lanes). The bound comes from the run's shadow lane while it is below
    2^1000, else from the log-space GRETA bound (:mod:`cepopt.executor.trend_bound`, computed once)."""
    lanes = max(1, first_lanes)
    log_bound = None
    while True:
        mods = moduli(lanes)
        out, omm = _outputs(inp, lanes + 1)
        counters = np.zeros(len(COUNTERS), dtype=np.int64)
        kernel(mods, np.ones(lanes + 1), inp.attr_tables(mods), out, omm, counters)
        bound = _shadow_log2(inp, out)
        if bound is None:
            if log_bound is None:
                log_bound = results_log2_bound(inp)
            bound = log_bound
        need = needed_lanes(bound)
        if need <= lanes:
            return out, omm, counters, lanes
        lanes = need


# ---------------------------------------------------------------------------------------------
# Results as partial rows
# ---------------------------------------------------------------------------------------------


def _aggregate_specs(inp: KernelInputs, q: int) -> list[tuple]:
    """Per aggregate of query q: (label, kind, target j, attribute column); kind "count" (COUNT(*)),
    "countE", "sum", "avg", "min" or "max"."""
    from cepopt.executor.results import aggregate_label

    cq = inp.layout.cls.queries[q]
    specs = []
    for agg in cq.query.aggregates:
        label = aggregate_label(agg)
        if agg.ref is None:
            specs.append((label, "count", -1, None))
            continue
        j = cq.targets.index((agg.ref, agg.attr))
        col = inp.cols[inp.attrs.index(agg.attr)] if agg.attr is not None else None
        kind = "countE" if agg.func == "COUNT" else agg.func.lower()
        specs.append((label, kind, j, col))
    return specs


def _text(value: Any) -> str:
    """A partial value as partials carry it (executor/partitions.py): an int in decimal."""
    if type(value) is int:
        return int_text(value)
    from cepopt.executor.partitions import _text as text

    return text(value)


def _aggregate_column(label: str, kind: str, j: int, m: int, col, vals: np.ndarray, mm: np.ndarray
                      ) -> tuple[list, list]:
    """(value, weight) texts of one aggregate of one query over its result rows: ``vals`` the exact
    values (object[rows, width]), ``mm`` the MIN/MAX ranks; None where the row has no partial."""
    if kind == "count":
        return list(map(int_text, vals[:, 0].tolist())), [""] * len(vals)
    if kind == "countE":
        return list(map(int_text, vals[:, 1 + j].tolist())), [""] * len(vals)
    if kind in ("sum", "avg"):
        totals = [_text(scaled_value(int(v), col.emin, col.is_float)) for v in vals[:, 1 + m + j].tolist()]
        if kind == "sum":
            return totals, [""] * len(vals)
        counts = vals[:, 1 + j].tolist()
        if col.is_float and any(t in ("inf", "-inf") for t in totals):
            from cepopt.errors import CepoptError

            raise CepoptError(f"{label}: the sum of a float column over the trends is past the float range (counts "
                              "past about 2^1000); AVG of such a column is not supported, its SUM is +-inf")
        return [t if c > 0 else None for t, c in zip(totals, counts, strict=True)], [int_text(c) for c in counts]
    return [_text(col.values[r]) if r >= 0 else None for r in mm.tolist()], [""] * len(vals)


def partial_results(inp: KernelInputs, out: np.ndarray, omm: np.ndarray, queries: list[int], lo: int, hi: float,
              ) -> pd.DataFrame:
    """Partial rows (module docstring of executor/partitions.py) of ``queries`` in the windows [lo, hi),
    built as the partials' text columns directly: per (query, aggregate) one column of its result
    rows (scopes with a non-zero count), then ordered by scope, query and aggregate."""
    from cepopt.executor.partitions import PARTIAL_COLUMNS
    from cepopt.executor.results import format_group

    lay = inp.layout
    cls = lay.cls
    keep = np.flatnonzero((lay.scope_window >= lo) & (lay.scope_window < hi))
    if not len(keep) or not queries:
        return empty_partials()
    lanes = out[np.ix_(keep, queries)][..., 1:]
    values = np.array(crt(lanes), dtype=object).reshape(lanes.shape[:-1])
    gidx = [cls.partition.index(a) for a in cls.group]
    texts: dict = {}
    group_of = []
    for s in keep.tolist():
        key = lay.scope_key[s]
        text = texts.get(key)
        if text is None:
            text = texts[key] = format_group(cls.group, [key[i] for i in gidx])
        group_of.append(text)
    window_of = lay.scope_window[keep].astype(np.int64)
    nz = np.asarray(values[:, :, 0] != 0, dtype=bool)
    parts: list = []
    for qi, q in enumerate(queries):
        rows = np.flatnonzero(nz[:, qi])
        if not len(rows):
            continue
        name, m = cls.queries[q].name, len(cls.queries[q].targets)
        vals = values[rows, qi]
        for a, (label, kind, j, col) in enumerate(_aggregate_specs(inp, q)):
            mm = omm[0 if kind == "min" else 1, keep[rows], q, j] if kind in ("min", "max") else None
            value, weight = _aggregate_column(label, kind, j, m, col, vals, mm)
            op = "avg" if kind == "avg" else kind if kind in ("min", "max") else "sum"
            parts.append((rows, qi, a, name, label, op, value, weight))
    if not parts:
        return empty_partials()
    sizes = [len(p[0]) for p in parts]

    def per_part(i: int, dtype=object) -> np.ndarray:
        return np.repeat(np.array([p[i] for p in parts], dtype=dtype), sizes)

    srow = np.concatenate([p[0] for p in parts])
    value = np.array([v for p in parts for v in p[6]], dtype=object)
    weight = np.array([w for p in parts for w in p[7]], dtype=object)
    order = np.lexsort((per_part(2, np.int64), per_part(1, np.int64), srow))
    order = order[value[order] != None]  # noqa: E711 (element-wise: the rows without a partial)
    if not len(order):
        return empty_partials()
    columns = (per_part(3)[order], np.array(group_of, dtype=object)[srow[order]], window_of[srow[order]],
               per_part(4)[order], per_part(5)[order], value[order], weight[order])
    return pd.DataFrame(dict(zip(PARTIAL_COLUMNS, columns, strict=True)))


def counter_metrics(counters: np.ndarray, names: tuple[str, ...]) -> dict:
    return {name: int(counters[COUNTERS.index(name)]) for name in names}
