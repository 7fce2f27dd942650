"""Spark driver of the Sharon family: run a sharing plan (or the Non-Shared plan) on a stream.

The queries are split into partition classes (same GROUP-BY + equivalence attributes). Each class's
events (only its event types and the columns it reads) are partitioned by those attributes and by
*window blocks*: block b computes windows [bK, (b+1)K) and receives every event that lies in one of
them (an event is copied to at most two blocks when K >= W/S), so a block sees the whole of each of
its windows and blocks run in parallel even without GROUP-BY. Each (key, block) partition runs
:func:`cepopt.executor.sharon_kernel.sharon_partition` in ``applyInPandas``; only the partial
aggregates per (query, group, window) and the operation counts come back to the driver, where
equivalence partitions of one group are merged (counts and sums add, min/max combine).

:func:`execute_local` does the same partitioning in pandas, in process: the Spark results must equal
it (a test checks).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cepopt.executor.api import ExecutionResult
from cepopt.executor.results import AggAccumulator, partition_attrs, results_frame
from cepopt.executor.sharon_kernel import sharon_partition
from cepopt.model import Query

__all__ = ["execute", "execute_local", "predicted_cost"]

OUT_SCHEMA = "query string, grp string, window long, payload string"
OPS = "__ops__"


def _columns(queries: Sequence[Query]) -> list[str]:
    cols: dict[str, None] = dict.fromkeys(["ts", "type"])
    for q in queries:
        for a in partition_attrs(q):
            cols.setdefault(a, None)
        for f in q.filters:
            cols.setdefault(f.attr, None)
        for a in q.aggregates:
            if a.attr is not None:
                cols.setdefault(a.attr, None)
    return list(cols)


def _classes(queries: Sequence[Query]) -> dict[tuple, list[Query]]:
    out: dict[tuple, list[Query]] = {}
    for q in queries:
        out.setdefault(partition_attrs(q), []).append(q)
    return out


def _blocking(queries: Sequence[Query], windows_per_block: int | None):
    """(W, S, K) when the class can be cut into window blocks (one common sliding window), else None."""
    windows = {q.window for q in queries}
    if len(windows) != 1 or not windows_per_block:
        return None
    w = next(iter(windows))
    if w.slide is None:
        return None
    k = max(int(windows_per_block), int(math.ceil(w.length / w.slide)))
    return (w.length, w.slide, k)


def _task(queries: list[Query], plan, attrs: tuple, block: tuple | None):
    """The per-partition function: kernel + serialised partial aggregates of its windows."""

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        start, cpu = time.perf_counter(), time.process_time()
        key = {a: (pdf[a].iloc[0] if len(pdf) else None) for a in attrs}
        lo, hi = -1, math.inf
        if block is not None and "_block" in pdf.columns:
            b = int(pdf["_block"].iloc[0])
            lo, hi = b * block[2], (b + 1) * block[2]
            pdf = pdf.drop(columns=["_block"])
        accs, ops = sharon_partition(queries, plan, pdf, key)
        out = []
        for name, acc in accs.items():
            for (g, w), (cnt, per) in acc.cells.items():
                if cnt and lo <= w < hi:
                    payload = [int(cnt), [[t[0], t[1], *v] for t, v in per.items()]]
                    out.append((name, g, int(w), json.dumps(payload)))
        # wall and CPU time of the task: on a loaded machine the CPU time is the steadier measure
        ops = dict(ops, events=int(len(pdf)), kernel_s=time.perf_counter() - start,
                   kernel_cpu_s=time.process_time() - cpu, partitions=1)
        out.append((OPS, "", 0, json.dumps(ops)))
        return pd.DataFrame(out, columns=["query", "grp", "window", "payload"])

    return run


def _merge(queries: Sequence[Query], rows) -> tuple[pd.DataFrame, dict]:
    accs = {q.name: AggAccumulator(q) for q in queries}
    metrics = {"update": 0, "combine": 0, "events": 0, "kernel_s": 0.0, "kernel_cpu_s": 0.0, "partitions": 0}
    for name, grp, window, payload in rows:
        data = json.loads(payload)
        if name == OPS:
            for k, v in data.items():
                metrics[k] = metrics.get(k, 0) + v
            continue
        cnt, per = data
        accs[name].add(grp, int(window), cnt, {(ref, attr): (c, s, lo, hi) for ref, attr, c, s, lo, hi in per})
    rows_out = [r for acc in accs.values() for r in acc.rows()]
    return results_frame(rows_out), metrics


def predicted_cost(problem, plan) -> float | None:
    """The Sharon cost model's cost of ``plan``: NonShared total minus the plan's score (Eq. 2, 9)."""
    try:
        return float(problem.cost.total_nonshared() - problem.score(plan))
    except Exception:  # a plan the cost model cannot score (foreign queries): no prediction
        return None


def _block_ids(ts: np.ndarray, block: tuple) -> list[np.ndarray]:
    w, s, k = block
    k_hi = np.floor(ts / s).astype(np.int64)
    k_lo = np.maximum(0, np.floor((ts - w) / s).astype(np.int64) + 1)
    return k_lo // k, k_hi // k


def execute_local(problem, plan, events: pd.DataFrame, *, windows_per_block: int | None = 64) -> ExecutionResult:
    """The driver's partitioning and kernels in process, on a pandas stream (the Spark path's twin)."""
    start = time.perf_counter()
    rows = []
    queries = list(problem.workload.queries)
    for attrs, qs in _classes(queries).items():
        types = sorted({t for q in qs for t in q.pattern.event_types()})
        cols = _columns(qs)
        df = events[events["type"].isin(types)].copy()
        for c in cols:
            if c not in df.columns:
                df[c] = None
        df = df[cols]
        block = _blocking(qs, windows_per_block)
        if block is not None:
            b_lo, b_hi = _block_ids(df["ts"].to_numpy(), block)
            reps = np.maximum(0, b_hi - b_lo + 1)
            df = df.loc[df.index.repeat(reps)].copy()
            df["_block"] = np.concatenate([np.arange(a, b + 1) for a, b in zip(b_lo, b_hi, strict=True)]) \
                if len(df) else np.zeros(0, dtype=np.int64)
        keys = list(attrs) + (["_block"] if block is not None else [])
        fn = _task(qs, plan, attrs, block)
        if keys:
            for _, part in df.groupby(keys, dropna=False, sort=True):
                rows.extend(fn(part.reset_index(drop=True)).itertuples(index=False, name=None))
        elif len(df):
            rows.extend(fn(df.reset_index(drop=True)).itertuples(index=False, name=None))
    results, metrics = _merge(queries, rows)
    elapsed = time.perf_counter() - start
    ops = int(metrics["update"] + metrics["combine"])
    return ExecutionResult(results, ops, predicted_cost(problem, plan), elapsed, {**metrics, "mode": "local"})


def execute(problem, plan, events, spark, *, windows_per_block: int | None = 64) -> ExecutionResult:
    """Run ``plan`` on the Spark DataFrame ``events`` (see the module docstring)."""
    from pyspark.sql import functions as F

    start = time.perf_counter()
    queries = list(problem.workload.queries)
    frames = []
    for attrs, qs in _classes(queries).items():
        types = sorted({t for q in qs for t in q.pattern.event_types()})
        cols = _columns(qs)
        sdf = events.filter(F.col("type").isin(types))
        for c in cols:
            if c not in sdf.columns:
                sdf = sdf.withColumn(c, F.lit(None).cast("string"))
        sdf = sdf.select(*cols)
        block = _blocking(qs, windows_per_block)
        keys = list(attrs)
        if block is not None:
            w, s, k = block
            k_hi = F.floor(F.col("ts") / F.lit(float(s)))
            if w == s:
                # tumbling windows: every event is in exactly one window, so in one block (no explode)
                sdf = sdf.withColumn("_block", F.floor(k_hi / k))
            else:
                k_lo = F.greatest(F.lit(0).cast("long"),
                                  F.floor((F.col("ts") - F.lit(float(w))) / F.lit(float(s))) + 1)
                sdf = sdf.withColumn("_block", F.explode(F.sequence(F.floor(k_lo / k), F.floor(k_hi / k))))
            keys.append("_block")
        fn = _task(qs, plan, attrs, block)
        if keys:
            out = sdf.groupBy(*keys).applyInPandas(fn, OUT_SCHEMA)
        else:
            out = sdf.repartition(1).mapInPandas(lambda it, fn=fn: _single(it, fn), OUT_SCHEMA)
        frames.append(out)
    rows = []
    if frames:
        union = frames[0]
        for out in frames[1:]:
            union = union.unionByName(out)
        # one job: only the partial aggregates and the operation counts reach the driver
        rows = [(r["query"], r["grp"], r["window"], r["payload"]) for r in union.collect()]
    results, metrics = _merge(queries, rows)
    elapsed = time.perf_counter() - start
    ops = int(metrics["update"] + metrics["combine"])
    return ExecutionResult(results, ops, predicted_cost(problem, plan), elapsed, {**metrics, "mode": "spark"})


def _single(batches, fn):
    """mapInPandas over one partition holding the whole class (no keys): concatenate, run once."""
    parts = list(batches)
    pdf = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["ts", "type"])
    yield fn(pdf)
