"""The Sharon executor in the partition-kernel protocol (:mod:`cepopt.executor.partitions`).

:func:`compile_sharon` turns ``(problem, plan)`` into a picklable :class:`CompiledSharon` on the
driver. Its ``classes`` are the queries' partition classes (same GROUP-BY and equivalence
attributes, sharon.md §7.1): the class reads its queries' event types and the columns their
partition attributes, filters and aggregates name; when every query of the class has a sliding or
tumbling window of one slide, with integral lengths and slide, the class is cut into window blocks of
K = max(``windows_per_block``, ceil(W/S)) windows (W the longest length), so blocks run in parallel
even without GROUP-BY. ``run(index, events, block)`` runs the Sharon kernel on one partition and
returns the partial aggregates of the windows of its block (COUNT/SUM as op ``sum``, MIN/MAX, AVG as
value = sum and weight = count) and the metrics ``update``, ``combine`` (the operation counts the
Sharon cost model predicts), ``events``, ``kernel_s``, ``kernel_cpu_s`` and ``partitions``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cepopt.executor.partitions import PartitionClass, block_bounds, empty_partials
from cepopt.executor.results import aggregate_label, format_group, group_attrs, partition_attrs
from cepopt.executor.sharon_kernel import KernelPlan, compile_plan, plan_segments, run_partition
from cepopt.model import Query

__all__ = ["CompiledSharon", "compile_sharon"]

#: default number of windows one partition computes (K of the window blocks)
WINDOWS_PER_BLOCK = 64


def _columns(queries: Sequence[Query]) -> tuple[str, ...]:
    cols: dict[str, None] = dict.fromkeys(["ts", "type"])
    for q in queries:
        for a in partition_attrs(q):
            cols.setdefault(a, None)
        for f in q.filters:
            cols.setdefault(f.attr, None)
        for a in q.aggregates:
            if a.attr is not None:
                cols.setdefault(a.attr, None)
    return tuple(cols)


def _integral(x: Any) -> bool:
    try:
        return float(x).is_integer()
    except (TypeError, ValueError):
        return False


def _partition_class(queries: Sequence[Query], keys: tuple[str, ...], windows_per_block: int | None
                     ) -> PartitionClass:
    """The class of ``queries``: blocked when their windows share one slide (integral lengths and slide)."""
    types = tuple(sorted({t for q in queries for t in q.pattern.event_types()}))
    cols = _columns(queries)
    windows = {q.window for q in queries}
    slides = {w.slide for w in windows}
    if not windows_per_block or len(slides) != 1 or None in slides:
        return PartitionClass(types, cols, keys)
    slide = next(iter(slides))
    length = max(w.length for w in windows)
    if not (_integral(slide) and _integral(length)) or slide <= 0:
        return PartitionClass(types, cols, keys)
    k = max(int(windows_per_block), int(math.ceil(length / slide)))
    return PartitionClass(types, cols, keys, float(length), float(slide), k)


@dataclass(frozen=True)
class CompiledSharon:
    """A Sharon plan compiled for the partition-kernel protocol (see the module docstring)."""

    queries: tuple[Query, ...]
    plan: Any
    classes: tuple[PartitionClass, ...]
    #: per class, the kernel's tables of its queries
    kernels: tuple[KernelPlan, ...]
    #: run the loops compiled (True), as Python (False), or by the partition's size (None)
    jit: bool | None = None

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        """Partials and metrics of class ``index`` on one partition (one key value, one block)."""
        start, cpu = time.perf_counter(), time.process_time()
        cls = self.classes[index]
        kp = self.kernels[index]
        key = [events[a].iloc[0] if len(events) and a in events.columns else None for a in cls.keys]
        res = run_partition(kp, events, jit=self.jit, windows=block_bounds(cls, block))
        groups = {}
        rows = []
        for qi, window, cnt, vals in res.rows:
            q = kp.queries[qi]
            if qi not in groups:
                attrs = group_attrs(q)
                groups[qi] = format_group(attrs, [key[cls.keys.index(a)] for a in attrs])
            rows.extend(_partials(q, groups[qi], window, cnt, vals))
        ops = res.ops
        partials = _partial_frame(rows) if rows else empty_partials()
        metrics = {"update": int(ops["update"]), "combine": int(ops["combine"]), "events": int(len(events)),
                   "kernel_s": time.perf_counter() - start, "kernel_cpu_s": time.process_time() - cpu,
                   "partitions": 1}
        return partials, metrics


def _text(v) -> str:
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def _partial_frame(rows: list[tuple]) -> pd.DataFrame:
    """The partials DataFrame of rows (query, group, window, aggregate, op, value[, weight]) (the format
    of :func:`cepopt.executor.partitions.partial_rows`, built column by column)."""
    cols = list(zip(*[r if len(r) == 7 else (*r, None) for r in rows], strict=True))
    return pd.DataFrame({
        "query": pd.Series(cols[0], dtype=object), "group": pd.Series(cols[1], dtype=object),
        "window": np.asarray(cols[2], dtype=np.int64), "aggregate": pd.Series(cols[3], dtype=object),
        "op": pd.Series(cols[4], dtype=object), "value": pd.Series([_text(v) for v in cols[5]], dtype=object),
        "weight": pd.Series(["" if w is None else _text(w) for w in cols[6]], dtype=object)})


def _partials(q: Query, group: str, window: int, cnt: int, vals: list) -> list[tuple]:
    """Partial rows of one (query, group, window) of a partition: one per aggregate with a value."""
    out = []
    for agg, v in zip(q.aggregates, vals, strict=True):
        label = aggregate_label(agg)
        if agg.func == "AVG":
            if v[1] > 0:
                out.append((q.name, group, window, label, "avg", v[0], v[1]))
        elif agg.func in ("MIN", "MAX"):
            if v is not None:
                out.append((q.name, group, window, label, agg.func.lower(), v))
        else:  # COUNT(*), COUNT(E), SUM
            out.append((q.name, group, window, label, "sum", v))
    return out


def compile_sharon(problem, plan, *, windows_per_block: int | None = WINDOWS_PER_BLOCK,
                   jit: bool | None = None) -> CompiledSharon:
    """Compile ``plan`` (a SharonPlan; None or the empty plan: Non-Shared) of ``problem``'s workload.

    ``windows_per_block``: K, the windows one partition computes (None or 0: one partition per key);
    ``jit``: run the kernel's loops compiled by numba (True), as Python (False), or by each
    partition's size (None: see :data:`cepopt.executor.sharon_kernel.JIT_WORK`). Raises CepoptError
    when the plan is invalid for the workload (overlapping shared patterns, different filters or
    windows on a shared pattern).
    """
    queries = tuple(problem.workload.queries)
    plan_segments(queries, plan)  # an invalid plan fails here, on the driver
    groups: dict[tuple, list[Query]] = {}
    for q in queries:
        groups.setdefault(partition_attrs(q), []).append(q)
    classes = tuple(_partition_class(qs, keys, windows_per_block) for keys, qs in groups.items())
    kernels = tuple(compile_plan(qs, plan) for qs in groups.values())
    return CompiledSharon(queries, plan, classes, kernels, jit)
