"""Evaluate join trees (executor/join_plan.py) on a Spark DataFrame of events.

The Spark engine runs the join kernel of executor/join_local.py (NumPy range joins on time) with
``mapInPandas``, so that both engines count and match alike by construction:

- A stream that arrives in no more partitions than Spark has cores (a Parquet file of one row
  group, a CSV of less than 128 MB) is read by one task and goes through the kernel as one chunk:
  no exchange, and events without ``id`` are numbered in that task.
- Otherwise (or with ``exchange=True``) the events of the patterns' types are cut into chunks of
  ``L`` time units (``chunk_windows`` windows) and copied to every chunk that needs them: chunk k
  owns the partial matches whose first timestamp lies in ``[kL, (k+1)L)``; their events lie in
  ``[kL, (k+1)L + W]``, and a negated event that can reject one of their sub-matches in
  ``[kL - W, (k+1)L + 2W]`` (an event is copied to one or two chunks, a negated type's to at most
  three). The copies are hash-partitioned by chunk (one shuffle), and each partition runs the
  kernel once over all its chunks: a copy's timestamp is shifted by ``k·G`` (``G > 4W``), which keeps
  the chunks' images more than a window apart, so that no match spans two of them, while
  differences within a chunk are unchanged. A partial match is counted (and a full match returned)
  by the chunk that owns its first event only.
- The partial-match counts of every counted node (``count`` and ``active``, the sum over them of
  ``W - (last - first)``, their total lifetime in the window; divided by the stream's duration it is
  the time-averaged number of active partial matches, the quantity the cost model's PM(k) =
  W^k·∏r·∏sel predicts) and the kernel's seconds reach the driver through an accumulator; the full
  matches are a DataFrame of texts (``_b``, the tree's index, and ``value``), persisted by the one
  Spark job (a no-op write) that computes everything. The stream's size and span are observed on
  the way in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from cepopt.errors import CepoptError
from cepopt.executor.integers import split_nulls
from cepopt.executor.join_plan import CompiledPattern, JoinTree, NodeCount, PlanRun
from cepopt.executor.streams import nan_to_null

__all__ = ["Evaluation", "JoinRun", "NodeCount", "evaluate", "evaluate_many", "match_values", "prepare_events"]

#: The run of one tree (the engine-neutral record of executor/join_plan.py); its ``matches`` is a
#: DataFrame with one column ``value``, the match texts.
JoinRun = PlanRun

#: a chunk spans this many windows: the copies near its end (about 1/CHUNK_WINDOWS of the events)
#: are the engine's only duplicated work
CHUNK_WINDOWS = 64
#: the schema of the kernel's output: the tree's index and a full match's text
MATCHES_SCHEMA = "_b int, value string"


@dataclass
class Evaluation:
    """Trees evaluated in one Spark job: one run per tree, the stream's size and time span
    (observed on the way in; None unless asked for) and the persisted results table when asked for."""

    runs: list[JoinRun]
    time_s: float
    events: int | None = None
    first_ts: int | None = None
    last_ts: int | None = None
    results: DataFrame | None = None
    #: seconds the kernel ran, summed over the tasks (its events in, matches out: no Spark work)
    kernel_s: float | None = None


def prepare_events(events: DataFrame, *, number_rows: bool = True) -> DataFrame:
    """``events`` with ``ts`` and ``id`` as longs and NaN turned into null, so that the plan's
    comparisons treat it as missing (cepopt.predicates). A stream without ``id`` gets its row
    numbers 0, 1, ... in input order (the ids the local engine gives; one small job counts the rows of
    each input partition); with ``number_rows=False`` it is left without, for :func:`evaluate_many`
    to number (without that job when it reads the stream in one task)."""
    for col in ("ts", "type"):
        if col not in events.columns:
            raise CepoptError(f"the stream has no column {col!r} (columns: {', '.join(events.columns)})")
    if "id" not in events.columns and number_rows:
        events = _with_row_numbers(events)
    events = nan_to_null(events)
    if "id" not in events.columns:
        return events.withColumn("ts", F.col("ts").cast("long"))
    return events.withColumns({"ts": F.col("ts").cast("long"), "id": F.col("id").cast("long")})


def _with_row_numbers(events: DataFrame) -> DataFrame:
    """``events`` with ``id`` = the row number in input order: monotonically_increasing_id is the
    partition index << 33 plus the row's index in its partition, so the row number adds the sizes of
    the partitions before it."""
    df = events.withColumn("_mid", F.monotonically_increasing_id())
    part = F.shiftright(F.col("_mid"), 33)
    sizes = dict(df.groupBy(part.alias("p")).count().collect())
    offsets, total = [], 0
    for p in range(max(sizes, default=-1) + 1):
        offsets.append(total)
        total += int(sizes.get(p, 0))
    base = F.element_at(F.array(*[F.lit(o) for o in offsets] or [F.lit(0)]), part.cast("int") + 1)
    return df.withColumn("id", base + F.col("_mid").bitwiseAND(F.lit((1 << 33) - 1))).drop("_mid")


def _q(name: str) -> str:
    """A column name quoted for SQL."""
    return "`" + name.replace("`", "``") + "`"


def _text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class _Chunks:
    """The chunking of one evaluation: chunk length ``length`` and shift ``gap`` (integers, time
    units) for the largest window ``w`` of the trees, in whole time units (time stamps are integers).
    Every expression is long arithmetic: a time stamp past 2^53 is no double."""

    w: int
    length: int
    gap: int

    @classmethod
    def of(cls, trees: Sequence[JoinTree], windows: int) -> _Chunks:
        """Chunks of ``windows`` windows (at least 2: a chunk's reach is its neighbours')."""
        from cepopt.executor.join_local import window_units

        if windows < 2:
            raise CepoptError(f"chunk_windows must be at least 2, got {windows}")
        w = max(window_units(t.pattern.window) for t in trees)
        return cls(w, max(1, windows * w), 4 * w + 2)

    def chunk(self) -> str:
        """SQL: the chunk of ``ts``, floor(ts / length) in long arithmetic."""
        return f"((ts - pmod(ts, {self.length}L)) div {self.length}L)"

    def copies(self, negated_types: Sequence[str]) -> str:
        """SQL: the chunks an event is copied to (its own chunk c, and c-1 / c+1 when it lies in their
        reach: positive events ``[kL, (k+1)L + W]``, negated types ``[kL - W, (k+1)L + 2W]``), from
        its offset ``pmod(ts, L)`` in its chunk. Plain CASE expressions, no lambda: Spark compiles
        them, it interprets higher-order functions."""
        c, r, w = self.chunk(), f"pmod(ts, {self.length}L)", f"{self.w}L"
        positive = f"CASE WHEN {r} <= {w} THEN array({c} - 1, {c}) ELSE array({c}) END"
        if not negated_types:
            return positive
        before = f"{r} <= 2 * {w}"
        after = f"{r} >= {self.length}L - {w}"
        negated = (f"CASE WHEN {before} AND {after} THEN array({c} - 1, {c}, {c} + 1) "
                   f"WHEN {before} THEN array({c} - 1, {c}) WHEN {after} THEN array({c}, {c} + 1) "
                   f"ELSE array({c}) END")
        types = ", ".join(_text(t) for t in negated_types)
        return f"CASE WHEN type IN ({types}) THEN {negated} ELSE {positive} END"


def _chunked(trees: Sequence[JoinTree], events: DataFrame, negate: bool, exchange: bool | None,
             chunk_windows: int) -> tuple[DataFrame, list[str]]:
    """The events the trees read, with ``_own`` and ``type`` as its index in the returned list of
    types (a number crosses to Python faster than a text); with ``exchange`` one row per chunk copy,
    the copy's ``ts`` shifted, hash-partitioned by chunk (the evaluation's one shuffle), else every
    event once in one partition (see :func:`evaluate_many`). Events without ``id`` are numbered in
    input order."""
    items = [(t.pattern, it) for t in trees for it in t.pattern.items if negate or not it.negated]
    attrs = sorted({a for p, it in items for a in p.attrs_of(it.position)}
                   | {f.attr for p, it in items for f in p.filters_of(it.position)})
    missing = set(attrs) - set(events.columns)
    if missing:
        raise CepoptError(f"the stream has no attribute {sorted(missing)[0]!r} used by the pattern")
    attr_names = [a for a in attrs if a not in ("id", "ts", "type")]
    attrs = [_q(a) for a in attr_names]
    negated = sorted({it.type for _, it in items if it.negated})
    names = sorted({it.type for _, it in items})
    code = "CASE type " + " ".join(f"WHEN {_text(t)} THEN {i}" for i, t in enumerate(names)) + " END AS type"
    cores = max(1, int(events.sparkSession.sparkContext.defaultParallelism))
    if exchange is None:
        exchange = events.rdd.getNumPartitions() > cores
    if not exchange:
        if "id" not in events.columns:  # one partition: monotonically_increasing_id is the row number
            events = events.coalesce(1).withColumn("id", F.monotonically_increasing_id())
        df = events.where(F.expr(f"type IN ({', '.join(map(_text, names))})"))
        return split_nulls(df.selectExpr("id", "ts", code, *attrs).coalesce(1), attr_names)[0], names
    if "id" not in events.columns:
        events = _with_row_numbers(events)
    chunks = _Chunks.of(trees, chunk_windows)
    df = events.where(F.expr(f"type IN ({', '.join(map(_text, names))})"))
    df = df.selectExpr("id", "ts", "type", *attrs, f"explode({chunks.copies(negated)}) AS _k")
    df = df.selectExpr("id", f"ts + _k * {chunks.gap} AS ts", code, *attrs,
                       f"_k = {chunks.chunk()} AS _own", "_k")
    return split_nulls(df.repartition(cores, "_k").drop("_k"), attr_names)[0], names


def _counter(spark, size: int):
    """An accumulator of ``size`` (count, active) pairs and the kernel's seconds, summed element-wise
    over the tasks."""
    from pyspark.accumulators import AccumulatorParam

    class Sums(AccumulatorParam):
        def zero(self, value):
            return [0] * len(value)

        def addInPlace(self, a, b):
            return [x + y for x, y in zip(a, b, strict=True)]

    return spark.sparkContext.accumulator([0] * (2 * size + 1), Sums())


def _kernel(trees: Sequence[JoinTree], negate: bool, counter, types: list[str]):
    """The mapInPandas function: the partition's chunks through the kernel, the counts into
    ``counter``, the owned full matches out as (tree index, text)."""
    def run(batches):
        from cepopt.executor.integers import restore_nulls
        from cepopt.executor.join_local import evaluate_partition
        from cepopt.executor.streams import marked

        frames = list(batches)
        if not frames:
            return
        events = restore_nulls(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
        start = time.perf_counter()
        try:
            outcome = evaluate_partition(trees, events, negate=negate, types=types)
        except CepoptError as exc:
            raise marked(exc) from None
        sums: list = []
        for nodes, _ in outcome:
            for n in nodes:
                sums += [n.count or 0, n.active or 0.0]
        counter.add([*sums, time.perf_counter() - start])
        for b, (_, texts) in enumerate(outcome):
            if texts:
                yield pd.DataFrame({"_b": pd.Series([b] * len(texts), dtype="int32"),
                                    "value": pd.Series(texts, dtype=object)})

    return run


def _node_records(trees: Sequence[JoinTree], negate: bool) -> list[list[NodeCount]]:
    """Every tree's nodes in post-order, counts to be filled (None for a node its cost does not count)."""
    out = []
    for t in trees:
        names = t.pattern.leaf_names()
        active_neg = negate and bool(t.pattern.negations)
        out.append([NodeCount(n.label(names), tuple(sorted(n.leaves)), n.counted, None, None,
                              n.negations if active_neg else ()) for n in t.nodes])
    return out


def _fill(records: list[list[NodeCount]], sums: list) -> None:
    k = 0
    for nodes in records:
        for n in nodes:
            if n.counted:
                n.count, n.active = int(sums[k]), float(sums[k + 1])
            k += 2


def evaluate_many(trees: Sequence[JoinTree], events: DataFrame, *, negate: bool = True,
                  observe_stream: bool = False,
                  results: Callable[[DataFrame], DataFrame] | None = None,
                  exchange: bool | None = None, chunk_windows: int = CHUNK_WINDOWS) -> Evaluation:
    """Run ``trees`` on ``events`` (a DataFrame with id, ts, type and attributes; see prepare_events)
    in one Spark job.

    Each run holds its full matches (a DataFrame with one column ``value``, the match texts, read
    from the persisted table of matches; call ``release()`` when done) and the measured partial
    matches of every node, in post-order (the order of ``tree.nodes``). ``negate=False`` skips the
    NOT checks: the counts are then those of the positive part, which is what the cost model prices
    for a pattern with negation (spec joinorder §2.6), and the "matches" are the positive part's.
    ``observe_stream`` also counts the stream's events and its first and last timestamps on the way
    (no extra job). ``results`` maps the table of matches (``_b``, the tree's index, and ``value``)
    to the table the job persists instead (the driver's results table: ``Evaluation.results``; the
    runs' ``matches`` are then None).

    ``exchange`` (default: when the stream arrives in more partitions than Spark has cores) cuts the
    events into time chunks of ``chunk_windows`` windows and shuffles them (module docstring);
    without it the events are read in one task and go through the kernel as one chunk. The
    exchange's map side runs with the input's parallelism anyway, so with few input partitions (a
    Parquet file of one row group is read by one task) the shuffle costs more than the kernel it
    spreads: on 2 cores, a 1M-event stream of the executor-throughput benchmark ran 1.5-2x faster
    without it.
    """
    from cepopt.executor.streams import user_error

    start = time.perf_counter()
    spark = events.sparkSession
    conf = spark.conf
    # Without adaptive execution the plan is one Spark job (one shuffle); with it every query stage
    # becomes a job of its own. Restored afterwards.
    aqe = conf.get("spark.sql.adaptive.enabled", "true")
    conf.set("spark.sql.adaptive.enabled", "false")
    stream_obs = Observation() if observe_stream else None
    if stream_obs is not None:
        events = events.observe(stream_obs, F.count(F.lit(1)).alias("n"), F.min("ts").alias("lo"),
                                F.max("ts").alias("hi"))
    records = _node_records(trees, negate)
    counter = _counter(spark, sum(len(r) for r in records))
    try:
        chunked, types = _chunked(trees, events, negate, exchange, chunk_windows)
        matches = chunked.mapInPandas(_kernel(list(trees), negate, counter, types), MATCHES_SCHEMA)
        final = (results(matches) if results is not None else matches).persist()
        try:
            final.write.format("noop").mode("overwrite").save()
        except Exception as exc:
            final.unpersist()
            err = user_error(exc)
            if err is not None:
                raise err from None
            raise
    finally:
        conf.set("spark.sql.adaptive.enabled", aqe)
    _fill(records, counter.value)
    elapsed = time.perf_counter() - start
    runs = [JoinRun(t, final.where(F.col("_b") == i).select("value") if results is None else None,
                    records[i], elapsed, [final] if i == 0 else []) for i, t in enumerate(trees)]
    out = Evaluation(runs, elapsed, results=final if results is not None else None, kernel_s=counter.value[-1])
    if stream_obs is not None:
        got = stream_obs.get
        out.events, out.first_ts, out.last_ts = int(got.get("n") or 0), got.get("lo"), got.get("hi")
    return out


def evaluate(tree: JoinTree, events: DataFrame, *, negate: bool = True, **options) -> JoinRun:
    """Run one ``tree`` on ``events``: :func:`evaluate_many` of one tree (``options``: its keywords)."""
    return evaluate_many([tree], events, negate=negate, **options).runs[0]


def match_values(pattern: CompiledPattern, matches: DataFrame) -> DataFrame:
    """One ``value`` column: the canonical text of each match (``ref=id,...``; a Kleene item
    ``ref=[id;id]`` with ascending ids), the same text as join_reference.match_text. The runs'
    matches already are these texts."""
    return matches.select("value")
