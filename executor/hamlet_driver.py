"""Spark driver of the Hamlet / GRETA kernels (hamlet.md §1.8, DESIGN.md "Executor").

For each sharing class: keep the events of the class's types, replicate each event into the windows
that hold it (window k = [kS, kS+W), sharon.md §1.5), partition by the GROUP-BY and equivalence
attributes and the window (``groupBy(...).applyInPandas``), and run
:func:`cepopt.executor.hamlet_kernel.hamlet_class` on each partition with the plan's policy (a
``replay`` plan: its recorded decisions, cepopt.hamlet.plan.plan_policy). Only
partial aggregates (exact integers as text) and operation counters come back to the driver, where
the equivalence partitions of each GROUP-BY group are merged.
"""

from __future__ import annotations

import ast
import time
from collections import Counter
from typing import Any

import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.results import AggAccumulator, results_frame

__all__ = ["execute", "run_classes"]

_SCHEMA = "query string, payload string"
_METRICS = "__metrics__"
_ERROR = "__error__"


def _encode(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return type(v)(_encode(x) for x in v)
    if hasattr(v, "item") and not isinstance(v, str):
        return v.item()
    return v


def _partition_fn(ci: int, cls, policy, kernel: str):
    """The pandas function applied to one (partition, window) group of events."""

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        from cepopt.executor.greta import Scope, _norm_key, greta_class
        from cepopt.executor.hamlet_kernel import hamlet_class
        from cepopt.hamlet.graphlets import scope_label

        pdf = pdf.sort_values("ts", kind="stable").reset_index(drop=True)
        key = tuple(_norm_key(pdf[a].iloc[0]) if a in pdf.columns else None for a in cls.partition)
        window = int(pdf["window"].iloc[0])
        scope = Scope(cls, pdf, key, window)
        accs = {cq.name: AggAccumulator(cq.query) for cq in cls.queries}
        metrics: dict = {}
        decisions: list = []
        start = time.perf_counter()
        if kernel == "greta":
            greta_class(cls, scope, accs, metrics)
        elif kernel == "gloria":
            from cepopt.executor.gloria_kernel import gloria_class

            gloria_class(cls, scope, policy, accs, metrics)
            metrics["greta_queries"] = len(metrics.get("greta_queries", ()))
        else:
            try:
                hamlet_class(cls, scope, policy, accs, metrics, decisions, label=scope_label(ci, scope))
            except CepoptError as exc:  # a replayed plan off its stream: raised again by the driver
                return pd.DataFrame([(_ERROR, str(exc))], columns=["query", "payload"])
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = len(pdf)
        metrics["predicted"] = float(sum(d.cost for d in decisions))
        for action, n in Counter(d.action for d in decisions).items():
            metrics[f"action_{action}"] = n
        rows = []
        for name, acc in accs.items():
            for (g, w), (cnt, per) in acc.cells.items():
                if cnt:
                    rows.append((name, repr(_encode((g, w, cnt, {t: tuple(v) for t, v in per.items()})))))
        rows.append((_METRICS, repr(_encode(metrics))))
        return pd.DataFrame(rows, columns=["query", "payload"])

    return run


def run_classes(classes, policy, events, spark, kernel: str = "hamlet") -> tuple[pd.DataFrame, dict]:
    """Run every class on Spark; returns the results table and the summed counters. ``kernel``:
    "hamlet" (``policy`` a Hamlet policy), "greta", or "gloria" (``policy`` a GloriaPlan)."""
    from pyspark.sql import functions as F

    accs = {cq.name: AggAccumulator(cq.query) for cls in classes for cq in cls.queries}
    metrics: Counter = Counter()
    for ci, cls in enumerate(classes):
        df = events.where(F.col("type").cast("string").isin(sorted(cls.types)))
        w, s = cls.length, cls.slide
        ts = F.col("ts")
        lo = F.greatest(F.lit(0).cast("long"), (F.floor((ts - F.lit(w)) / F.lit(s)) + 1).cast("long"))
        hi = F.floor(ts / F.lit(s)).cast("long")
        df = df.withColumn("window", F.explode(F.sequence(lo, hi)))
        for a in cls.partition:
            if a not in df.columns:
                df = df.withColumn(a, F.lit(None).cast("string"))
        keys = list(cls.partition) + ["window"]
        out = df.groupBy(*keys).applyInPandas(_partition_fn(ci, cls, policy, kernel), schema=_SCHEMA)
        for row in out.collect():
            if row["query"] == _ERROR:
                raise CepoptError(row["payload"])
            value = ast.literal_eval(row["payload"])
            if row["query"] == _METRICS:
                metrics.update({k: v for k, v in value.items()})
                continue
            g, wk, cnt, per = value
            accs[row["query"]].add(g, wk, cnt, per)
    rows = [r for acc in accs.values() for r in acc.rows()]
    return results_frame(rows), dict(metrics)


def execute(problem, plan, events, spark):
    """Execute a Hamlet plan (its policy per burst, or its replayed decisions) on a Spark DataFrame."""
    from cepopt.executor.api import ExecutionResult
    from cepopt.executor.hamlet_kernel import finish_metrics
    from cepopt.hamlet.plan import plan_policy

    start = time.perf_counter()
    policy = plan_policy(problem, plan if hasattr(plan, "policy") else str(plan))
    results, metrics = run_classes(problem.classes, policy, events, spark)
    policy.finished(metrics.get("bursts", 0))
    finish_metrics(metrics)
    elapsed = time.perf_counter() - start
    metrics["policy"] = policy.name
    return ExecutionResult(results=results, operations=metrics["operations"],
                           predicted_cost=metrics.get("predicted", 0.0), time_s=elapsed, metrics=metrics)
