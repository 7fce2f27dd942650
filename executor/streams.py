"""Event streams: CSV, Parquet, a generator, or an instance's embedded stream, as pandas or Spark.

Every stream has ``ts`` (long), ``type`` (string) and attribute columns. A bad event (a missing or
non-integer time stamp, one beyond the 64-bit range, a missing type, an attribute that is not a number
in a numeric column, or in a CSV an integer beyond +-2^53 there, which Spark's double would round) is
a :class:`~cepopt.errors.CepoptError` naming the file and (for a local CSV file) the line. Time
stamps are read exactly on both sides (a CSV's as text, never through a double).

Stream specs (``--stream``):

* a path or URI Spark reads (``events.csv``, ``file:///data/s.parquet``, ``hdfs://nn/s.csv``,
  ``s3a://bucket/s/``): ``*.csv`` (header row), ``*.parquet`` / ``*.pq`` or a folder of Parquet files
  (a local one as Spark writes it: ``*.parquet`` files, possibly in ``key=value`` subfolders, see
  :func:`parquet_files`);
* ``gen:NAME[:key=value,...]``: a generator of :data:`cepopt.instances.streams.GENERATORS`, e.g.
  ``gen:ecommerce:events=200000,seed=1`` (values parse as int, float, true/false or text);
* None: the instance's embedded stream.

Spark reads a stream once, with a declared schema: a given one (``schema``, Spark DDL), else the CSV
header and the column types of its first rows (read on the driver, no Spark job), or the Parquet
footer. Checks cost no job of their own either: they are part of the read's projection
(``raise_error`` on a bad event), so the first stage of the work fails on a bad event, and
:func:`user_error` turns that failure into one line naming the file and line. Time order: no global
sort; each partition's events are ordered by time by the kernels (a stream is defined by its time
stamps, published streams are not monotonic, a Parquet folder has no row order across its files).

Missing values: an empty cell is missing on both sides (pandas NaN, Spark null); on the Spark side every
NaN of a float column becomes null as well (:func:`nan_to_null`), so that Spark's comparisons and
groups treat it as missing, as the pandas kernels and the oracles do (cepopt.predicates).
"""

from __future__ import annotations

import csv
import decimal
import io
import math
import numbers
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.textio import probe_path

__all__ = ["ERROR_MARK", "is_local", "local_path", "marked", "nan_to_null", "parquet_files", "parse_generator_spec",
           "read_stream", "read_stream_pandas", "resolve_stream_pandas", "stream_format", "to_spark", "user_error"]

#: the prefix of a user error raised inside a Spark job (a bad event, a kernel's CepoptError)
ERROR_MARK = "CEPOPT-USER-ERROR:"
INT64 = 2 ** 63
#: the integers a double holds exactly: Spark reads a CSV's number columns as double, so an integer
#: beyond it is refused in such a column (by both engines: it would be rounded by Spark alone)
EXACT_DOUBLE = 2 ** 53
#: texts that pandas reads as a missing value (read_csv's defaults), so Spark reads them so too
NA_TEXTS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
            "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
_SNIFF_ROWS = 1000


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
# specs, paths and URIs
# ---------------------------------------------------------------------------------------------


def is_local(spec: str | Path) -> bool:
    """Whether ``spec`` is a local path (no scheme, or ``file:``)."""
    if isinstance(spec, Path):
        return True
    scheme = urlparse(str(spec)).scheme
    return scheme in ("", "file") or len(scheme) == 1  # a Windows drive letter


def local_path(spec: str | Path) -> Path:
    """The local path of a local spec (``file:`` URIs included)."""
    text = str(spec)
    return Path(urlparse(text).path) if text.startswith("file:") else Path(text)


def stream_format(spec: str | Path) -> str:
    """``csv`` or ``parquet`` for a stream file or folder: by its extension (a local folder is Parquet).

    A local path must exist (checked before any work); a URI is not looked at here (Spark reads it).
    """
    text = str(spec)
    local = is_local(text)
    p = local_path(text) if local else Path(urlparse(text).path or "/")
    if local and not probe_path(p, "exists", f"stream {text}"):
        raise CepoptError(f"{text}: no such stream file")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq") or (local and p.is_dir()) or (not local and text.endswith("/")):
        return "parquet"
    raise CepoptError(f"{text}: unknown stream format (use .csv or .parquet)")


def check_header(spec: str | Path) -> None:
    """A local stream names the columns ``ts`` and ``type`` (a CSV's header row, a Parquet file's schema):
    checked before any work, so that a wrong header is the first thing said, not the last after a solve
    and a Spark start. A URI is read by Spark, which checks it then."""
    text = str(spec)
    if not is_local(text):
        return
    path = local_path(text)
    try:
        if stream_format(text) == "csv":
            with open(path, newline="", encoding="utf-8", errors="replace") as f:
                names = [c.strip() for c in next(csv.reader(f), [])]
        else:
            import pyarrow.parquet as pq

            names = list(pq.read_schema(parquet_files(path, text)[0] if path.is_dir() else path).names)
    except (OSError, csv.Error, ValueError):
        return  # unreadable: the reader says why, with the place
    missing = [c for c in ("ts", "type") if c not in names]
    if missing:
        got = ", ".join(names) or "none"
        raise CepoptError(f"{text}: no column {' or '.join(map(repr, missing))} (columns: {got}); a stream has "
                          "the columns ts (integer time stamp), type (event type) and the "
                          "attributes, as a CSV header row or Parquet columns (docs/EXECUTION.md)")


# ---------------------------------------------------------------------------------------------
# pandas side (the local engine, small streams, tests)
# ---------------------------------------------------------------------------------------------


def _place(i: int, line_offset: int | None) -> str:
    return f"line {i + line_offset}" if line_offset is not None else f"row {i}"


def _check_pandas(df: pd.DataFrame, where: str, line_offset: int | None) -> pd.DataFrame:
    for col in ("ts", "type"):
        if col not in df.columns:
            raise CepoptError(f"{where}: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    ts = _exact_ts(df["ts"], where, line_offset)
    if df["type"].isna().any():
        i = int(df["type"].isna().to_numpy().nonzero()[0][0])
        raise CepoptError(f"{where}, {_place(i, line_offset)}: event type is missing")
    df = df.copy()
    df["ts"] = ts
    df["type"] = df["type"].astype(str)
    if not df["ts"].is_monotonic_increasing:
        df = df.sort_values("ts", kind="stable").reset_index(drop=True)
    return df


def _exact_ts(raw: pd.Series, where: str, line_offset: int | None) -> pd.Series:
    """The time stamps as int64, exactly (a 17-digit stamp is not rounded through a double); the first
    bad one raises a CepoptError naming its place."""
    def fail(i: int, problem: str):
        raise CepoptError(f"{where}, {_place(i, line_offset)}: {problem}")

    if isinstance(raw.dtype, pd.api.extensions.ExtensionDtype):  # Int64 with <NA>, Arrow strings, ...
        raw = raw.astype(object)
    kind = raw.dtype.kind
    if kind == "b":  # not a number (pandas reads TRUE as a bool), as Spark says of such a column
        raise CepoptError(f"{where}: column 'ts' has type bool, not a number")
    if kind in "iu":
        beyond = (raw >= INT64).to_numpy() if kind == "u" else np.zeros(len(raw), bool)
        if beyond.any():
            i = int(beyond.nonzero()[0][0])
            fail(i, _ts_problem(raw.iloc[i]))
        return raw.astype("int64")
    if kind == "f":  # a Parquet double: exact as it is
        bad = (raw.isna() | (raw != raw.round()) | (raw.abs() >= INT64)).to_numpy()
        if bad.any():
            i = int(bad.nonzero()[0][0])
            fail(i, _ts_problem(raw.iloc[i]))
        return raw.astype("int64")
    # text (a CSV's ts is read as text), Python ints, mixed values: numbers fast where a double is
    # exact, value by value where it may not be (not an integer, missing, not a number, or from 2^52 on:
    # pandas' parser may be 1 ulp off, which is 1 there, while below an ulp error is no integer)
    values = pd.to_numeric(raw, errors="coerce")
    if values.dtype == np.int64:
        return values
    if values.dtype == np.float64 and pd.api.types.infer_dtype(raw, skipna=True) in ("string", "integer", "empty"):
        doubtful = (values.isna() | (values != values.round()) | (values.abs() >= 2 ** 52)).to_numpy()
    else:  # bools among the values (to_numeric would read True as 1), uint64, <NA>, other objects
        doubtful = np.ones(len(raw), bool)
    out = np.zeros(len(raw), np.int64)
    if not doubtful.all():
        out[~doubtful] = values.to_numpy()[~doubtful].astype(np.int64)
    for i in doubtful.nonzero()[0]:
        value = _ts_value(raw.iloc[i])
        if isinstance(value, str):
            fail(int(i), value)
        out[i] = value
    return pd.Series(out, index=raw.index, name=raw.name)


#: a decimal number as text (no underscores, no other digits than 0-9: what Spark's casts read)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _exact_integer(raw: Any) -> int | None:
    """``raw`` (text or number) as an exact integer, or None when it is no integer; an integral value
    beyond 10^19 comes back as +-2^63 (its exact value is of no use, and 1e999999 must not be expanded)."""
    if isinstance(raw, bool | np.bool_):
        return None
    if isinstance(raw, numbers.Integral):
        return int(raw)
    if isinstance(raw, numbers.Real):
        value = float(raw)
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if not isinstance(raw, str) or not _DECIMAL.fullmatch(raw.strip()):
        return None
    number = decimal.Decimal(raw.strip())
    if number != number.to_integral_value():
        return None
    if number.adjusted() >= 19:
        return INT64 if number > 0 else -INT64
    return int(number)


def _ts_value(raw: Any) -> int | str:
    """A time stamp's raw value (text or number) as an exact int, or what is wrong with it."""
    missing = raw is None or raw is pd.NA or (isinstance(raw, float) and raw != raw)
    if missing or (isinstance(raw, str) and raw.strip() in NA_TEXTS):
        return "time stamp ts is missing"
    value = _exact_integer(raw)
    if value is None:
        return f"time stamp ts is not an integer: {_short(raw)}"
    if abs(value) >= INT64:
        return f"time stamp ts is beyond the 64-bit range: {_short(raw)}"
    return value


def _ts_problem(raw: Any) -> str:
    """What is wrong with a bad time stamp's raw value (text or number)."""
    value = _ts_value(raw)
    return value if isinstance(value, str) else f"time stamp ts is not an integer: {_short(raw)}"


def _short(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} characters)"


def read_stream_pandas(path: str | Path) -> pd.DataFrame:
    """Read a local CSV or Parquet stream into pandas, with the checks, sorted by time."""
    fmt = stream_format(path)
    if not is_local(path):
        raise CepoptError(f"{path}: the local engine reads local files; run this stream with --engine spark")
    p = local_path(path)
    if fmt == "csv":
        try:
            # as Spark reads it: a type "01" stays "01", a type "NA" (or "null") is a name, only an empty
            # type is missing; the other columns take pandas' missing-value texts, which Spark's read maps
            header = pd.read_csv(p, nrows=0).columns
            missing = {c: [""] if c == "type" else list(NA_TEXTS) for c in header}
            df = pd.read_csv(p, dtype={"type": str}, keep_default_na=False, na_values=missing)
            if "ts" in df.columns and df["ts"].dtype.kind not in "iu":  # not all integers: exact from the text
                df["ts"] = pd.read_csv(p, dtype=str, usecols=["ts"])["ts"].to_numpy()
            checked = _check_pandas(df, str(path), 2)
            _check_exact_integers(df, p, str(path))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise CepoptError(f"{path}: not a readable CSV stream ({str(exc).splitlines()[0]})") from None
        return checked
    files = parquet_files(p, str(path)) if p.is_dir() else None
    try:
        if files is None:
            df = pd.read_parquet(p)
        else:  # the files found, not pyarrow's own walk of the folder; key=value folders give columns
            import pyarrow.dataset as pads

            df = pads.dataset([str(f) for f in files], format="parquet", partitioning="hive",
                              partition_base_dir=str(p)).to_table().to_pandas()
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for a bad file
        raise CepoptError(f"{path}: not a readable Parquet stream ({str(exc).splitlines()[0]})") from None
    return _check_pandas(df, str(path), None)


#: how deep ``key=value`` partition folders may nest in a local Parquet folder
MAX_PARTITION_DEPTH = 16
PARQUET_SUFFIXES = (".parquet", ".pq")


def parquet_files(folder: Path, where: str) -> list[Path]:
    """The data files of a local Parquet folder laid out as Spark writes one: ``*.parquet`` (``*.pq``)
    files in it or in ``key=value`` subfolders (at most :data:`MAX_PARTITION_DEPTH` deep), hidden and
    ``_`` names skipped. Only such subfolders are entered, so a folder that is no Parquet stream (``/``)
    is refused after one listing instead of walked; a CepoptError names it."""
    files: list[Path] = []
    level = [folder]
    try:
        for _ in range(MAX_PARTITION_DEPTH + 1):
            deeper = []
            for entry in (e for d in level for e in sorted(d.iterdir())):
                if entry.name.startswith(("_", ".")):
                    continue
                if "=" in entry.name and entry.is_dir():
                    deeper.append(entry)
                elif entry.name.lower().endswith(PARQUET_SUFFIXES) and entry.is_file():
                    files.append(entry)
            level = deeper
    except OSError as exc:
        raise CepoptError(f"{where}: cannot list the Parquet folder {exc.filename or ''} "
                          f"({exc.strerror or exc})") from None
    if not files:
        raise CepoptError(f"{where}: a folder without Parquet files (*.parquet, in it or in key=value "
                          "subfolders)")
    return files


def _check_exact_integers(df: pd.DataFrame, path: Path, where: str) -> None:
    """A CepoptError at the first integer beyond +-2^53 in a number column of a CSV stream (see
    :data:`EXACT_DOUBLE`), naming the line and the column; the text is read again only for a column
    that may hold one."""
    suspects = []
    for name in df.columns.drop(["ts", "type"], errors="ignore"):
        col = df[name]
        if col.dtype.kind in "iu":
            suspect = (col > EXACT_DOUBLE) | (col < -EXACT_DOUBLE)
        elif col.dtype.kind == "f":
            suspect = (col.abs() >= EXACT_DOUBLE) & (col == col.round())
        else:
            continue
        if suspect.any():
            suspects.append(name)
    if not suspects:
        return
    texts = pd.read_csv(path, dtype=str, keep_default_na=False)  # all columns: the same names as df's
    found = [(int(big.to_numpy().nonzero()[0][0]), name) for name in suspects
             if (big := texts[name].map(_beyond_double)).any()]
    if found:
        i, name = min(found)
        raise CepoptError(f"{where}, line {i + 2}: {_beyond_double_problem(name, texts[name].iloc[i])}")


def _beyond_double(text: str) -> bool:
    """Whether ``text`` is an integer beyond +-2^53 (:data:`EXACT_DOUBLE`)."""
    if not isinstance(text, str):  # a row's missing cell
        return False
    text = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return False
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) > 16 or (len(digits) == 16 and int(digits) > EXACT_DOUBLE)


def _beyond_double_problem(name: str, text: str) -> str:
    return (f"column {name} holds the integer {_short(text.strip())}, beyond +-2^53: Spark reads a CSV number "
            "column as double, which would round it; write the stream as Parquet (int64) or the value as text")


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
    (:func:`read_stream`, :func:`to_spark`), the engines (a Spark DataFrame given) or the join evaluator
    (``join_eval.prepare_events``) passes here, so that the plans' comparisons, GROUP-BY and equivalence
    partitions see one missing value, as the oracles do.
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


def _raise(kind: str, raw):
    """``raise_error`` with the mark, a kind and the raw text of the bad value (see :func:`user_error`)."""
    from pyspark.sql import functions as F

    return F.raise_error(F.concat(F.lit(f"{ERROR_MARK}{kind}|"), F.coalesce(raw.cast("string"), F.lit(""))))


def checked(sdf, numeric: tuple[str, ...] = ()):
    """``sdf`` with ``ts`` as long and ``type`` as string, checked as they are read: a bad time stamp or a
    missing type raises inside the job (no job of its own). ``numeric``: text columns read as numbers
    (a CSV's), a non-number raising likewise; NaN becomes null (:func:`nan_to_null`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegralType, StringType

    for col in ("ts", "type"):
        if col not in sdf.columns:
            raise CepoptError(f"no column {col!r} (columns: {', '.join(sdf.columns)})")
    kinds = {f.name: f.dataType for f in sdf.schema.fields}
    ts = F.col("ts")
    if isinstance(kinds["ts"], IntegralType):
        ts_long = ts.cast("long")
    elif isinstance(kinds["ts"], DoubleType | FloatType | DecimalType):
        ts_long = F.when((ts == F.floor(ts)) & (F.abs(ts) < F.lit(float(INT64))), ts.cast("long"))
    elif isinstance(kinds["ts"], StringType):
        text = F.trim(ts)
        dec = F.expr("try_cast(trim(ts) as decimal(38, 12))")
        ts_long = F.coalesce(F.expr("try_cast(trim(ts) as bigint)"),
                             F.when(dec == F.floor(dec), F.expr("try_cast(try_cast(trim(ts) as decimal(38, 12)) "
                                                                "as bigint)")))
        ts = F.when(text.isin(*NA_TEXTS), F.lit(None)).otherwise(ts)
    else:
        raise CepoptError(f"column 'ts' has type {kinds['ts'].simpleString()}, not a number")
    columns = {
        "ts": F.when(ts_long.isNull(), _raise("ts", ts)).otherwise(ts_long),
        "type": F.when(F.col("type").isNull(), _raise("type", F.col("ts"))).otherwise(F.col("type").cast("string")),
    }
    for name in numeric:
        raw = F.trim(F.col(name))
        value = F.expr(f"try_cast(trim(`{name}`) as double)")
        missing = F.col(name).isNull() | raw.isin(*NA_TEXTS)
        exact = F.expr(f"try_cast(trim(`{name}`) as decimal(38, 0))")  # null beyond 38 digits
        beyond = ((F.abs(value) >= float(EXACT_DOUBLE)) & raw.rlike("^[+-]?[0-9]+$")
                  & (exact.isNull() | (F.abs(exact) > F.lit(EXACT_DOUBLE))))
        columns[name] = (F.when(missing, F.lit(None).cast("double"))
                         .when(value.isNull(), _raise(f"column {name}", F.col(name)))
                         .when(beyond, _raise(f"integer column {name}", F.col(name))).otherwise(value))
    return nan_to_null(sdf.withColumns(columns))


def _sample_lines(uri: str, spark, limit: int = _SNIFF_ROWS + 1) -> list[str]:
    """The first lines of a CSV file (or of the first file of a folder), read on the driver: a local file
    directly, a URI through Hadoop's file system (no Spark job)."""
    if is_local(uri):
        p = local_path(uri)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix.lower() == ".csv")
            if not files:
                raise CepoptError(f"{uri}: a folder without CSV files")
            p = files[0]
        with p.open(newline="", errors="replace") as fh:
            return [line for _, line in zip(range(limit), fh)]
    jvm = spark.sparkContext._jvm
    try:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        if fs.getFileStatus(path).isDirectory():
            files = sorted(str(s.getPath().toString()) for s in fs.listStatus(path)
                           if str(s.getPath().getName()).lower().endswith(".csv"))
            if not files:
                raise CepoptError(f"{uri}: a folder without CSV files")
            path = jvm.org.apache.hadoop.fs.Path(files[0])
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(fs.open(path), "UTF-8"))
        try:
            lines = []
            for _ in range(limit):
                line = reader.readLine()
                if line is None:
                    break
                lines.append(line + "\n")
            return lines
        finally:
            reader.close()
    except CepoptError:
        raise
    except Exception as exc:  # noqa: BLE001 -- py4j errors: file not found, no file system for a scheme
        from cepopt.executor.session import _first_line

        raise CepoptError(f"{uri}: cannot read the stream ({_first_line(exc)})") from None


def _csv_schema(uri: str, spark) -> tuple[str, tuple[str, ...]]:
    """(Spark DDL with every column as text, the columns to read as numbers) from the header and the
    first rows: a column pandas reads as numbers there is numeric (double)."""
    lines = _sample_lines(uri, spark)
    if not lines:
        raise CepoptError(f"{uri}: an empty CSV stream (no header row)")
    try:
        sample = pd.read_csv(io.StringIO("".join(lines)))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CepoptError(f"{uri}: not a readable CSV stream ({str(exc).splitlines()[0]})") from None
    names = [str(c) for c in sample.columns]
    bad = [n for n in names if not n or "`" in n]
    if bad or len(set(names)) != len(names):
        raise CepoptError(f"{uri}: the header row must name every column once (got {', '.join(names)})")
    numeric = tuple(n for n in names if n not in ("ts", "type") and pd.api.types.is_numeric_dtype(sample[n])
                    and not pd.api.types.is_bool_dtype(sample[n]))
    return ", ".join(f"`{n}` string" for n in names), numeric


def _parquet_schema(uri: str):
    """The schema of a local Parquet file or folder, read from its footer on the driver; None for a URI
    (Spark reads the footer)."""
    if not is_local(uri):
        return None
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema

    p = local_path(uri)
    if p.is_dir():
        p = parquet_files(p, uri)[0]
    try:
        return from_arrow_schema(pq.read_schema(p))
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for a bad file
        raise CepoptError(f"{uri}: not a readable Parquet stream ({str(exc).splitlines()[0]})") from None


def read_stream(spec: str | Path, spark, *, schema: Any = None):
    """Read a CSV or Parquet stream (a path or any URI Spark reads) once, with a declared schema (see the
    module docstring): ``schema`` (a Spark DDL string or StructType) or the file's. The result has ts
    (long) and type (string), checked as they are read, attributes with NaN as null."""
    uri = str(spec)
    fmt = stream_format(uri)
    if is_local(uri) and not uri.startswith("file:"):
        uri = str(local_path(uri).resolve())
    numeric: tuple[str, ...] = ()
    reader = spark.read
    try:
        if fmt == "csv":
            if schema is None:
                schema, numeric = _csv_schema(uri, spark)
            sdf = reader.schema(schema).option("header", True).option("mode", "PERMISSIVE").csv(uri)
        else:
            schema = schema if schema is not None else _parquet_schema(uri)
            sdf = (reader.schema(schema) if schema is not None else reader).parquet(uri)
    except CepoptError:
        raise
    except Exception as exc:  # noqa: BLE001 -- AnalysisException, Py4JJavaError (a garbage footer)
        from cepopt.executor.session import _first_line

        raise CepoptError(f"{spec}: not a readable stream ({_first_line(exc)})") from None
    try:
        return checked(sdf, numeric)
    except CepoptError as exc:
        raise CepoptError(f"{spec}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# errors raised inside a job
# ---------------------------------------------------------------------------------------------


def _locate_csv(path: Path, kind: str) -> tuple[int, str] | None:
    """The first line of a local CSV file whose event is bad as ``kind`` says (ts, type or column NAME),
    with what is wrong."""
    with path.open(newline="", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        col = {"ts": "ts", "type": "ts"}.get(kind, kind.removeprefix("integer ").removeprefix("column "))
        if col not in header or "type" not in header:
            return None
        i, t = header.index(col), header.index("type")
        for lineno, row in enumerate(reader, start=2):
            value = row[i].strip() if i < len(row) else ""
            if kind == "ts":
                problem = _ts_value(value)
                if isinstance(problem, str):
                    return lineno, problem
            elif kind == "type":
                if t >= len(row) or row[t] == "":
                    return lineno, "event type is missing"
            elif kind.startswith("integer "):
                if _beyond_double(value):
                    return lineno, _beyond_double_problem(col, value)
            elif value not in NA_TEXTS and not _is_number(value):
                return lineno, f"{kind} is not a number: {value!r}"
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def marked(exc: CepoptError) -> CepoptError:
    """A kernel's CepoptError as raised on a Spark worker: one line after :data:`ERROR_MARK`, so that
    :func:`user_error` finds it in the job's failure on the driver."""
    return CepoptError(f"{ERROR_MARK}{' '.join(str(exc).split())}")


def user_error(exc: BaseException, source: str | None = None) -> CepoptError | None:
    """The user error a failed Spark job carries (a bad event of ``source``, or a kernel's CepoptError
    raised on a worker), as one line; None when ``exc`` is another failure."""
    text = str(exc)
    at = text.find(ERROR_MARK)
    if at < 0:
        return None
    body = text[at + len(ERROR_MARK):].splitlines()[0]
    body = re.sub(r"\s*SQLSTATE: \w+\s*$", "", body).strip()
    kind, sep, raw = body.partition("|")
    if not sep or not (kind in ("ts", "type") or kind.startswith(("column ", "integer column "))):
        return CepoptError(body)  # a kernel's own message
    where = source or "the stream"
    if source and is_local(source) and source.lower().endswith(".csv") and local_path(source).is_file():
        found = _locate_csv(local_path(source), kind)
        if found:
            return CepoptError(f"{where}, line {found[0]}: {found[1]}")
    if kind == "ts":
        return CepoptError(f"{where}: an event's {_ts_problem(raw or None)}")
    if kind == "type":
        return CepoptError(f"{where}: an event (ts {raw or '?'}) has no type")
    if kind.startswith("integer "):
        return CepoptError(f"{where}: an event's {_beyond_double_problem(kind.removeprefix('integer column '), raw)}")
    return CepoptError(f"{where}: an event's {kind} is not a number: {raw!r}")
