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

import pandas as pd

from cepopt.executor.partitions import PartitionClass, block_bounds, empty_partials, partial_rows
from cepopt.executor.results import aggregate_label, partition_attrs
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
    #: per class, the indexes of its queries in ``queries``
    members: tuple[tuple[int, ...], ...]

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        """Partials and metrics of class ``index`` on one partition (one key value, one block)."""
        from cepopt.executor.sharon_kernel import sharon_partition

        start, cpu = time.perf_counter(), time.process_time()
        cls = self.classes[index]
        queries = [self.queries[i] for i in self.members[index]]
        key = {a: (events[a].iloc[0] if len(events) and a in events.columns else None) for a in cls.keys}
        lo, hi = block_bounds(cls, block)
        accs, ops = sharon_partition(queries, self.plan, events, key)
        rows = []
        for q in queries:
            for (group, window), (cnt, per) in accs[q.name].cells.items():
                if cnt > 0 and lo <= window < hi:
                    rows.extend(_partials(q, group, window, cnt, per))
        partials = partial_rows(rows) if rows else empty_partials()
        metrics = {"update": int(ops["update"]), "combine": int(ops["combine"]), "events": int(len(events)),
                   "kernel_s": time.perf_counter() - start, "kernel_cpu_s": time.process_time() - cpu,
                   "partitions": 1}
        return partials, metrics


def _partials(q: Query, group: str, window: int, cnt: int, per: dict) -> list[tuple]:
    """Partial rows of one (query, group, window) cell of an accumulator."""
    out = []
    for agg in q.aggregates:
        label = aggregate_label(agg)
        if agg.ref is None:
            out.append((q.name, group, window, label, "sum", int(cnt)))
            continue
        c, s, lo, hi = per[(agg.ref, agg.attr)]
        if agg.func == "COUNT":
            out.append((q.name, group, window, label, "sum", int(c)))
        elif agg.func == "SUM":
            out.append((q.name, group, window, label, "sum", s))
        elif agg.func == "AVG":
            if c > 0:
                out.append((q.name, group, window, label, "avg", s, int(c)))
        elif agg.func in ("MIN", "MAX"):
            v = lo if agg.func == "MIN" else hi
            if v is not None:
                out.append((q.name, group, window, label, agg.func.lower(), v))
    return out


def compile_sharon(problem, plan, *, windows_per_block: int | None = WINDOWS_PER_BLOCK) -> CompiledSharon:
    """Compile ``plan`` (a SharonPlan; None or the empty plan: Non-Shared) of ``problem``'s workload.

    ``windows_per_block``: K, the windows one partition computes (None or 0: one partition per key).
    Raises CepoptError when the plan is invalid for the workload (overlapping shared patterns).
    """
    from cepopt.executor.sharon_kernel import plan_segments

    queries = tuple(problem.workload.queries)
    plan_segments(queries, plan)  # an invalid plan fails here, on the driver
    groups: dict[tuple, list[int]] = {}
    for i, q in enumerate(queries):
        groups.setdefault(partition_attrs(q), []).append(i)
    classes = tuple(_partition_class([queries[i] for i in idx], keys, windows_per_block)
                    for keys, idx in groups.items())
    return CompiledSharon(queries, plan, classes, tuple(tuple(idx) for idx in groups.values()))
