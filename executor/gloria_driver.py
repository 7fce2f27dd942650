"""Spark driver of the Gloria kernel: the same partitioning as the Hamlet driver (GROUP-BY and
equivalence attributes, window), :func:`cepopt.executor.gloria_kernel.gloria_class` per partition."""

from __future__ import annotations

import time

from cepopt.executor.hamlet_driver import run_classes
from cepopt.hamlet.problem import compile_workload

__all__ = ["execute"]


def execute(problem, plan, events, spark):
    """Execute a Gloria plan (cepopt.gloria.plan.GloriaPlan; None = unshared) on a Spark DataFrame.

    ``operations`` = propagations (Eqs. 2-3) + evaluations (Eq. 4) measured on the events;
    ``predicted_cost`` = the Gloria cost model's value of the plan (statistics-based, Eqs. 2-4)."""
    from cepopt.executor.api import ExecutionResult
    from cepopt.solve import family

    start = time.perf_counter()
    classes = compile_workload(problem.workload, mixed_lengths=True)
    results, metrics = run_classes(classes, plan, events, spark, kernel="gloria")
    metrics["operations"] = metrics.get("propagations", 0) + metrics.get("evaluations", 0)
    try:
        predicted = float(family("gloria").evaluate(problem, plan)) if plan is not None else None
    except Exception:  # noqa: BLE001 -- a plan the cost model rejects still executes
        predicted = None
    return ExecutionResult(results=results, operations=metrics["operations"], predicted_cost=predicted,
                           time_s=time.perf_counter() - start, metrics=metrics)
