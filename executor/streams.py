"""Event streams as Spark DataFrames: CSV, Parquet, a generator, or an instance's embedded stream.

Every stream has ``ts`` (long), ``type`` (string) and attribute columns. Reading checks the schema:
a missing ``ts``/``type`` column, or a null or non-integer time stamp, is a
:class:`~cepopt.errors.CepoptError` naming the file and (for CSV) the line.

Stream specs (``--stream``):

* a path: ``*.csv`` (header row), ``*.parquet`` / ``*.pq`` or a Parquet directory;
* ``gen:NAME[:key=value,...]``: a generator of :data:`cepopt.instances.streams.GENERATORS`, e.g.
  ``gen:ecommerce:events=200000,seed=1`` (values parse as int, float, true/false or text);
* None: the instance's embedded stream.

Time order: a stream is its events in time-stamp order, and every reader returns it sorted by ``ts``,
stably (events with one time stamp keep their input order), whatever the order of the file. Refusing
an unsorted file was the alternative; sorting was chosen because the papers' streams are defined by
their time stamps (the kernels evaluate by ``ts``: results do not depend on the file order), published
streams are not monotonic (Hamlet's files), a Parquet folder has no row order across its files, and
the pandas readers (embedded streams, generators) already sorted. What the input order still decides
is thus only the order of ties; the join-order executor's event ids (given in input order) follow
time order on every path. On Spark the order is checked in one scan of ``ts`` (a summary row per
partition reaches the driver) and the data is sorted only when it is out of order.

Missing values: an empty cell is missing on both sides (pandas NaN, Spark null); on the Spark side every
NaN of a float column becomes null as well (:func:`nan_to_null`), so that Spark's comparisons and
groups treat it as missing, as the pandas kernels and the oracles do (cepopt.predicates).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

from cepopt.errors import CepoptError

__all__ = ["nan_to_null", "parse_generator_spec", "stream_format", "read_stream", "read_stream_pandas",
           "resolve_stream", "resolve_stream_pandas", "to_spark"]


def _parse_value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text.strip()


def parse_generator_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``gen:NAME[:k=v,...]`` -> (NAME, {k: v})."""
    body = spec[len("gen:"):] if spec.startswith("gen:") else spec
    name, _, rest = body.partition(":")
    if not name:
        raise CepoptError(f"stream {spec!r}: expected gen:NAME[:key=value,...]")
    params: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise CepoptError(f"stream {spec!r}: expected key=value, got {item!r}")
        params[key.strip()] = _parse_value(value)
    return name, params


# ---------------------------------------------------------------------------------------------
# pandas side (small streams, tests, in-process kernels)
# ---------------------------------------------------------------------------------------------


def _check_pandas(df: pd.DataFrame, where: str, line_offset: int | None) -> pd.DataFrame:
    for col in ("ts", "type"):
        if col not in df.columns:
            raise CepoptError(f"{where}: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    ts = pd.to_numeric(df["ts"], errors="coerce")
    bad = ts.isna() | (ts.notna() & (ts != ts.round()))
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        place = f"line {i + line_offset}" if line_offset is not None else f"row {i}"
        raw = df["ts"].iloc[i]
        what = "missing" if pd.isna(raw) else f"not an integer: {raw!r}"
        raise CepoptError(f"{where}, {place}: time stamp ts is {what}")
    if df["type"].isna().any():
        i = int(df["type"].isna().to_numpy().nonzero()[0][0])
        place = f"line {i + line_offset}" if line_offset is not None else f"row {i}"
        raise CepoptError(f"{where}, {place}: event type is missing")
    df = df.copy()
    df["ts"] = ts.astype("int64")
    df["type"] = df["type"].astype(str)
    if not df["ts"].is_monotonic_increasing:
        df = df.sort_values("ts", kind="stable").reset_index(drop=True)
    return df


def read_stream_pandas(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet stream into pandas, with the schema checks, sorted by time."""
    path = Path(path)
    if stream_format(path) == "csv":
        try:
            df = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise CepoptError(f"{path}: not a readable CSV stream ({str(exc).splitlines()[0]})") from None
        return _check_pandas(df, str(path), 2)
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a bad file
        raise CepoptError(f"{path}: not a readable Parquet stream ({exc})") from None
    return _check_pandas(df, str(path), None)


def stream_format(path: str | Path) -> str:
    """``csv`` or ``parquet`` for an existing stream file (or Parquet folder); CepoptError otherwise."""
    p = Path(path)
    if not p.exists():
        raise CepoptError(f"{p}: no such stream file")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq") or p.is_dir():
        return "parquet"
    raise CepoptError(f"{p}: unknown stream format (use .csv or .parquet)")


def resolve_stream_pandas(spec: str | None, instance: Any = None) -> pd.DataFrame:
    """A stream spec (see the module docstring) as a pandas DataFrame."""
    if spec is None:
        if instance is None or instance.stream is None:
            name = getattr(instance, "name", None) or "the instance"
            raise CepoptError(f"{name} has no embedded stream: give one with --stream FILE|gen:NAME")
        return _check_pandas(pd.DataFrame(list(instance.stream)), f"{instance.name or 'instance'}.stream", None)
    if spec.startswith("gen:"):
        from cepopt.instances.streams import generate

        name, params = parse_generator_spec(spec)
        seed = params.pop("seed", 0)
        return generate(name, seed=seed, instance=instance, **params)
    return read_stream_pandas(spec)


# ---------------------------------------------------------------------------------------------
# Spark side
# ---------------------------------------------------------------------------------------------


def nan_to_null(sdf):
    """``sdf`` with every NaN of its float and double columns turned into null.

    A missing value is None or NaN alike (cepopt.predicates): pandas reads an empty CSV cell as NaN,
    Spark as null. But Spark reads a "NaN" cell (or a Parquet NaN, or a pandas NaN when
    ``createDataFrame`` falls back from Arrow) as a NaN double, which it compares as a number (NaN = NaN,
    NaN > every number) and groups apart from null. Every stream that enters Spark through this module
    (:func:`read_stream`, :func:`to_spark`), ``cepopt.executor.api.execute`` (a Spark DataFrame given)
    or the join evaluator (``join_eval.prepare_events``) passes here, so that the plans' comparisons,
    GROUP-BY and equivalence partitions see one missing value, as the oracles do.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    floats = {f.name: f.dataType for f in sdf.schema.fields if isinstance(f.dataType, DoubleType | FloatType)}
    if not floats:
        return sdf
    return sdf.withColumns({name: F.nanvl(sdf[name], F.lit(None).cast(kind)) for name, kind in floats.items()})


def to_spark(df: pd.DataFrame, spark):
    """A pandas stream as a Spark DataFrame (ts long, type string, attributes as inferred, NaN as null)."""
    from pyspark.sql import functions as F

    if len(df) == 0:
        from pyspark.sql.types import LongType, StringType, StructField, StructType

        fields = [StructField("ts", LongType()), StructField("type", StringType())]
        return spark.createDataFrame([], StructType(fields))
    sdf = nan_to_null(spark.createDataFrame(df))
    return sdf.withColumn("ts", F.col("ts").cast("long")).withColumn("type", F.col("type").cast("string"))


def _csv_bad_line(path: Path, column: str) -> tuple[int, str] | None:
    """Line number and value of the first row whose ``column`` is empty or not an integer."""
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        if column not in header:
            return None
        i = header.index(column)
        for lineno, row in enumerate(reader, start=2):
            value = row[i].strip() if i < len(row) else ""
            try:
                if value == "" or float(value) != int(float(value)):
                    return lineno, value
            except (ValueError, OverflowError):
                return lineno, value
    return None


def read_stream(path: str | Path, spark):
    """Read a CSV or Parquet stream with Spark, with the schema checks, sorted by time, NaN as null (see
    module docstring and :func:`nan_to_null`)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    p = Path(path)
    fmt = stream_format(p)
    try:
        if fmt == "csv":
            sdf = spark.read.csv(str(p), header=True, inferSchema=True)
        else:
            sdf = spark.read.parquet(str(p))
    except AnalysisException as exc:
        raise CepoptError(f"{p}: not a readable stream ({str(exc).splitlines()[0]})") from None
    for col in ("ts", "type"):
        if col not in sdf.columns:
            raise CepoptError(f"{p}: no column {col!r} (columns: {', '.join(sdf.columns)})")
    ts_long = F.expr("try_cast(ts as bigint)")
    ts_num = F.expr("try_cast(ts as double)")
    bad = sdf.filter(ts_long.isNull() | (ts_num != ts_long.cast("double")) | F.col("type").isNull())
    if bad.limit(1).count():
        if fmt == "csv":
            found = _csv_bad_line(p, "ts")
            if found:
                lineno, value = found
                what = "missing" if value == "" else f"not an integer: {value!r}"
                raise CepoptError(f"{p}, line {lineno}: time stamp ts is {what}")
            raise CepoptError(f"{p}: an event has no type")
        row = bad.limit(1).collect()[0]
        raise CepoptError(f"{p}: an event has a missing or non-integer time stamp or no type "
                          f"(ts={row['ts']!r}, type={row['type']!r})")
    sdf = nan_to_null(sdf.withColumn("ts", ts_long).withColumn("type", F.col("type").cast("string")))
    return sdf if _in_time_order(sdf) else _sort_by_time(sdf)


def _in_time_order(sdf) -> bool:
    """Whether ``sdf`` is already sorted by ``ts`` as read: each partition non-decreasing, and no partition
    starting before the end of an earlier one. One scan of ``ts`` in Arrow batches; only a summary row
    per non-empty partition (first, last, sorted) reaches the driver."""
    import numpy as np
    from pyspark import TaskContext

    def summary(batches):
        first = last = None
        ordered = True
        for batch in batches:
            ts = batch["ts"].to_numpy()
            if len(ts):
                ordered = ordered and (last is None or last <= ts[0]) and bool((np.diff(ts) >= 0).all())
                first = ts[0] if first is None else first
                last = ts[-1]
        if first is not None:
            yield pd.DataFrame({"part": [TaskContext.get().partitionId()], "first": [first], "last": [last],
                                "ordered": [ordered]})

    parts = sdf.select("ts").mapInPandas(summary, "part int, first long, last long, ordered boolean").collect()
    parts.sort(key=lambda r: r["part"])
    return all(r["ordered"] for r in parts) and all(a["last"] <= b["first"] for a, b in zip(parts, parts[1:]))


def _sort_by_time(sdf):
    """``sdf`` sorted by ``ts``, stably: ties keep their input order (the position Spark read them at)."""
    from pyspark.sql import functions as F

    pos = "__cepopt_input_position"
    return sdf.withColumn(pos, F.monotonically_increasing_id()).orderBy("ts", pos).drop(pos)


def resolve_stream(spec: str | None, instance: Any, spark):
    """A stream spec -> Spark DataFrame: a file path, ``gen:NAME[:k=v,...]``, or None for the
    instance's embedded stream."""
    if spec is not None and not spec.startswith("gen:"):
        return read_stream(spec, spark)
    return to_spark(resolve_stream_pandas(spec, instance), spark)
