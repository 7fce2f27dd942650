"""The pipeline: instance -> statistics (given or estimated) -> solve -> plan -> execute -> report.

One place chains them, as a short list of steps (:data:`STEPS`) that each read and fill an
:class:`Execution`; the CLI's ``cepopt execute``, the demo and the Python API (:func:`execute`) run it::

    check_inputs        the instance, engine, stream spec, output and stats paths (before any work)
    open_stream         the stream: pandas for the local engine and for generated or embedded streams;
                        a path or URI stays a path until the Spark engine reads it
    derive_bursts       a Hamlet instance without burst statistics takes them from the stream
    estimate_statistics --estimate-stats: rates (and join selectivities) measured on the stream replace
                        the instance's statistics (printed, saved with --save-stats)
    build_problem       the family's problem of the instance (--param problem options)
    choose_plan         --plan: nonshared, a saved plan, or a method solved through solve() with the
                        --param method options (re-scored by the cost model)
    check_work          the plan's predicted work against --max-work: refused above it
    run_plan            the executor (executor/api.py) with the Spark or the local engine
    report              what ran and what it measured, JSON-able

The executor below this module knows problems and plans only; the method registry is used here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepopt.errors import CepoptError

__all__ = ["STEPS", "Execution", "default_max_work", "execute", "execute_command", "load_plan", "run"]


@dataclass
class Execution:
    """The pipeline's state: what was asked (first block) and what the steps found (second block)."""

    instance: Any
    plan_spec: Any = "nonshared"
    stream_spec: Any = None
    engine: str = "spark"
    master: str | None = None
    spark: Any = None
    output: str | None = None
    params: dict = field(default_factory=dict)
    estimate_stats: bool = False
    save_stats: str | None = None
    max_work: float | None = None
    time_limit: float | None = None
    seed: int = 0
    schema: Any = None
    problem: Any = None
    options: dict = field(default_factory=dict)

    family: Any = None
    events: Any = None
    source: str | None = None
    statistics: Any = None
    plan: Any = None
    info: dict = field(default_factory=dict)
    predicted: float | None = None
    result: Any = None
    wall_s: float = 0.0
    report: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# steps
# ---------------------------------------------------------------------------------------------


def check_inputs(ex: Execution) -> None:
    """Everything that can be checked before work starts: fail in a second, not after Spark starts."""
    from cepopt.executor.engines import ENGINES
    from cepopt.executor.output import check_output
    from cepopt.instance import Instance, load

    if ex.engine not in ENGINES:
        raise CepoptError(f"--engine {ex.engine!r}: unknown engine (known: {', '.join(ENGINES)})")
    if not isinstance(ex.instance, Instance):
        ex.instance = load(ex.instance)
    if ex.output:
        check_output(ex.output)
    if ex.save_stats:
        _check_writable(ex.save_stats, "--save-stats")
    if ex.max_work is not None and not (isinstance(ex.max_work, int | float) and ex.max_work > 0):
        raise CepoptError(f"--max-work must be > 0, got {ex.max_work!r}")
    if isinstance(ex.stream_spec, str | Path) and not str(ex.stream_spec).startswith("gen:"):
        from cepopt.executor.streams import check_header, stream_format

        stream_format(ex.stream_spec)
        check_header(ex.stream_spec)  # a wrong header first, not after the solve and Spark's start
        ex.source = str(ex.stream_spec)


def _check_writable(path: str, option: str) -> None:
    """A local output path must be writable: its folder exists (or can be made) and takes a file."""
    from cepopt.executor.streams import is_local, local_path

    if not is_local(path):
        return  # a URI: Spark writes it and says so if it cannot
    folder = local_path(path).resolve().parent
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise CepoptError(f"{option} {path}: cannot write into {probe} (no such folder or no permission)")


def open_stream(ex: Execution) -> None:
    """The events: pandas for the local engine and for generated and embedded streams; a path or URI
    is left for the Spark engine to read (once, with its schema)."""
    from cepopt.executor.streams import resolve_stream_pandas

    spec = ex.stream_spec
    if spec is None or isinstance(spec, str) and spec.startswith("gen:"):
        ex.events = resolve_stream_pandas(spec, ex.instance)
        ex.source = ex.source or (spec or f"{ex.instance.name or 'instance'}.stream")
    elif isinstance(spec, str | Path) and ex.engine == "local":
        ex.events = resolve_stream_pandas(str(spec), ex.instance)
    else:
        ex.events = spec  # a path / URI (Spark reads it), or a DataFrame given


def _pandas_events(ex: Execution):
    """The stream as pandas (only where a step needs all of it on the driver)."""
    import pandas as pd

    from cepopt.executor.streams import read_stream_pandas

    if isinstance(ex.events, pd.DataFrame):
        return ex.events
    if isinstance(ex.events, str | Path):
        from cepopt.executor.streams import is_local

        if is_local(ex.events):
            return read_stream_pandas(ex.events)
    from cepopt.executor.integers import to_pandas

    return to_pandas(_spark_events(ex))


def _spark_events(ex: Execution):
    """The stream as a Spark DataFrame (starts the session), kept for the run."""
    import pandas as pd

    from cepopt.executor.api import _spark_events as as_spark
    from cepopt.executor.session import get_spark

    if ex.engine == "local":
        return _pandas_events(ex)
    ex.spark = ex.spark or get_spark(ex.master)
    if isinstance(ex.events, str | Path | pd.DataFrame | list | tuple):
        ex.events = as_spark(ex.events, ex.spark, ex.schema)
    return ex.events


def derive_bursts(ex: Execution) -> None:
    """A Hamlet instance written from queries and rates alone takes its bursts from the given stream."""
    inst = ex.instance
    if inst.problem != "hamlet" or "bursts" in (inst.params or {}) or inst.stream or ex.problem is not None:
        return
    if ex.stream_spec is None:
        return  # build_problem says what is missing
    events = _pandas_events(ex)
    records = events.to_dict("records")
    ex.instance = inst.replace(stream=tuple(records))
    ex.info["bursts_from"] = ex.source or "the stream"


def estimate_statistics(ex: Execution) -> None:
    """--estimate-stats: the stream's statistics replace the instance's (rates per type; for a join
    pattern also the selectivities of its conditions), before the problem is built."""
    if not ex.estimate_stats:
        return
    from cepopt.model import Statistics

    inst = ex.instance
    events = _spark_events(ex)
    if inst.problem == "joinorder":
        from cepopt.executor.join_stats import estimate_statistics as estimate

        query = inst.workload.queries[0]
        stats = estimate(query, events, seed=ex.seed)
    else:
        stats = Statistics(rates=_rates(events, sorted(_event_types(inst))))
    ex.statistics = stats
    ex.instance = inst.replace(statistics=stats)
    ex.problem = None
    if ex.save_stats:
        _write_json(ex.save_stats, stats.to_json())


def _event_types(inst) -> set[str]:
    return {t for q in inst.workload.queries for t in q.pattern.event_types()}


def _rates(events, types: Sequence[str]) -> dict[str, float]:
    """Events per time unit of each type over the stream's span (a type absent: half an event)."""
    import pandas as pd

    if isinstance(events, pd.DataFrame):
        if not len(events):
            raise CepoptError("the stream is empty: no statistics can be estimated")
        counts = events["type"].value_counts().to_dict()
        span = float(events["ts"].max() - events["ts"].min())
    else:
        from pyspark.sql import functions as F

        rows = events.groupBy("type").agg(F.count(F.lit(1)).alias("n"), F.min("ts").alias("lo"),
                                          F.max("ts").alias("hi")).collect()
        if not rows:
            raise CepoptError("the stream is empty: no statistics can be estimated")
        counts = {r["type"]: int(r["n"]) for r in rows}
        span = float(max(r["hi"] for r in rows) - min(r["lo"] for r in rows))
    span = max(span, 1.0)
    return {t: (counts.get(t, 0) or 0.5) / span for t in types}


def _write_json(path: str, value: Any) -> None:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(value, indent=2) + "\n")
    except OSError as exc:
        raise CepoptError(f"{path}: cannot write: {exc.strerror or exc}") from None


def build_problem(ex: Execution) -> None:
    from cepopt.registry import build_problem as build
    from cepopt.registry import family

    if ex.problem is None:
        ex.family, ex.problem, _ = build(ex.instance, ex.params)
    else:
        ex.family = family(ex.instance.problem)


def choose_plan(ex: Execution) -> None:
    ex.plan, info = load_plan(ex.family, ex.problem, ex.instance, ex.plan_spec, params=ex.params,
                              time_limit=ex.time_limit, seed=ex.seed)
    ex.info.update(info)
    ex.info["objective"] = ex.family.evaluate(ex.problem, ex.plan)


def load_plan(fam, problem, instance, plan_spec: Any, *, params: dict | None = None, time_limit=None,
              seed=0) -> tuple[Any, dict]:
    """(plan, info) for ``--plan``: ``nonshared`` (or None), a saved plan JSON file, a method name (solved
    through :func:`cepopt.registry.solve` with the method options of ``params``), or a plan object."""
    from cepopt.registry import solve

    if plan_spec is None or plan_spec == "nonshared":
        if fam.baseline_plan is None:
            raise CepoptError(f"family {fam.name} has no non-shared plan")
        return fam.baseline_plan(problem), {"plan_source": "nonshared"}
    if not isinstance(plan_spec, str | Path):
        return plan_spec, {"plan_source": "given"}
    plan_spec = str(plan_spec)
    path = Path(plan_spec)
    from cepopt.textio import probe_path, read_json

    if plan_spec.endswith(".json") or probe_path(path, "is_file", f"plan {plan_spec}"):
        if not path.is_file():
            raise CepoptError(f"{plan_spec}: no such plan file")
        value = read_json(path, plan_spec)
        if isinstance(value, dict) and "plan" in value and ("method" in value or "status" in value):
            value = value["plan"]  # a saved Solution
        return fam.plan_from_json(problem, value), {"plan_source": str(path)}
    sol = solve(instance, plan_spec, time_limit=time_limit, seed=seed, params=params, problem=problem)
    if sol.plan is None:
        raise CepoptError(f"method {plan_spec!r} gave no plan (status {sol.status}: {sol.message})")
    return sol.plan, {"plan_source": "method", "method": plan_spec, "status": sol.status, "objective": sol.objective,
                      "solve_time_s": round(sol.time_s, 6)}


def default_max_work() -> float:
    """The default --max-work: the machine's memory in bytes, as predicted operations (about one byte per
    operation: far above what the streaming families need on such a machine, below the partial-match
    counts that exhaust its memory in the join family, where a partial match takes tens of bytes)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16e9


def check_work(ex: Execution) -> None:
    """Refuse a plan whose predicted work is above the limit, before it runs (one line)."""
    from cepopt.executor.api import operations_unit, predicted

    ex.predicted = predicted(ex.instance.problem, ex.problem, ex.plan)
    limit = ex.max_work if ex.max_work is not None else default_max_work()
    if ex.predicted > limit:
        unit = operations_unit(ex.instance.problem)
        raise CepoptError(f"the plan's predicted work is {ex.predicted:.4g} ({unit}), above the limit "
                          f"{limit:.4g}; raise --max-work to run it anyway")


def run_plan(ex: Execution) -> None:
    from cepopt.executor.api import execute as run_execute

    start = time.perf_counter()
    ex.result = run_execute(ex.problem, ex.plan, ex.events, family=ex.instance.problem, engine=ex.engine,
                            spark=ex.spark, master=ex.master, source=ex.source, output=ex.output,
                            schema=ex.schema, **_driver_options(ex))
    ex.wall_s = time.perf_counter() - start
    if ex.predicted is not None:
        ex.result.predicted_cost = ex.predicted


def _driver_options(ex: Execution) -> dict:
    return {"time_limit": ex.time_limit, "seed": ex.seed, **ex.options}


def report(ex: Execution) -> None:
    """A JSON-able summary of the run."""
    from cepopt.executor.api import operations_unit

    r = ex.result
    unit = operations_unit(ex.instance.problem)
    out = {
        "instance": ex.instance.name,
        "problem": ex.instance.problem,
        "stream": str(ex.stream_spec) if isinstance(ex.stream_spec, str | Path) else
        ("embedded" if ex.stream_spec is None else "given"),
        "engine": r.engine,
        **{k: v for k, v in ex.info.items() if k != "objective"},
        "plan": ex.family.plan_to_json(ex.plan),
        "objective": ex.info.get("objective"),
        "results_digest": r.digest(),
        "results_rows": int(r.row_count()),
        "operations": int(r.operations),
        "predicted_cost": r.predicted_cost,
        "operations_unit": unit,  # of both the measured operations and the predicted cost
        "time_s": round(r.time_s, 6),
        "wall_time_s": round(ex.wall_s, 6),
        "metrics": {k: (v if isinstance(v, int | float | str | bool) or v is None else str(v))
                    for k, v in r.metrics.items()},
    }
    if r.engine == "spark":
        out["master"] = r.metrics.get("master", ex.master)
    if ex.statistics is not None:
        out["estimated_statistics"] = ex.statistics.to_json()
        if ex.save_stats:
            out["saved_statistics"] = ex.save_stats
    if ex.output:
        out["output"] = str(ex.output)
    ex.report = out


#: the steps, in order (module docstring)
STEPS: tuple[Callable[[Execution], None], ...] = (
    check_inputs, open_stream, derive_bursts, estimate_statistics, build_problem, choose_plan, check_work,
    run_plan, report,
)


def run(ex: Execution, steps: Sequence[Callable[[Execution], None]] = STEPS) -> Execution:
    """Run ``steps`` on ``ex`` in order."""
    for step in steps:
        step(ex)
    return ex


# ---------------------------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------------------------


def execute(instance: Any, plan: Any = None, stream: Any = None, *, engine: str = "spark", master: str | None = None,
            spark=None, output: str | None = None, params: dict | None = None, estimate_stats: bool = False,
            max_work: float | None = None, time_limit: float | None = None, seed: int = 0, schema: Any = None,
            problem: Any = None, **options):
    """Execute ``plan`` of ``instance`` on ``stream`` and measure it; returns the
    :class:`~cepopt.executor.api.ExecutionResult` (with the Spark engine its ``results`` is a Spark
    DataFrame, with the local engine a pandas frame).

    ``instance``: an Instance, a path or a bundled name. ``plan``: None or "nonshared" (the baseline), a
    method name, a saved plan file, or a plan object. ``stream``: None (the embedded stream), a path or
    URI, ``gen:NAME[:k=v,...]``, a pandas or Spark DataFrame. ``engine``: ``spark`` (default) or
    ``local`` (in process, no JVM). Other keywords go to the family's executor (e.g.
    ``windows_per_block``).
    """
    ex = Execution(instance, plan, stream, engine=engine, master=master, spark=spark, output=output,
                   params=dict(params or {}), estimate_stats=estimate_stats, max_work=max_work,
                   time_limit=time_limit, seed=seed, schema=schema, problem=problem, options=options)
    return run(ex, STEPS[:-1]).result


def execute_command(instance: Any, plan_spec: str | None = "nonshared", stream_spec: str | None = None, *,
                    engine: str = "spark", master: str | None = None, output: str | None = None,
                    params: dict | None = None, estimate_stats: bool = False, save_stats: str | None = None,
                    max_work: float | None = None, time_limit: float | None = None, seed: int = 0,
                    schema: str | None = None, preview: int = 10) -> dict:
    """``cepopt execute``: the whole pipeline; returns the report (with a preview of the results) and
    drops the cached results."""
    ex = Execution(instance, plan_spec or "nonshared", stream_spec, engine=engine, master=master, output=output,
                   params=dict(params or {}), estimate_stats=estimate_stats, save_stats=save_stats,
                   max_work=max_work, time_limit=time_limit, seed=seed, schema=schema)
    try:
        run(ex)
        if preview and ex.report.get("results_rows"):
            from cepopt.executor.results import printable

            ex.report["preview"] = printable(ex.result.preview(preview)).to_string(index=False)
    finally:
        if ex.result is not None:
            ex.result.release()
    return ex.report
