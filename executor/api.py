"""Execute a plan on a stream and measure it: :func:`execute`, :func:`execute_command` (the CLI's
``cepopt execute``) and :class:`ExecutionResult`.

Each family provides ``cepopt.executor.<family>_driver.execute(problem, plan, events, spark)
-> ExecutionResult`` (``events`` a Spark DataFrame). Results use THE results format of
:mod:`cepopt.executor.results` (query, group, window, aggregate, value).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cepopt.errors import CepoptError, UnknownNameError
from cepopt.executor import results as res
from cepopt.textio import read_json

__all__ = ["ExecutionResult", "driver_module", "execute", "execute_command", "load_plan", "write_results"]


@dataclass
class ExecutionResult:
    """What executing a plan gave: the results table, the measured operations (the quantity the
    family's cost model predicts), the predicted cost, wall time and further metrics."""

    results: pd.DataFrame
    operations: int
    predicted_cost: float | None
    time_s: float
    metrics: dict = field(default_factory=dict)

    def digest(self) -> str:
        """Stable sha256 of the sorted results (ints exact, floats to 12 significant digits)."""
        return res.digest(self.results)

    def summary(self) -> str:
        lines = [f"results: {len(self.results)} rows, digest {self.digest()[:16]}",
                 f"operations (measured): {self.operations}",
                 f"predicted cost: {'-' if self.predicted_cost is None else f'{self.predicted_cost:.6g}'}",
                 f"time: {self.time_s:.3f} s"]
        for k, v in self.metrics.items():
            if isinstance(v, int | float | str):
                lines.append(f"{k}: {v}")
        return "\n".join(lines)


def driver_module(family_name: str):
    """``cepopt.executor.<family>_driver``; an unknown family is a user error."""
    import importlib.util

    name = f"cepopt.executor.{family_name}_driver"
    if importlib.util.find_spec(name) is None:
        raise UnknownNameError(f"no executor for family {family_name!r}")
    return importlib.import_module(name)


def _as_instance(instance: Any):
    from cepopt.instance import Instance, load

    return instance if isinstance(instance, Instance) else load(instance)


def _local_stream(stream: Any, instance: Any):
    """Do what needs no Spark before starting it, so that a bad stream fails fast: the embedded and
    ``gen:`` streams become pandas frames; a stream file must exist and be CSV or Parquet (read_stream
    reads it with Spark)."""
    from cepopt.executor.streams import resolve_stream_pandas, stream_format

    if stream is None or isinstance(stream, str) and stream.startswith("gen:"):
        return resolve_stream_pandas(stream, instance)
    if isinstance(stream, str | Path):
        stream_format(stream)
    return stream


def _events(stream: Any, spark):
    from cepopt.executor.streams import nan_to_null, read_stream, to_spark

    if isinstance(stream, str | Path):
        return read_stream(stream, spark)
    if isinstance(stream, pd.DataFrame):
        return to_spark(stream, spark)
    if isinstance(stream, list | tuple):
        return to_spark(pd.DataFrame(list(stream)), spark)
    return nan_to_null(stream)  # a Spark DataFrame: NaN is missing, as from the readers


def execute(instance: Any, plan: Any, stream: Any = None, *, spark=None, problem: Any = None,
            params: dict | None = None, **driver_options) -> ExecutionResult:
    """Run ``plan`` of ``instance`` (Instance, path or bundled name) on ``stream`` and measure it.

    ``stream``: None (the instance's embedded stream), a path, ``gen:NAME[:k=v,...]``, a pandas or
    Spark DataFrame. ``plan`` None is the family's baseline (non-shared) plan. Extra keywords go to
    the family driver when it accepts them.
    """
    from cepopt.executor.session import get_spark
    from cepopt.solve import build_problem

    inst = _as_instance(instance)
    driver = driver_module(inst.problem)
    if problem is None:
        fam, problem, _ = build_problem(inst, params)
    else:
        from cepopt.solve import family

        fam = family(inst.problem)
    if plan is None:
        if fam.baseline_plan is None:
            raise CepoptError(f"family {fam.name} has no baseline plan")
        plan = fam.baseline_plan(problem)
    stream = _local_stream(stream, inst)
    spark = spark or get_spark()
    events = _events(stream, spark)
    accepted = inspect.signature(driver.execute).parameters
    kwargs = {k: v for k, v in driver_options.items() if k in accepted}
    return driver.execute(problem, plan, events, spark, **kwargs)


def load_plan(fam, problem, instance, plan_spec: str, *, params: dict | None = None, time_limit=None, seed=0):
    """(plan, info) for ``--plan``: ``nonshared``, a saved plan JSON file, or a method name."""
    from cepopt.solve import solve

    if plan_spec == "nonshared":
        if fam.baseline_plan is None:
            raise CepoptError(f"family {fam.name} has no non-shared plan")
        return fam.baseline_plan(problem), {"plan_source": "nonshared"}
    path = Path(plan_spec)
    if plan_spec.endswith(".json") or path.is_file():
        if not path.is_file():
            raise CepoptError(f"{plan_spec}: no such plan file")
        value = read_json(path, plan_spec)
        if isinstance(value, dict) and "plan" in value and ("method" in value or "status" in value):
            value = value["plan"]  # a saved Solution
        return fam.plan_from_json(problem, value), {"plan_source": str(path)}
    method_params = {k: v for k, v in (params or {}).items() if k not in fam.problem_options}
    sol = solve(instance, plan_spec, time_limit=time_limit, seed=seed, params=method_params, problem=problem)
    if sol.plan is None:
        raise CepoptError(f"method {plan_spec!r} gave no plan (status {sol.status}: {sol.message})")
    return sol.plan, {"plan_source": "method", "method": plan_spec, "status": sol.status,
                      "objective": sol.objective, "solve_time_s": round(sol.time_s, 6)}


def _results_format(output: str | Path) -> str:
    """``csv`` or ``parquet`` by the extension of ``output``."""
    suffix = Path(output).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise CepoptError(f"{output}: unknown results format (use .csv or .parquet)")


def write_results(results: pd.DataFrame, output: str | Path) -> None:
    """Write results as CSV or Parquet by extension; values as exact text (ints can exceed 2^63)."""
    output = Path(output)
    fmt = _results_format(output)
    df = results.copy()
    df["value"] = [res.format_value(v) if isinstance(v, float) else str(res.py_scalar(v)) for v in df["value"]]
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        df.to_csv(output, index=False)
    else:
        df.to_parquet(output, index=False)


def execute_command(instance: Any, plan_spec: str, stream_spec: str | None, *, master: str | None = None,
                    output: str | None = None, params: dict | None = None, estimate_stats: bool = False,
                    time_limit: float | None = None, seed: int = 0) -> dict:
    """``cepopt execute``: choose the plan (method / saved JSON / nonshared), run it on the stream,
    return a JSON-able report (results digest and rows, measured operations, predicted cost, time,
    plan, method info) and write the results to ``output`` (.csv / .parquet) if given."""
    from cepopt.executor.session import get_spark
    from cepopt.solve import build_problem

    inst = _as_instance(instance)
    driver_module(inst.problem)  # fail early when the executor is not built
    fam, problem, _ = build_problem(inst, params)
    plan, info = load_plan(fam, problem, inst, plan_spec or "nonshared", params=params, time_limit=time_limit,
                           seed=seed)
    # Check the inputs before Spark starts (slow, and noisy on stderr).
    if output:
        _results_format(output)
    stream = _local_stream(stream_spec, inst)
    spark = get_spark(master)
    start = time.perf_counter()
    # With estimate_stats a driver that supports it re-plans with `method` on the estimated statistics.
    result = execute(inst, plan, stream, spark=spark, problem=problem, estimate_stats=estimate_stats,
                     method=info.get("method"), time_limit=time_limit, seed=seed)
    wall = time.perf_counter() - start
    if output:
        write_results(result.results, output)
    out = {
        "instance": inst.name,
        "problem": inst.problem,
        "stream": stream_spec or "embedded",
        **info,
        "plan": fam.plan_to_json(plan),
        "results_digest": result.digest(),
        "results_rows": int(len(result.results)),
        "operations": int(result.operations),
        "predicted_cost": result.predicted_cost,
        "time_s": round(result.time_s, 6),
        "wall_time_s": round(wall, 6),
        "metrics": {k: (v if isinstance(v, int | float | str | bool) or v is None else str(v))
                    for k, v in result.metrics.items()},
    }
    if output:
        out["output"] = str(output)
    if len(result.results):
        out["preview"] = result.results.head(10).to_string(index=False)
    return out
