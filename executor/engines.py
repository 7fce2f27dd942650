"""The engines that run a compiled plan (executor/partitions.py) on a stream: Spark and local.

Both do the same, per partition class of the compiled plan: keep the class's event types, select its
columns, give each event the window blocks that hold it (:func:`~cepopt.executor.partitions.window_blocks`:
an event goes to at most two blocks), group by the class's keys and the block, run the kernel on each
group (the *input step* first orders the group's events canonically, by time then type then the other
columns, so that operation counts do not depend on the order events arrive in), and merge the partials
of every group exactly (:func:`~cepopt.executor.partitions.merge_text`).

* :func:`run_spark`: ``groupBy(keys + block).applyInPandas`` with the compiled plan broadcast once; the
  partials are hash-partitioned by (query, group, window, aggregate) and merged on the cluster into a
  results DataFrame (:data:`~cepopt.executor.results.RESULT_SCHEMA`, values as exact text), persisted.
  One job computes it (or writes it, with ``output``); the kernels' counters come back in an
  accumulator, and so do the row count, an order-independent digest computed where the rows are
  (:func:`~cepopt.executor.results.digest_sum`) and the first rows by key (a preview): nothing else
  reaches the driver. A tiny stream (``single``) skips the shuffles: one task runs the local engine's
  work (:func:`local_results`) on the whole stream, one stage and one Python worker in all, which is
  most of a small run's time saved. The window blocks are computed in long arithmetic over named
  columns (:func:`_block_columns`).
* :func:`run_local`: the same kernels in process, pandas ``groupby``, no JVM (pyspark is not imported).

Integer columns reach the kernels exactly on both engines (executor/integers.py: a Spark long column
crosses into Python as value and null flag, Arrow would make one with a null float64), in the same
form (:func:`prepare_partition`), so the kernels see the same arrays whatever the engine.

A kernel's :class:`~cepopt.errors.CepoptError` on a worker, and a bad event met while reading
(executor/streams.py), reach the caller as one CepoptError.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.integers import NULL_PREFIX
from cepopt.executor.output import write_spark_results
from cepopt.executor.partitions import PARTIAL_COLUMNS, PARTIAL_SCHEMA, merge_text, window_blocks
from cepopt.executor.results import RESULT_COLUMNS, RESULT_KEYS, RESULT_SCHEMA, digest_hex, digest_sum, parse_values

__all__ = ["ENGINES", "EngineRun", "Progress", "prepare_partition", "run_local", "run_spark"]

ENGINES = ("spark", "local")
BLOCK = "__cepopt_block"
#: result rows (the first by key) the Spark engine brings back for a preview, with the digest
PREVIEW_ROWS = 10


@dataclass
class EngineRun:
    """What an engine gives: the results (a persisted Spark DataFrame with text values, or a pandas
    results frame with Python values), the kernels' summed counters, the digest and row count of the
    results, and the wall time of the run."""

    results: Any
    metrics: dict
    digest: str
    rows: int
    time_s: float
    engine: str
    extra: dict = field(default_factory=dict)


class Progress:
    """Progress of a long execution on stderr: nothing for the first ``after`` seconds, then a line at
    most every ``every`` seconds. :meth:`during` says what runs and keeps saying it while one long call
    (a partition whose kernels compile, a merge) gives no chance to report."""

    def __init__(self, label: str = "execute", *, after: float = 5.0, every: float = 5.0, stream=None):
        self.label, self.after, self.every = label, after, every
        self.start = time.perf_counter()
        self.last = self.start + after - every
        self.stream = stream or sys.stderr
        self.shown = False
        self.status: str | None = None
        self._lock = threading.Lock()

    def __call__(self, message: str | Callable[[], str | None]) -> None:
        with self._lock:
            now = time.perf_counter()
            if now - self.last < self.every:
                return
            text = message() if callable(message) else message
            if text:
                self.last = now
                self.shown = True
                print(f"cepopt: {self.label}: {text} ({now - self.start:.0f} s)", file=self.stream, flush=True)

    @contextlib.contextmanager
    def during(self, status: str, *, tick: float = 1.0):
        """Report ``status`` (or what :attr:`status` is changed to) until the block ends."""
        self.status = status
        done = threading.Event()

        def loop() -> None:
            while not done.wait(tick):
                self(lambda: self.status)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            done.set()
            thread.join(timeout=2)
            self.status = None


def prepare_partition(events: pd.DataFrame) -> pd.DataFrame:
    """The input step of a partition: its integer columns in one exact form, int64 where no value is
    missing (:func:`~cepopt.executor.integers.canonical_integers`, so that both engines hand a kernel
    the same arrays), and its events in a canonical order (time, type, then the other columns),
    whatever order they arrived in (a shuffle's order is arbitrary; ties decide bursts)."""
    from cepopt.executor.integers import canonical_integers

    events = canonical_integers(events)
    ts = events["ts"].to_numpy()
    if len(ts) < 2 or bool((ts[1:] > ts[:-1]).all()):
        return events.reset_index(drop=True)
    cols = ["ts", "type"] + [c for c in events.columns if c not in ("ts", "type")]
    try:
        return events.sort_values(cols, kind="stable", na_position="last").reset_index(drop=True)
    except TypeError:  # a column mixing types that do not compare
        return events.sort_values(["ts", "type"], kind="stable").reset_index(drop=True)


def _add(total: dict, metrics: dict) -> dict:
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            continue
        total[k] = total.get(k, 0) + (v.item() if hasattr(v, "item") else v)
    return total


def _timed_run(compiled, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
    """The kernel on one partition; the engine's own wall and CPU time of it (``engine_kernel_s``,
    ``engine_kernel_cpu_s``), and the kernel's counters where it gives none (``kernel_s``, ``partitions``,
    ``events``)."""
    start, cpu = time.perf_counter(), time.process_time()
    partials, metrics = compiled.run(index, events, block)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    metrics = _add({}, metrics)
    metrics.setdefault("kernel_s", wall)
    metrics.setdefault("kernel_cpu_s", cpu)
    metrics.setdefault("partitions", 1)
    metrics.setdefault("events", len(events))
    metrics["engine_kernel_s"] = wall
    metrics["engine_kernel_cpu_s"] = cpu
    return partials, metrics


# ---------------------------------------------------------------------------------------------
# local engine
# ---------------------------------------------------------------------------------------------


def _local_class(cls, events: pd.DataFrame) -> pd.DataFrame:
    """The events of one class with its columns (missing ones as None) and, when blocked, its block."""
    df = events[events["type"].isin(cls.types)]
    missing = [c for c in cls.columns if c not in df.columns]
    if missing:
        df = df.assign(**dict.fromkeys(missing))
    df = df[list(cls.columns)]
    if cls.windows_per_block is None or cls.slide is None:
        return df
    first, last = window_blocks(df["ts"].to_numpy(), cls)
    inside = first <= last
    two = last > first
    parts = [df[inside].assign(**{BLOCK: first[inside]}), df[two].assign(**{BLOCK: last[two]})]
    return pd.concat(parts, ignore_index=False).sort_index(kind="stable")


def _local_groups(cls, df: pd.DataFrame) -> Iterator[tuple[int | None, pd.DataFrame]]:
    blocked = BLOCK in df.columns
    keys = list(cls.keys) + ([BLOCK] if blocked else [])
    if not keys:
        if len(df):
            yield None, df
        return
    for key, part in df.groupby(keys, dropna=False, sort=True):
        block = int(key[-1] if isinstance(key, tuple) else key) if blocked else None
        yield block, part.drop(columns=[BLOCK]) if blocked else part


def _count_groups(cls, df: pd.DataFrame) -> int:
    keys = list(cls.keys) + ([BLOCK] if BLOCK in df.columns else [])
    if not keys:
        return int(len(df) > 0)
    return int(df.groupby(keys, dropna=False, sort=False).ngroups)


def local_results(compiled, events: pd.DataFrame, progress: Progress | None = None) -> tuple[pd.DataFrame, dict]:
    """(merged results with values as exact text, summed counters) of ``compiled`` on a pandas stream:
    the whole work of the local engine, and of the Spark engine's single task on a tiny stream."""
    progress = progress or Progress()
    metrics: dict = {}
    partials = []
    classes = len(compiled.classes)
    with progress.during(f"partitioning {len(events):,} events into {classes} classes") as report:
        for index, cls in enumerate(compiled.classes):
            df = _local_class(cls, events)
            total = _count_groups(cls, df)
            for done, (block, part) in enumerate(_local_groups(cls, df)):
                first = " (the first loads or compiles the kernels)" if index == done == 0 else ""
                report.status = f"class {index + 1}/{classes}: running partition {done + 1} of {total}{first}"
                out, m = _timed_run(compiled, index, prepare_partition(part), block)
                _add(metrics, m)
                if len(out):
                    partials.append(out[PARTIAL_COLUMNS])
        report.status = f"merging {len(partials)} partial results"
        merged = merge_text(pd.concat(partials, ignore_index=True) if partials
                            else pd.DataFrame(columns=PARTIAL_COLUMNS))
    return merged, metrics


def run_local(compiled, events: pd.DataFrame, *, progress: Progress | None = None) -> EngineRun:
    """Run ``compiled`` on a pandas stream in process (module docstring)."""
    start = time.perf_counter()
    merged, metrics = local_results(compiled, events, progress)
    total, rows = digest_sum(merged)
    results = merged.assign(value=parse_values(merged["value"]))
    results = results.sort_values(RESULT_KEYS, kind="stable").reset_index(drop=True)
    metrics["stream_events"] = int(len(events))
    return EngineRun(results, metrics, digest_hex(total), rows, time.perf_counter() - start, "local")


# ---------------------------------------------------------------------------------------------
# Spark engine
# ---------------------------------------------------------------------------------------------


def _block_columns(sdf, cls):
    """``sdf`` with the columns ``__cepopt_first`` and ``__cepopt_last`` of :func:`window_blocks` for its
    ``ts``, exactly: long arithmetic, or decimal when the windows are fractions of a time unit.

    Built in two projections over named columns: an expression that refers to ``lo`` and ``hi`` several
    times would otherwise carry their whole trees each time (Spark does not share them), which made the
    block column cost seconds of JVM time per million events.
    """
    from pyspark.sql import functions as F

    k = int(cls.windows_per_block)
    d = math.lcm(Fraction(cls.length).denominator, Fraction(cls.slide).denominator)
    w, s = int(Fraction(cls.length) * d), int(Fraction(cls.slide) * d)
    # time in units of 1/d (a fractional window: ts * d as a decimal of 38 digits, never a double)
    t = "ts" if d == 1 else f"(CAST(ts AS DECIMAL(38, 0)) * {d})"
    if d > 2 ** 60:
        raise CepoptError(f"window length {cls.length} / slide {cls.slide}: too fine a fraction of a time unit")
    # a div b rounds toward zero; a - pmod(a, b) is a multiple of b, so the quotient is a floor
    lo = F.expr(f"greatest(0L, CAST((({t} - {w}) - pmod({t} - {w}, {s})) div {s} AS BIGINT) + 1L)")
    hi = F.expr(f"CAST(({t} - pmod({t}, {s})) div {s} AS BIGINT)")
    lo_hi = sdf.withColumns({"__cepopt_lo": lo, "__cepopt_hi": hi})
    first = F.expr(f"CASE WHEN __cepopt_lo > __cepopt_hi THEN (__cepopt_hi - pmod(__cepopt_hi, {k}L)) div {k}L + 1L "
                   f"ELSE __cepopt_lo div {k}L END")  # lo >= 0: div is a floor
    last = F.expr(f"(__cepopt_hi - pmod(__cepopt_hi, {k}L)) div {k}L")
    return lo_hi.withColumns({"__cepopt_first": first, "__cepopt_last": last}).drop("__cepopt_lo", "__cepopt_hi")


def _spark_class(cls, events):
    """The class's events and columns on Spark (long columns as value and null flag,
    :func:`~cepopt.executor.integers.split_nulls`), with the block column when blocked."""
    from pyspark.sql import functions as F

    from cepopt.executor.integers import split_nulls

    sdf = events.filter(F.col("type").isin(list(cls.types)))
    present = set(events.columns)
    sdf = sdf.select(*[F.col(c) if c in present else F.lit(None).cast("string").alias(c) for c in cls.columns])
    sdf, _ = split_nulls(sdf)
    if cls.windows_per_block is None or cls.slide is None:
        return sdf.withColumn(BLOCK, F.lit(0).cast("long")), False
    sdf = _block_columns(sdf, cls)
    first, last = F.col("__cepopt_first"), F.col("__cepopt_last")
    if cls.length == cls.slide:  # tumbling windows: an event lies in one block (none before time 0)
        blocks = sdf.filter(first <= last).withColumn(BLOCK, first)
    else:
        # K >= W/S: an event lies in at most two blocks (none when first > last)
        blocks = sdf.withColumn(BLOCK, F.explode(F.when(first > last, F.array().cast("array<bigint>"))
                                                 .when(first == last, F.array(first)).otherwise(F.array(first, last))))
    return blocks.drop("__cepopt_first", "__cepopt_last"), True


def _kernel_udf(compiled_bc, index: int, blocked: bool, counters):
    def run(key: tuple, pdf: pd.DataFrame) -> pd.DataFrame:
        from cepopt.executor.integers import restore_nulls
        from cepopt.executor.streams import marked

        block = int(key[-1]) if blocked else None
        events = prepare_partition(restore_nulls(pdf.drop(columns=[BLOCK])))
        try:
            partials, metrics = _timed_run(compiled_bc.value, index, events, block)
        except CepoptError as exc:
            raise marked(exc) from None
        counters.add(metrics)
        return partials[PARTIAL_COLUMNS] if len(partials) else pd.DataFrame(columns=PARTIAL_COLUMNS)

    return run


def _report(merged: pd.DataFrame, digests, firsts) -> None:
    """Add a partition of the results to the digest and the preview accumulators."""
    digests.add(digest_sum(merged))
    head = merged.sort_values(RESULT_KEYS).head(PREVIEW_ROWS)
    firsts.add(list(head.itertuples(index=False, name=None)))


def _merge_udf(digests, firsts):
    def merge(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        parts = [b for b in batches if len(b)]
        if not parts:
            return
        merged = merge_text(pd.concat(parts, ignore_index=True))
        _report(merged, digests, firsts)
        yield merged

    return merge


def _single_udf(compiled_bc, counters, digests, firsts):
    """The whole run in one task (a tiny stream in one partition): the local engine's work on it."""
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        from cepopt.executor.integers import restore_nulls
        from cepopt.executor.streams import marked

        parts = [b for b in batches if len(b)]
        if not parts:
            return
        try:
            events = restore_nulls(pd.concat(parts, ignore_index=True))
            merged, metrics = local_results(compiled_bc.value, events)
        except CepoptError as exc:
            raise marked(exc) from None
        counters.add(metrics)
        if len(merged):
            _report(merged, digests, firsts)
            yield merged[RESULT_COLUMNS]

    return run


def _dict_param():
    from pyspark.accumulators import AccumulatorParam

    class DictSum(AccumulatorParam):
        def zero(self, value):
            return {}

        def addInPlace(self, a, b):
            return _add(a, b)

    return DictSum()


def _digest_param():
    from pyspark.accumulators import AccumulatorParam

    class DigestSum(AccumulatorParam):
        def zero(self, value):
            return (0, 0)

        def addInPlace(self, a, b):
            return ((a[0] + b[0]) % 2 ** 256, a[1] + b[1])

    return DigestSum()


def _first_rows_param():
    from pyspark.accumulators import AccumulatorParam

    class FirstRows(AccumulatorParam):
        def zero(self, value):
            return []

        def addInPlace(self, a, b):
            return sorted(a + b, key=lambda r: r[:4])[:PREVIEW_ROWS]

    return FirstRows()


def _spark_progress(sc, progress: Progress, done: threading.Event) -> threading.Thread:
    tracker = sc.statusTracker()

    def message() -> str | None:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        stages = [s for s in stages if s is not None]
        if not stages:
            return None
        total = sum(s.numTasks for s in stages)
        finished = sum(s.numCompletedTasks for s in stages)
        running = sum(s.numActiveTasks for s in stages)
        first = " (the first tasks load or compile the kernels)" if finished == 0 else ""
        return (f"Spark stage{'s' * (len(stages) > 1)} {', '.join(str(s.stageId) for s in stages)}: "
                f"{finished}/{total} tasks done, {running} running{first}")

    def loop() -> None:
        while not done.wait(1.0):
            progress(message)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def spark_failure(exc: BaseException, source: str | None = None) -> CepoptError:
    """One line for a failed Spark job: the user error it carries (a bad event, a kernel's message), or
    the first line of Spark's own error."""
    from cepopt.executor.session import _first_line, missing_cepopt
    from cepopt.executor.streams import user_error

    found = user_error(exc, source)
    if found is not None:
        return found
    text = str(exc)
    found = missing_cepopt(text)
    if found is not None:
        return found
    if "Traceback (most recent call last)" in text:  # a Python error on a worker: its last line says it
        python = text[text.index("Traceback (most recent call last)"):]
        errors = [e for e in re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception)\b.*)$", python, re.M)
                  if "Traceback" not in e and not e.startswith(("org.", "java.", "py4j."))]
        if errors:  # the last exception of the Python traceback (frames are indented, it is not)
            return CepoptError(f"the Spark job failed on a worker: {errors[-1]}")
    return CepoptError(f"the Spark job failed: {_first_line(exc)}")


def _partitioned(compiled, compiled_bc, events, spark, counters, digests, firsts):
    """The results DataFrame of the partitioned run: per class, ``groupBy(keys + block).applyInPandas``
    of the kernel; the partials of all classes hash-partitioned by their key and merged."""
    frames = []
    for index, cls in enumerate(compiled.classes):
        sdf, blocked = _spark_class(cls, events)
        # a long key groups as its value and null flag (split_nulls), the block last
        keys = [k for c in cls.keys for k in (c, NULL_PREFIX + c) if k in sdf.columns] + [BLOCK]
        frames.append(sdf.groupBy(*keys).applyInPandas(_kernel_udf(compiled_bc, index, blocked, counters),
                                                       PARTIAL_SCHEMA))
    if frames:
        partials = frames[0]
        for frame in frames[1:]:
            partials = partials.unionByName(frame)
    else:
        partials = spark.createDataFrame([], PARTIAL_SCHEMA)
    return partials.repartition(*RESULT_KEYS).mapInPandas(_merge_udf(digests, firsts), RESULT_SCHEMA)


def run_spark(compiled, events, spark, *, source: str | None = None, output: str | None = None,
              progress: Progress | None = None, single: bool = False) -> EngineRun:
    """Run ``compiled`` on the Spark DataFrame ``events`` (module docstring); with ``output``, the
    results are written there by the same job. ``single``: a tiny stream, run in one task (one stage, no
    shuffle, one Python worker: the local engine's work on the whole stream), which is what most of a
    small run's time went to."""
    start = time.perf_counter()
    sc = spark.sparkContext
    compiled_bc = sc.broadcast(compiled)
    counters = sc.accumulator({}, _dict_param())
    digests = sc.accumulator((0, 0), _digest_param())
    firsts = sc.accumulator([], _first_rows_param())
    if single:
        from cepopt.executor.integers import split_nulls

        one = split_nulls(events.coalesce(1))[0]
        results = one.mapInPandas(_single_udf(compiled_bc, counters, digests, firsts), RESULT_SCHEMA)
    else:
        results = _partitioned(compiled, compiled_bc, events, spark, counters, digests, firsts)
    results = results.persist()
    done = threading.Event()
    watcher = _spark_progress(sc, progress or Progress(), done)
    try:
        if output:
            write_spark_results(results, output)
        else:  # one job computes (and caches) the results; nothing comes back but the accumulators
            results.write.format("noop").mode("overwrite").save()
    except CepoptError:
        results.unpersist()
        raise
    except Exception as exc:  # noqa: BLE001 -- Py4J / Spark errors: one line
        results.unpersist()
        raise spark_failure(exc, source) from exc
    finally:
        done.set()
        watcher.join(timeout=2)
        compiled_bc.unpersist()
    total, rows = digests.value
    metrics = dict(counters.value)
    extra = {"preview": pd.DataFrame(firsts.value, columns=RESULT_COLUMNS)}
    if output:
        extra["output"] = output
    return EngineRun(results, metrics, digest_hex(total), int(rows), time.perf_counter() - start, "spark", extra)
