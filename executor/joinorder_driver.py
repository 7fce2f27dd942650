"""The join-order family's executor: run an Order / Tree / Disjunction plan on a Spark stream.

``execute(problem, plan, events, spark)`` compiles the query (executor/join_plan.py), runs the plan
as a join tree (executor/join_eval.py) and reports:

- ``results``: the match set, one row per full match: query, group "", window 0, aggregate
  "match", value = the canonical text of the matched events (``ref=id,...``; a Kleene event
  ``ref=[id;id]``). The digest is therefore a stable hash of the sorted match set, the same under
  every plan.
- ``operations``: partial matches counted by Spark at the nodes the plan's cost counts (Cost_ord:
  every prefix of an order; Cost_tree: every node of a tree), summed over the branches of a
  disjunction.
- ``predicted_cost``: the family's cost model (``exp`` of its log cost; inf when it overflows).
- ``metrics``: per-node counts, the time-averaged number of active partial matches (directly
  comparable to the predicted cost; with a NOT it is the plan as run, checks included, while the
  model prices the positive part: ``run_plan(..., negate=False)`` measures that), the match count,
  the stream's events and throughput.

Events without an ``id`` column get one in input order (stable for a given input and
partitioning). ``estimate_stats`` re-estimates rates and selectivities from the stream
(executor/join_stats.py), rebuilds the problem with them and, when ``method`` names a method,
re-plans with it: stream -> statistics -> plan -> execution.
"""

from __future__ import annotations

import math
import time
from typing import Any

from cepopt.errors import CepoptError
from cepopt.executor.api import ExecutionResult
from cepopt.executor.join_eval import JoinRun, evaluate, match_values, prepare_events
from cepopt.executor.join_plan import compile_query, join_tree

__all__ = ["execute", "run_plan"]


def _branches(problem, plan) -> list[tuple[Any, Any]]:
    """(conjunct pattern, branch plan) pairs of a plan."""
    from cepopt.joinorder.reduce import conjuncts

    query = problem.query
    if query is None:
        raise CepoptError("the problem has no query to execute (built from arrays?)")
    parts = conjuncts(query.pattern)
    plans = list(plan.branches) if hasattr(plan, "branches") else [plan]
    if len(plans) != len(parts):
        raise CepoptError(f"the plan has {len(plans)} branch(es), the pattern has {len(parts)} conjunct(s)")
    return [(sc.pattern, p) for sc, p in zip(parts, plans, strict=True)]


def run_plan(problem, plan, events, *, negate: bool = True) -> list[JoinRun]:
    """Run every branch of ``plan`` on ``events`` (prepared with ids); one JoinRun per branch.
    ``negate=False`` runs the positive part only (no NOT checks): the partial matches the cost
    model prices for a pattern with negation (spec joinorder §2.6)."""
    runs = []
    for pattern, branch in _branches(problem, plan):
        compiled = compile_query(problem.query, pattern)
        count_all = problem.tree_cost(getattr(branch, "kind", "order"))
        runs.append(evaluate(join_tree(compiled, branch, count_all=count_all), events, negate=negate))
    return runs


def _predicted(problem, plan) -> tuple[float | None, float | None]:
    from cepopt.joinorder.methods import evaluate as log_cost

    try:
        lc = float(log_cost(problem, plan))
    except CepoptError:
        return None, None
    try:
        return math.exp(lc), lc
    except OverflowError:
        return math.inf, lc


def _replan(problem, events, method: str | None, plan, time_limit, seed, sample: int):
    from cepopt.executor.join_stats import estimate_statistics
    from cepopt.joinorder.problem import build_query

    stats = estimate_statistics(problem.query, events, sample=sample, seed=seed)
    new = build_query(problem.query, stats, name=problem.name, **dict(problem.params))
    if method:
        from cepopt.solution import MethodResult
        from cepopt.solve import method as get_method

        result = get_method("joinorder", method).fn(new, time_limit=time_limit, seed=seed)
        plan = result.plan if isinstance(result, MethodResult) else result
        if plan is None:
            raise CepoptError(f"method {method!r} gave no plan on the estimated statistics")
    return new, plan, stats


def execute(problem, plan, events, spark=None, *, estimate_stats: bool = False, method: str | None = None,
            time_limit: float | None = None, seed: int = 0, sample: int = 20_000,
            collect: bool = True) -> ExecutionResult:
    """Execute a join plan on ``events`` (Spark DataFrame with ts, type and attributes)."""
    from pyspark.sql import functions as F

    from cepopt.executor import results as res

    # Materialised once: ids are fixed for the run, and the plans read a short lineage (a stream
    # made from pandas is otherwise a local relation that the analyzer walks for every node).
    events = prepare_events(events).localCheckpoint(eager=True)
    metrics: dict[str, Any] = {}
    if estimate_stats:
        problem, plan, stats = _replan(problem, events, method, plan, time_limit, seed, sample)
        metrics["estimated_statistics"] = stats.to_json()
        # Without a method name the given plan runs as is; only its prediction uses the new statistics.
        metrics["replanned"] = bool(method)
        metrics["plan"] = str(plan)
    span = events.agg(F.count(F.lit(1)).alias("n"), F.min("ts").alias("lo"), F.max("ts").alias("hi")).first()
    n_events = int(span["n"])
    duration = float((span["hi"] or 0) - (span["lo"] or 0)) or 1.0
    start = time.perf_counter()
    runs = run_plan(problem, plan, events)
    elapsed = time.perf_counter() - start
    try:
        rows = []
        if collect:
            values = None
            for run in runs:
                v = match_values(run.tree.pattern, run.matches)
                values = v if values is None else values.unionByName(v)
            rows = [(problem.query.name or "q", "", 0, "match", r["value"])
                    for r in values.distinct().collect()]  # type: ignore[union-attr]
        results = res.results_frame(rows)
        for b, run in enumerate(runs):
            prefix = f"b{b}." if len(runs) > 1 else ""
            metrics[f"{prefix}plan_nodes"] = "; ".join(
                f"{n.label}={n.count}" for n in run.nodes if n.count is not None)
        operations = sum(run.operations for run in runs)
        matches = sum(run.match_count for run in runs)
        predicted, log_predicted = _predicted(problem, plan)
        metrics.update({
            "matches": matches,
            "events": n_events,
            "duration": duration,
            "active_partial_matches": sum(run.active for run in runs) / duration,
            "log_predicted_cost": log_predicted,
            "throughput_events_per_s": n_events / elapsed if elapsed > 0 else None,
        })
    finally:
        for run in runs:
            run.release()
    return ExecutionResult(results, operations, predicted, elapsed, metrics)
