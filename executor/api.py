"""Execute a plan on a stream with an engine and measure it: :func:`execute` and :class:`ExecutionResult`.

Each family has a driver, ``cepopt.executor.<family>_driver``. A driver of the partition-kernel protocol
(Sharon, Hamlet, Gloria) gives ``compile(problem, plan, **options) -> CompiledPlan`` and
``finish(compiled, metrics) -> metrics`` (with ``operations``); :func:`execute` runs the compiled plan on
the Spark engine or the local engine (executor/engines.py). A driver without ``compile`` (join order) runs plans itself:
``execute(problem, plan, events, spark, **options) -> ExecutionResult``, on Spark.

The predicted cost is the family's ``cepopt.<family>.cost.predict(problem, plan)``, in the unit of the
measured operations (``cost.OBJECTIVE.predict_unit``).

The instance -> statistics -> plan -> execution chain around this is :mod:`cepopt.pipeline`; this module
knows problems and plans, never the method registry or the formulations.
"""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cepopt.errors import CepoptError, UnknownNameError
from cepopt.executor import results as res
from cepopt.executor.integers import frame_from_records
from cepopt.executor.output import results_format, write_results, write_spark_results

__all__ = ["ExecutionResult", "driver_module", "execute", "results_format", "spark_digest", "write_results"]


@dataclass
class ExecutionResult:
    """What executing a plan gave: the results (a pandas results frame, or with the Spark engine a Spark
    DataFrame of :data:`~cepopt.executor.results.RESULT_SCHEMA`, values as exact text, persisted), the
    measured operations (the quantity the family's cost model predicts), the predicted cost, wall time
    and further metrics; ``digest_value`` and ``rows`` when the engine computed them."""

    results: Any
    operations: int
    predicted_cost: float | None
    time_s: float
    metrics: dict = field(default_factory=dict)
    digest_value: str | None = None
    rows: int | None = None
    engine: str = "local"
    first_rows: pd.DataFrame | None = None

    @property
    def on_spark(self) -> bool:
        return not isinstance(self.results, pd.DataFrame)

    def digest(self) -> str:
        """The order-independent digest of the results (:func:`cepopt.executor.results.digest`)."""
        if self.digest_value is None:
            if self.on_spark:
                self.digest_value, self.rows = spark_digest(self.results)
            else:
                self.digest_value = res.digest(self.results)
        return self.digest_value

    def row_count(self) -> int:
        if self.rows is None:
            self.rows = int(self.results.count()) if self.on_spark else len(self.results)
        return self.rows

    def to_pandas(self) -> pd.DataFrame:
        """The results as a pandas results frame (Python ints and floats; collects a Spark DataFrame)."""
        if not self.on_spark:
            return self.results
        frame = self.results.toPandas()
        return res.results_frame(zip(frame["query"], frame["group"], frame["window"], frame["aggregate"],
                                     map(res.parse_value, frame["value"]), strict=True))

    def preview(self, n: int = 10) -> pd.DataFrame:
        """The first ``n`` result rows by (query, group, window, aggregate)."""
        if not self.on_spark:
            return self.results.head(n)
        if self.first_rows is not None and (n <= len(self.first_rows) or len(self.first_rows) == self.rows):
            frame = self.first_rows.head(n)
            return frame.assign(value=res.parse_values(frame["value"]))
        frame = self.results.orderBy(*res.RESULT_KEYS).limit(n).toPandas()
        return frame.assign(value=res.parse_values(frame["value"]))

    def release(self) -> None:
        """Drop the cached results of the Spark engine (nothing to do for pandas results)."""
        if self.on_spark and hasattr(self.results, "unpersist"):
            self.results.unpersist()

    def summary(self) -> str:
        lines = [f"results: {self.row_count()} rows, digest {self.digest()[:16]}",
                 f"operations (measured): {self.operations}",
                 f"predicted cost: {'-' if self.predicted_cost is None else f'{self.predicted_cost:.6g}'}",
                 f"time: {self.time_s:.3f} s"]
        for k, v in self.metrics.items():
            if isinstance(v, int | float | str):
                lines.append(f"{k}: {v}")
        return "\n".join(lines)


def spark_digest(results) -> tuple[str, int]:
    """(digest, rows) of a Spark results DataFrame, computed where its partitions are: only one sum per
    partition reaches the driver."""
    def partial(batches):
        total, rows = 0, 0
        for batch in batches:
            t, n = res.digest_sum(batch)
            total, rows = (total + t) % res.DIGEST_MODULUS, rows + n
        yield pd.DataFrame({"total": [f"{total:x}"], "rows": [rows]})

    sums = results.select(*res.RESULT_COLUMNS).mapInPandas(partial, "total string, rows long").collect()
    total = sum(int(r["total"], 16) for r in sums) % res.DIGEST_MODULUS
    return res.digest_hex(total), int(sum(r["rows"] for r in sums))


def driver_module(family_name: str):
    """``cepopt.executor.<family>_driver``; an unknown family is a user error."""
    import importlib.util

    name = f"cepopt.executor.{family_name}_driver"
    if importlib.util.find_spec(name) is None:
        raise UnknownNameError(f"no executor for family {family_name!r}")
    return importlib.import_module(name)


def family_of(problem: Any) -> str:
    """The family a problem object belongs to (its package: ``cepopt.<family>.problem``)."""
    parts = type(problem).__module__.split(".")
    if len(parts) >= 2 and parts[0] == "cepopt":
        return parts[1]
    raise CepoptError(f"cannot tell the family of a {type(problem).__name__}: pass family=")


def predicted(family_name: str, problem: Any, plan: Any) -> float:
    """The family's ``cost.predict(problem, plan)``: the operations the executor should measure."""
    import importlib

    return float(importlib.import_module(f"cepopt.{family_name}.cost").predict(problem, plan))


def operations_unit(family_name: str) -> str:
    """What the family's measured operations (and its predicted cost) count."""
    import importlib

    return importlib.import_module(f"cepopt.{family_name}.cost").OBJECTIVE.predict_unit


def _spark_events(events: Any, spark, schema: Any = None):
    from cepopt.executor.streams import checked, read_stream, to_spark

    if isinstance(events, str | Path):
        return read_stream(events, spark, schema=schema)
    if isinstance(events, pd.DataFrame):
        return to_spark(events, spark)
    if isinstance(events, list | tuple):
        return to_spark(frame_from_records(events), spark)
    return checked(events)  # a Spark DataFrame


def _local_events(events: Any) -> pd.DataFrame:
    from cepopt.executor.streams import _check_pandas, read_stream_pandas

    if isinstance(events, str | Path):
        return read_stream_pandas(events)
    if isinstance(events, list | tuple):
        events = frame_from_records(events)
    if isinstance(events, pd.DataFrame):
        return _check_pandas(events, "the stream", None)
    from cepopt.executor.integers import to_pandas

    return _check_pandas(to_pandas(events), "the stream", None)  # a Spark DataFrame


def execute(problem: Any, plan: Any, events: Any, *, family: str | None = None, engine: str = "spark",
            spark=None, master: str | None = None, source: str | None = None, output: str | None = None,
            schema: Any = None, progress=None, **options) -> ExecutionResult:
    """Run ``plan`` of ``problem`` on ``events`` with ``engine`` (``spark`` or ``local``) and measure it.

    ``events``: a pandas or Spark DataFrame, event dicts, or a stream path / URI (``schema``: its Spark
    DDL, else declared from the file). ``source`` names the stream in error messages. With ``output``
    the results are written there: one file, CSV or Parquet by extension, on either engine
    (executor/output.py). Extra keywords go to the driver's ``compile`` (or ``execute``) when it
    accepts them.
    """
    from cepopt.executor.engines import ENGINES

    if engine not in ENGINES:
        raise CepoptError(f"--engine {engine!r}: unknown engine (known: {', '.join(ENGINES)})")
    family = family or family_of(problem)
    driver = driver_module(family)
    if isinstance(events, str | Path):
        source = source or str(events)
    if not hasattr(driver, "compile"):
        return _execute_native(driver, problem, plan, events, engine, spark, master, schema, output, options)
    compiled = driver.compile(problem, plan, **_accepted(driver.compile, options))
    if engine == "local":
        from cepopt.executor.engines import run_local

        events = _check_stream(problem, _local_events(events), source)
        run = run_local(compiled, events, progress=progress)
        if output:
            write_results(run.results, output)
    else:
        from cepopt.executor.engines import run_spark
        from cepopt.executor.session import get_spark

        size = _size(events)
        spark = spark or get_spark(master, small=_small(size))
        events = _check_stream(problem, _spark_events(events, spark, schema), source, spark)
        run = run_spark(compiled, events, spark, source=source, output=output, progress=progress,
                        single=_tiny(size))
    metrics = driver.finish(compiled, dict(run.metrics))
    try:
        prediction = predicted(family, problem, plan)
    except CepoptError as exc:  # a plan the kernels run but the cost model does not price: said, not hidden
        prediction = None
        metrics["predicted_error"] = str(exc)
    metrics["mode"] = run.engine
    if run.engine == "spark":
        metrics["master"] = spark.sparkContext.master
    return ExecutionResult(run.results, int(metrics.get("operations", 0)), prediction, run.time_s, metrics,
                           run.digest, run.rows, run.engine, run.extra.get("preview"))


def _check_stream(problem: Any, events: Any, source: str | None, spark=None) -> Any:
    """The stream as read, checked against the queries (a CepoptError naming the place, the same on both
    engines): the columns they aggregate (SUM, AVG, MIN, MAX) hold numbers (before any work), and no
    time stamp is before 0 under windows with a SLIDE (which start at 0; checked as the stream is read)."""
    from cepopt.executor.streams import refuse_before_zero, require_numbers, text_columns
    from cepopt.model import Aggregate

    queries = getattr(getattr(problem, "workload", None), "queries", ())
    names = dict.fromkeys(item.attr for q in queries for item in q.returns
                          if isinstance(item, Aggregate) and item.attr is not None)
    require_numbers(text_columns(events, names), source, spark)
    if any(q.window.slide is not None for q in queries):
        events = refuse_before_zero(events, source)
    return events


#: a stream at most this large (rows given in memory, bytes of a local file) starts a JVM for a short life
#: (executor/session.py) ...
SMALL_ROWS, SMALL_BYTES = 200_000, 8 << 20
#: ... and at most this large runs in one Spark task (engines.run_spark's ``single``)
TINY_ROWS, TINY_BYTES = 20_000, 1 << 20


def _size(events: Any) -> tuple[str, float]:
    """("rows" or "bytes", how many) of a stream given in memory or as a local path; ("", inf) else."""
    if isinstance(events, pd.DataFrame | list | tuple):
        return "rows", len(events)
    if isinstance(events, str | Path):
        from cepopt.executor.streams import is_local, local_path, parquet_files

        if is_local(events):
            path = local_path(events)
            if path.is_file():
                return "bytes", path.stat().st_size
            if path.is_dir():  # a folder's Parquet files, not a walk of it (`--stream /` must not list /proc)
                return "bytes", sum(f.stat().st_size for f in parquet_files(path, str(events)))
    return "", math.inf


def _small(size: tuple[str, float]) -> bool:
    """Whether a stream of this :func:`_size` is small enough for a JVM started for a short life (see
    executor/session.py)."""
    kind, n = size
    return n <= (SMALL_ROWS if kind == "rows" else SMALL_BYTES)


def _tiny(size: tuple[str, float]) -> bool:
    """Whether a stream of this :func:`_size` is small enough to run in one Spark task."""
    kind, n = size
    return n <= (TINY_ROWS if kind == "rows" else TINY_BYTES)


def _accepted(fn, options: dict) -> dict:
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(options)
    return {k: v for k, v in options.items() if k in params}


def _execute_native(driver, problem, plan, events, engine: str, spark, master, schema, output,
                    options) -> ExecutionResult:
    """A driver that runs plans itself (join order: a join tree of DataFrames)."""
    params = inspect.signature(driver.execute).parameters
    if engine == "local" and "engine" not in params:
        raise CepoptError("this family's executor runs on Spark only (use --engine spark)")
    kwargs = _accepted(driver.execute, options)
    if "engine" in params:
        kwargs["engine"] = engine
    if engine == "local":
        result = driver.execute(problem, plan, _local_events(events), None, **kwargs)
        if output:
            write_results(result.results, output)
        return result
    from cepopt.executor.session import get_spark

    spark = spark or get_spark(master, small=_small(_size(events)))
    start = time.perf_counter()
    result = driver.execute(problem, plan, _spark_events(events, spark, schema), spark, **kwargs)
    result.engine = "spark"
    if not result.time_s or math.isnan(result.time_s):
        result.time_s = time.perf_counter() - start
    if output:
        from cepopt.executor.engines import spark_failure

        try:
            write_spark_results(result.results, output)
        except CepoptError:
            raise
        except Exception as exc:  # noqa: BLE001 -- Py4J / Spark errors: one line
            raise spark_failure(exc) from None
    return result
