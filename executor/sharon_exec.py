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
from cepopt.executor.sharon_kernel import KernelPlan, PartitionResult, compile_plan, plan_segments, run_partition
from cepopt.model import Query

__all__ = ["CompiledSharon", "compile_sharon", "local_partitions", "run_local"]

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
    #: per class, what names its partials (see :class:`Labels`)
    labels: tuple[Labels, ...]
    #: run the loops compiled (True), as Python (False), or by the partition's size (None)
    jit: bool | None = None

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        """Partials and metrics of class ``index`` on one partition (one key value, one block)."""
        start, cpu = time.perf_counter(), time.process_time()
        cls = self.classes[index]
        kp = self.kernels[index]
        key = {a: events[a].iloc[0] if len(events) and a in events.columns else None for a in cls.keys}
        res = run_partition(kp, events, jit=self.jit, windows=block_bounds(cls, block))
        ops = res.ops
        partials = _partial_frame(self.labels[index], res, key)
        metrics = {"update": int(ops["update"]), "combine": int(ops["combine"]), "events": int(len(events)),
                   "kernel_s": time.perf_counter() - start, "kernel_cpu_s": time.process_time() - cpu,
                   "partitions": 1}
        return partials, metrics


def _texts(vals) -> np.ndarray:
    """Values as the partials' text: integers in decimal, floats as ``repr``."""
    if isinstance(vals, np.ndarray) and vals.dtype.kind in "iu":
        return vals.astype(str).astype(object)
    return np.asarray([str(v) if isinstance(v, int | np.integer) else repr(float(v)) for v in list(vals)],
                      dtype=object)


@dataclass(frozen=True)
class Labels:
    """The texts of a class's partials: per query its name, GROUP-BY attributes (as an index into
    ``group_attrs``) and per aggregate position its label and merge op."""

    names: np.ndarray           # object, per query
    group_of: np.ndarray        # per query: index into group_attrs
    group_attrs: tuple[tuple[str, ...], ...]
    labels: np.ndarray          # object (query, aggregate position)
    ops: np.ndarray             # object (query, aggregate position)

    @classmethod
    def of(cls, queries: Sequence[Query]) -> Labels:
        attrs = [group_attrs(q) for q in queries]
        distinct = tuple(dict.fromkeys(attrs))
        width = max([len(q.aggregates) for q in queries] + [1])
        labels = np.full((len(queries), width), "", dtype=object)
        ops = np.full((len(queries), width), "", dtype=object)
        for i, q in enumerate(queries):
            for a, agg in enumerate(q.aggregates):
                labels[i, a] = aggregate_label(agg)
                ops[i, a] = {"MIN": "min", "MAX": "max", "AVG": "avg"}.get(agg.func, "sum")
        return cls(np.asarray([q.name for q in queries], dtype=object),
                   np.asarray([distinct.index(a) for a in attrs], dtype=np.int64), distinct, labels, ops)


def _partial_frame(lab: Labels, res: PartitionResult, key: dict) -> pd.DataFrame:
    """The partials DataFrame (:data:`cepopt.executor.partitions.PARTIAL_COLUMNS`) of a partition's
    results: one row per (query, window, aggregate) with a value; COUNT/SUM as op ``sum``, MIN/MAX,
    AVG as value = sum and weight = count."""
    chunks = [c for c in res.aggregate_columns() if len(c[0])]
    if not chunks:
        return empty_partials()
    groups = np.asarray([format_group(g, [key.get(x) for x in g]) for g in lab.group_attrs], dtype=object)
    q = [res.query[idx] for idx, *_ in chunks]
    a = [np.full(len(idx), pos) for idx, pos, *_ in chunks]
    qs, pos = np.concatenate(q), np.concatenate(a)
    weights = [_texts(wt) if wt is not None else np.full(len(idx), "", dtype=object) for idx, _, _, wt in chunks]
    return pd.DataFrame({
        "query": lab.names[qs], "group": groups[lab.group_of[qs]],
        "window": np.concatenate([res.window[idx] for idx, *_ in chunks]).astype(np.int64),
        "aggregate": lab.labels[qs, pos], "op": lab.ops[qs, pos],
        "value": np.concatenate([_texts(vals) for _, _, vals, _ in chunks]), "weight": np.concatenate(weights)})


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
    return CompiledSharon(queries, plan, classes, kernels, tuple(Labels.of(qs) for qs in groups.values()), jit)


def local_partitions(compiled: CompiledSharon, events: pd.DataFrame):
    """The partitions of ``events`` as the engines make them, in pandas: per class, the rows of its event
    types and columns (missing columns as None), copied to the window blocks holding them, grouped by
    the class's keys and block. Yields (class index, events of one partition, block). For tests and the
    kernel-only benchmark; the engines have their own."""
    from cepopt.executor.partitions import window_blocks

    for i, cls in enumerate(compiled.classes):
        df = events[events["type"].isin(cls.types)].reset_index(drop=True)
        df = df.assign(**{c: None for c in cls.columns if c not in df.columns})[list(cls.columns)]
        blocked = cls.windows_per_block is not None
        if blocked:
            lo, hi = window_blocks(df["ts"].to_numpy(dtype=np.int64), cls)
            reps = np.maximum(0, hi - lo + 1)
            if (reps == 1).all():
                df = df.assign(_block=lo)
            else:  # sliding windows: an event goes to every block holding one of its windows
                blocks = [np.arange(a, b + 1) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
                df = df.loc[df.index.repeat(reps)].assign(
                    _block=np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64))
        keys = list(cls.keys) + (["_block"] if blocked else [])
        if not keys:
            if len(df):
                yield i, df.reset_index(drop=True), None
            continue
        for key, part in df.groupby(keys, dropna=False, sort=True):
            block = int(key[-1] if isinstance(key, tuple) else key) if blocked else None
            yield i, part.drop(columns=["_block"], errors="ignore").reset_index(drop=True), block


def run_local(compiled: CompiledSharon, parts) -> tuple[pd.DataFrame, dict]:
    """Every partition of ``parts`` ((class, events, block) as from :func:`local_partitions`) through
    ``compiled.run``: the merged results and the summed metrics."""
    from cepopt.executor.partitions import merge_partials

    frames, metrics = [], {}
    for index, events, block in parts:
        partials, m = compiled.run(index, events, block)
        frames.append(partials)
        for k, v in m.items():
            metrics[k] = metrics.get(k, 0) + v
    partials = pd.concat(frames, ignore_index=True) if frames else empty_partials()
    return merge_partials(partials), metrics
