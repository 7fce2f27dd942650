"""The join-order family's executor: run an Order / Tree / Disjunction plan on a stream.

``execute(problem, plan, events, spark=None, *, engine="spark")`` compiles the query
(executor/join_plan.py), runs the plan as a join tree (Spark: executor/join_eval.py, every branch of a
disjunction in the same Spark job; ``engine="local"``: executor/join_local.py, pandas in process) and
reports an :class:`~cepopt.executor.api.ExecutionResult`:

- ``results``: the match set in the results format (executor/results.py), one row per full match:
  query, group "", window 0, aggregate "match", value = the canonical text of the matched events
  (``ref=id,...``; a Kleene event ``ref=[id;id]``). A Spark DataFrame with the Spark engine,
  persisted by the one job that computed it (counting or writing it runs no join again; call its
  ``unpersist()`` when done), pandas with the local one; the driver collects no match. Its digest
  is a stable hash of the sorted match set, the same under every plan and engine.
- ``operations``: partial matches at the nodes the plan's cost counts (Cost_ord: every prefix of an
  order; Cost_tree: every node of a tree), summed over the branches of a disjunction; counted by
  Spark (``DataFrame.observe``) or by the local engine.
- ``predicted_cost``: the family's cost model (``exp`` of its log cost; inf when it overflows).
- ``metrics``: per-node counts, the time-averaged number of active partial matches (directly
  comparable to the predicted cost; with a NOT it is the plan as run, checks included, while the
  model prices the positive part: ``run_plan(..., negate=False)`` measures that), the match count,
  the stream's events and throughput.

Events without an ``id`` column get one in input order (stable for a given input and
partitioning). The driver plans nothing: statistics estimated from a stream
(executor/join_stats.py) and re-planning on them belong to the pipeline that calls it.
"""

from __future__ import annotations

import time
from typing import Any

from cepopt.errors import CepoptError
from cepopt.executor.api import ExecutionResult
from cepopt.executor.join_plan import JoinTree, compile_query, join_tree
from cepopt.joinorder import cost

__all__ = ["ENGINES", "execute", "plan_trees", "run_plan"]

ENGINES = ("spark", "local")


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


def plan_trees(problem, plan) -> list[JoinTree]:
    """One join tree per branch of ``plan``, counting the nodes the problem's cost counts."""
    trees = []
    for pattern, branch in _branches(problem, plan):
        compiled = compile_query(problem.query, pattern)
        trees.append(join_tree(compiled, branch, count_all=problem.tree_cost(getattr(branch, "kind", "order"))))
    return trees


def run_plan(problem, plan, events, *, negate: bool = True, observe_stream: bool = False, results=None):
    """Run every branch of ``plan`` on ``events`` (a Spark DataFrame prepared with ids) in one Spark
    job: an :class:`~cepopt.executor.join_eval.Evaluation` with one JoinRun per branch (call their
    ``release()`` when done). ``negate=False`` runs the positive part only (no NOT checks): the
    partial matches the cost model prices for a pattern with negation (spec joinorder §2.6)."""
    from cepopt.executor.join_eval import evaluate_many

    return evaluate_many(plan_trees(problem, plan), events, negate=negate, observe_stream=observe_stream,
                         results=results)


def _log_predicted(problem, plan) -> float | None:
    """``cost.evaluate`` of the plan, or None for a plan the cost model does not price: the executor also
    runs plans whose negation checks come before the events they depend on (it applies each check at
    the first node where it can be decided), the cost model prices only plans that place them there."""
    try:
        return cost.evaluate(problem, plan)
    except CepoptError:
        return None


def _metrics(runs, n_events: int, first, last, elapsed: float, log_predicted: float | None,
             kernel_s: float | None) -> dict[str, Any]:
    duration = float((last or 0) - (first or 0)) or 1.0
    metrics: dict[str, Any] = {}
    for b, run in enumerate(runs):
        prefix = f"b{b}." if len(runs) > 1 else ""
        metrics[f"{prefix}plan_nodes"] = "; ".join(f"{n.label}={n.count}" for n in run.nodes if n.count is not None)
    metrics.update({
        "matches": sum(run.match_count for run in runs),
        "events": n_events,
        "duration": duration,
        "active_partial_matches": sum(run.active for run in runs) / duration,
        "log_predicted_cost": log_predicted,
        "throughput_events_per_s": n_events / elapsed if elapsed > 0 else None,
        "kernel_s": kernel_s,
    })
    return metrics


def _spark_results(name: str, branches: int):
    """The results table built from the evaluation's table of matches (``_b``, ``value``)."""
    from pyspark.sql import functions as F

    def build(matches):
        values = matches.select("value")
        if branches > 1:  # two conjuncts of an OR can find the same match
            values = values.distinct()
        return values.select(F.lit(name).alias("query"), F.lit("").alias("group"), F.lit(0).alias("window"),
                             F.lit("match").alias("aggregate"), "value")

    return build


def execute(problem, plan, events, spark=None, *, engine: str = "spark") -> ExecutionResult:
    """Execute a join plan on ``events`` (with ts, type and attributes; a Spark DataFrame for the
    Spark engine, pandas or Spark for the local one). See the module docstring."""
    if engine not in ENGINES:
        raise CepoptError(f"unknown engine {engine!r} (use one of {', '.join(ENGINES)})")
    if engine == "local":
        from cepopt.executor.join_local import evaluate_many as local_many

        if not hasattr(events, "iloc"):
            from cepopt.executor.integers import to_pandas

            events = to_pandas(events)
        start = time.perf_counter()
        ev = local_many(plan_trees(problem, plan), events)
        elapsed = time.perf_counter() - start
        results = ev.results(problem.query.name or "q")
    else:
        from cepopt.executor.join_eval import evaluate_many, prepare_events

        start = time.perf_counter()
        trees = plan_trees(problem, plan)
        ev = evaluate_many(trees, prepare_events(events, number_rows=False), observe_stream=True,
                           results=_spark_results(problem.query.name or "q", len(trees)))
        elapsed = time.perf_counter() - start
        results = ev.results
    log_predicted = _log_predicted(problem, plan)
    predicted = None if log_predicted is None else cost.predict(problem, plan)
    metrics = _metrics(ev.runs, ev.events or 0, ev.first_ts, ev.last_ts, elapsed, log_predicted,
                       ev.time_s if engine == "local" else ev.kernel_s)
    return ExecutionResult(results, sum(run.operations for run in ev.runs), predicted, elapsed, metrics)
