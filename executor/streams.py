"""Event streams: CSV, Parquet, a generator, or an instance's embedded stream, as pandas or Spark.

Every stream has ``ts`` (long), ``type`` (string) and attribute columns. A bad event (a missing or
non-integer time stamp, one beyond the 64-bit range, a missing type, an attribute that is not a number
in a numeric column, an integer beyond the 64-bit range in an integer column, or in a CSV an integer
beyond +-2^53 in a float column, which a double would round) is a :class:`~cepopt.errors.CepoptError`
naming the file and (for a local CSV file) the line. Time stamps are read exactly on both sides (a
CSV's as text, never through a double), and so are integer columns (:func:`integer_texts`: a CSV
column of integer literals, missing values allowed; int64, or Python ints and None where a value is
missing, see executor/integers.py; Spark reads them as long).

Stream specs (``--stream``):

* a path or URI Spark reads (``events.csv``, ``file:///data/s.parquet``, ``hdfs://nn/s.csv``,
  ``s3a://bucket/s/``): ``*.csv`` (header row), ``*.parquet`` / ``*.pq`` or a folder of Parquet files
  (a local one as Spark writes it: ``*.parquet`` files, possibly in ``key=value`` subfolders, see
  :func:`parquet_files`);
* ``gen:NAME[:key=value,...]``: a generator of :data:`cepopt.instances.streams.GENERATORS`, e.g.
  ``gen:ecommerce:events=200000,seed=1`` (values parse as int, float, true/false or text);
* None: the instance's embedded stream.

A CSV stream is read in one dialect by both engines (executor/csv_dialect.py, docs/FORMATS.md):
RFC 4180 quoting, one name per column, the same missing-value texts, number columns decided by the
first records. Spark reads a stream once, with a declared schema: a given one (``schema``, Spark DDL),
else the CSV header and the dialect's column kinds (read on the driver, no Spark job), or the Parquet
footer. Checks cost no job of their own either: they are part of the read's projection
(``raise_error`` on a bad event), so the first stage of the work fails on a bad event, and
:func:`user_error` turns that failure into one line naming the file and line. Time order: no global
sort, on either engine; each partition's events are ordered by time by the kernels (a stream is defined
by its time stamps, published streams are not monotonic, a Parquet folder has no row order across its
files).

Event numbering (the ``match`` values of the join executor): an event is numbered by its row in the
stream as read, 0, 1, ... in file order (the data rows of a CSV file; a generated or embedded stream's
rows), on both engines, whatever its time stamps; a stream with an ``id`` column is numbered by it. The
rows of a folder of several Parquet files have no order across its files (Spark lists them its own
way): give such a stream an ``id`` column for numbers that do not depend on the engine.

Missing values: a missing cell is NaN in pandas and null on Spark; on the Spark side every
NaN of a float column becomes null as well (:func:`nan_to_null`), so that Spark's comparisons and
groups treat it as missing, as the pandas kernels and the oracles do (cepopt.predicates).
"""

from __future__ import annotations

import csv
import decimal
import math
import numbers
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor import csv_dialect as dialect
from cepopt.executor.csv_dialect import NA_TEXTS
from cepopt.textio import probe_path

__all__ = ["ERROR_MARK", "before_zero_error", "is_local", "local_path", "marked", "nan_to_null", "parquet_files",
           "parse_generator_spec", "read_stream", "read_stream_pandas", "refuse_before_zero", "require_numbers",
           "resolve_stream_pandas", "stream_format", "text_columns", "to_spark", "user_error"]

#: the prefix of a user error raised inside a Spark job (a bad event, a kernel's CepoptError)
ERROR_MARK = "CEPOPT-USER-ERROR:"
INT64 = 2 ** 63
#: the integers a double holds exactly: a CSV's float columns (numbers with decimals) are read as
#: double, so an integer literal beyond it is refused in such a column (by both engines); integer
#: columns are exact (int64, see :func:`integer_texts`)
EXACT_DOUBLE = 2 ** 53


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
            with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:  # -sig: a BOM is no name
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


def _place(i: int, csv_path: Path | None) -> str:
    """Where row ``i`` (file order) of a stream is: its line in a CSV file, else its row."""
    return f"line {dialect.record_line(csv_path, i)}" if csv_path is not None else f"row {i}"


def _check_pandas(df: pd.DataFrame, where: str, csv_path: Path | None = None) -> pd.DataFrame:
    for col in ("ts", "type"):
        if col not in df.columns:
            raise CepoptError(f"{where}: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    ts = _exact_ts(df["ts"], where, csv_path)
    if df["type"].isna().any():
        i = int(df["type"].isna().to_numpy().nonzero()[0][0])
        raise CepoptError(f"{where}, {_place(i, csv_path)}: event type is missing")
    from cepopt.executor.integers import exact_integer_columns

    df = exact_integer_columns(df.copy())
    df["ts"] = ts
    df["type"] = df["type"].astype(str)
    return df.reset_index(drop=True)  # in file order: an event's row there is its number (see the module docstring)


def _exact_ts(raw: pd.Series, where: str, csv_path: Path | None) -> pd.Series:
    """The time stamps as int64, exactly (a 17-digit stamp is not rounded through a double); the first
    bad one raises a CepoptError naming its place."""
    def fail(i: int, problem: str):
        raise CepoptError(f"{where}, {_place(i, csv_path)}: {problem}")

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
    if not isinstance(raw, str) or not dialect.DECIMAL.fullmatch(raw.strip()):
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
    """Read a local CSV or Parquet stream into pandas, with the checks, in file order."""
    fmt = stream_format(path)
    if not is_local(path):
        raise CepoptError(f"{path}: the local engine reads local files; run this stream with --engine spark")
    p = local_path(path)
    if fmt == "csv":
        return _read_csv_pandas(p, str(path))
    files = parquet_files(p, str(path)) if p.is_dir() else None
    try:
        import pyarrow.parquet as pq

        if files is None:
            table = pq.read_table(p)
        else:  # the files found, not pyarrow's own walk of the folder; key=value folders give columns
            import pyarrow.dataset as pads

            table = pads.dataset([str(f) for f in files], format="parquet", partitioning="hive",
                                 partition_base_dir=str(p)).to_table()
        # an int64 column with a null as Python ints and None, exact (executor/integers.py), not float64
        df = table.to_pandas(integer_object_nulls=True)
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


#: an integer literal (what an integer column holds besides missing values)
INTEGER_TEXT = r"[+-]?[0-9]+"


def integer_texts(texts: pd.Series) -> bool:
    """Whether a column's texts make it an integer column: some present value, and every present one
    (not a missing-value text) an integer literal."""
    stripped = texts.astype(str).str.strip()
    present = stripped[~stripped.isin(NA_TEXTS)]
    return len(present) > 0 and bool(present.str.fullmatch(INTEGER_TEXT).all())


def _int64_problem(name: str, text: str) -> str:
    return (f"column {name} holds {_short(text.strip())}, not a 64-bit integer, in an integer column (read as "
            "exact 64-bit integers: a CSV column of integer literals, judged on Spark by its first "
            f"{dialect.SAMPLE_RECORDS} rows); declare its type with --schema or write the stream as Parquet")



def _read_csv_pandas(path: Path, where: str) -> pd.DataFrame:
    """A local CSV stream in the dialect of executor/csv_dialect.py, checked (the first bad cell raises a
    CepoptError naming its line and column), sorted by time. pandas' C parser reads it once: the dialect
    decides which columns hold numbers (read as numbers, correctly rounded as Spark reads them) and which
    texts are missing; only a number column that pandas cannot read so is read again, cell by cell."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            header, rows = dialect.sample(fh, where)
        numbers = dialect.number_columns(header, rows)
        df = pd.read_csv(path, dtype={c: str for c in header if c not in numbers and c != "ts"},
                         keep_default_na=False, na_values={c: list(NA_TEXTS) for c in numbers},
                         float_precision="round_trip", encoding="utf-8")
        if "ts" in df.columns and df["ts"].dtype.kind not in "iu":  # not all integers: exact from the text
            df["ts"] = pd.read_csv(path, usecols=["ts"], dtype=str, keep_default_na=False, encoding="utf-8")["ts"]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error) as exc:
        raise CepoptError(f"{where}: not a readable CSV stream ({str(exc).splitlines()[0]})") from None
    columns = {}
    for name in df.columns:
        if name == "type":
            columns[name] = df[name].where(df[name] != "")
        elif name in numbers:
            columns[name] = _csv_numbers(df[name], name, where, path)
        elif name != "ts":
            columns[name] = df[name].where(~df[name].isin(NA_TEXTS))
    return _check_pandas(df.assign(**columns), where, path)


def _csv_numbers(values: pd.Series, name: str, where: str, path: Path) -> pd.Series:
    """A number column as pandas read it, checked: every value finite, no integer beyond +-2^53; a column
    pandas read otherwise (text it could not parse) or that may break a rule is read again as text to
    find the first bad cell (:func:`_csv_number_texts`)."""
    if values.dtype.kind == "i":
        return values  # integer literals within int64: an integer column, exact
    if values.dtype.kind == "f":
        v = values.to_numpy()
        present = v[~np.isnan(v)]
        integral = len(present) > 0 and bool((present == np.round(present)).all())  # maybe integer texts
        if not integral and not (np.isinf(present) | (np.abs(present) >= EXACT_DOUBLE)).any():
            return values
    texts = pd.read_csv(path, usecols=[name], dtype=str, keep_default_na=False, na_filter=False,
                        encoding="utf-8")[name]
    if integer_texts(texts):
        return _csv_integer_texts(texts, name, where, path)
    return _csv_number_texts(texts, name, where, path)


def _csv_integer_texts(texts: pd.Series, name: str, where: str, path: Path) -> pd.Series:
    """An integer column (:func:`integer_texts`) exactly from its texts: int64, or Python ints and None
    where a value is missing (executor/integers.py); a value beyond the 64-bit range is a CepoptError
    naming its line and column."""
    from cepopt.executor.integers import exact_form

    present = ~(texts.isna() | texts.isin(NA_TEXTS)).to_numpy()
    rows = present.nonzero()[0]
    ints = [int(t) for t in texts.to_numpy()[rows]]  # one pass, not a lookup per cell (a reader's hot path)
    beyond = next((k for k, v in enumerate(ints) if not -INT64 <= v < INT64), None)
    if beyond is not None:
        i = int(rows[beyond])
        raise CepoptError(f"{where}, {_place(i, path)}: {_int64_problem(name, texts.iloc[i].strip())}")
    return exact_form(ints, present, texts.index)


def _csv_number_texts(texts: pd.Series, name: str, where: str, path: Path) -> pd.Series:
    """A number column from its texts, cell by cell: missing cells as NaN, the first cell that is no
    finite decimal number or an integer beyond +-2^53 a CepoptError naming its line and column."""
    missing = (texts.isna() | texts.isin(NA_TEXTS)).to_numpy()
    present = texts[~missing].str.strip()
    bad = ~present.str.fullmatch(dialect.DECIMAL.pattern).to_numpy()
    big = np.zeros(len(present), dtype=bool)
    values = pd.Series(np.nan, index=texts.index)
    if not bad.any():
        floats = present.astype(np.float64).to_numpy()
        values[~missing] = floats
        bad = np.isinf(floats)
        suspect = np.abs(floats) >= EXACT_DOUBLE  # only these may be integers a double rounds
        big[suspect] = present[suspect].map(_beyond_double).to_numpy(dtype=bool)
    if (bad | big).any():
        i = int(np.flatnonzero(~missing)[np.flatnonzero(bad | big)[0]])
        text = texts.iloc[i]
        problem = (f": {_beyond_double_problem(name, text)}" if _beyond_double(text)
                   else f", column {name}: {dialect.number_problem(text)}")
        raise CepoptError(f"{where}, {_place(i, path)}{problem}")
    return values


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
        from cepopt.executor.integers import frame_from_records

        return _check_pandas(frame_from_records(instance.stream), f"{instance.name or 'instance'}.stream", None)
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


def checked(sdf, numeric: tuple[str, ...] = (), integer: tuple[str, ...] = (), texts: tuple[str, ...] = ()):
    """``sdf`` with ``ts`` as long and ``type`` as string, checked as they are read: a bad time stamp or a
    missing (null or empty) type raises inside the job (no job of its own). ``numeric``: text columns
    read as numbers (a CSV's float columns, executor/csv_dialect.py), a cell that is no finite decimal
    number raising likewise; ``integer``: text columns read as longs, exactly (a CSV's integer columns), a
    value that is no integer within the 64-bit range raising; ``texts``: a CSV's text attribute columns,
    whose missing-value texts become null; NaN becomes null (:func:`nan_to_null`)."""
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
    type_ = F.col("type")
    columns = {
        "ts": F.when(ts_long.isNull(), _raise("ts", ts)).otherwise(ts_long),
        "type": F.when(type_.isNull() | (type_.cast("string") == ""), _raise("type", F.col("ts")))
                 .otherwise(type_.cast("string")),
    }
    for name in numeric:
        raw = F.trim(F.col(name))
        value = F.expr(f"try_cast(trim(`{name}`) as double)")
        missing = F.col(name).isNull() | F.col(name).isin(*NA_TEXTS)
        exact = F.expr(f"try_cast(trim(`{name}`) as decimal(38, 0))")  # null beyond 38 digits
        beyond = ((F.abs(value) >= float(EXACT_DOUBLE)) & raw.rlike("^[+-]?[0-9]+$")
                  & (exact.isNull() | (F.abs(exact) > F.lit(EXACT_DOUBLE))))
        bad = value.isNull() | ~F.col(name).rlike(dialect.DECIMAL_JAVA) | (F.abs(value) == float("inf"))
        columns[name] = (F.when(missing, F.lit(None).cast("double"))
                         .when(beyond, _raise(f"integer column {name}", F.col(name)))
                         .when(bad, _raise(f"column {name}", F.col(name))).otherwise(value))
    for name in integer:
        raw = F.trim(F.col(name))
        value = F.when(raw.rlike(f"^{INTEGER_TEXT}$"), F.expr(f"try_cast(trim(`{name}`) as bigint)"))
        missing = F.col(name).isNull() | F.col(name).isin(*NA_TEXTS)
        number = F.when(F.col(name).rlike(dialect.DECIMAL_JAVA), F.expr(f"try_cast(trim(`{name}`) as double)"))
        columns[name] = (F.when(missing, F.lit(None).cast("long"))
                         .when(number.isNull(), _raise(f"column {name}", F.col(name)))
                         .when(value.isNull(), _raise(f"int64 column {name}", F.col(name))).otherwise(value))
    for name in texts:
        columns[name] = F.when(F.col(name).isin(*NA_TEXTS), F.lit(None).cast("string")).otherwise(F.col(name))
    return nan_to_null(sdf.withColumns(columns))


def _csv_files(uri: str, spark) -> list:
    """The CSV files of a stream: the file, or the ``*.csv`` files of a folder (local paths, or Hadoop
    paths for a URI)."""
    if is_local(uri):
        p = local_path(uri)
        files = sorted(f for f in p.iterdir() if f.suffix.lower() == ".csv") if p.is_dir() else [p]
    else:
        jvm = spark.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        files = [path]
        if fs.getFileStatus(path).isDirectory():
            files = [jvm.org.apache.hadoop.fs.Path(name) for name in
                     sorted(str(s.getPath().toString()) for s in fs.listStatus(path)
                            if str(s.getPath().getName()).lower().endswith(".csv"))]
    if not files:
        raise CepoptError(f"{uri}: a folder without CSV files")
    return files


def _lines(uri: str, spark) -> Iterator[str]:
    """The lines of a CSV stream's (first) file, read lazily on the driver: a local file directly, a URI
    through Hadoop's file system (no Spark job)."""
    if is_local(uri):
        with _csv_files(uri, spark)[0].open(newline="", encoding="utf-8", errors="replace") as fh:
            yield from fh
        return
    try:
        path = _csv_files(uri, spark)[0]
        jvm = spark.sparkContext._jvm
        fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(fs.open(path), "UTF-8"))
    except CepoptError:
        raise
    except Exception as exc:  # noqa: BLE001 -- py4j errors: file not found, no file system for a scheme
        from cepopt.executor.session import _first_line

        raise CepoptError(f"{uri}: cannot read the stream ({_first_line(exc)})") from None
    try:
        while (line := reader.readLine()) is not None:
            yield line + "\n"
    finally:
        reader.close()


def _csv_schema(uri: str, spark) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(Spark DDL with every column as text, the float columns, the integer columns, the text attribute
    columns) by the dialect (executor/csv_dialect.py) from the header and the first records, read on the
    driver: a number column whose values there are all integer literals (:func:`integer_texts`) is an
    integer column."""
    try:
        header, rows = dialect.sample(_lines(uri, spark), uri)
    except csv.Error as exc:
        raise CepoptError(f"{uri}: not a readable CSV stream ({exc})") from None
    numbers = dialect.number_columns(header, rows)
    integer = tuple(n for n in numbers
                    if integer_texts(pd.Series([r[header.index(n)] if header.index(n) < len(r) else "" for r in rows],
                                               dtype=object)))
    numeric = tuple(n for n in numbers if n not in integer)
    texts = tuple(n for n in header if n not in ("ts", "type") and n not in numbers)
    return ", ".join(f"`{n}` string" for n in header), numeric, integer, texts


def _may_span_lines(uri: str, spark) -> bool:
    """Whether a CSV stream may hold a quoted line break (Spark then reads each file whole): a local file
    with a quote character; a URI, unread, may."""
    return not is_local(uri) or any(dialect.may_span_lines(f) for f in _csv_files(uri, spark))


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
    integer: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    reader = spark.read
    try:
        if fmt == "csv":
            if schema is None:
                schema, numeric, integer, texts = _csv_schema(uri, spark)
            sdf = (reader.schema(schema).option("header", True).option("mode", "PERMISSIVE").option("escape", '"')
                   .option("multiLine", _may_span_lines(uri, spark)).csv(uri))
        else:
            schema = schema if schema is not None else _parquet_schema(uri)
            sdf = (reader.schema(schema) if schema is not None else reader).parquet(uri)
    except CepoptError:
        raise
    except Exception as exc:  # noqa: BLE001 -- AnalysisException, Py4JJavaError (a garbage footer)
        from cepopt.executor.session import _first_line

        raise CepoptError(f"{spec}: not a readable stream ({_first_line(exc)})") from None
    try:
        return checked(sdf, numeric, integer, texts)
    except CepoptError as exc:
        raise CepoptError(f"{spec}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# errors raised inside a job
# ---------------------------------------------------------------------------------------------


def _locate_csv(path: Path, kind: str) -> tuple[int, str] | None:
    """The first line of a local CSV file whose event is bad as ``kind`` says (ts, type or column NAME),
    with what is wrong, worded as the local engine words it."""
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        found = dialect.records(fh)
        header = next(found, (1, []))[1]
        col = {"ts": "ts", "type": "type"}.get(kind, re.sub(r"^(integer |int64 )?column ", "", kind))
        if col not in header or "ts" not in header:
            return None
        i, t = header.index(col), header.index("ts")
        for lineno, row in found:
            value = row[i] if i < len(row) else None
            if kind == "ts":
                problem = _ts_value(row[t] if t < len(row) else None)
                if isinstance(problem, str):
                    return lineno, f": {problem}"
            elif kind == "type":
                if not value:
                    return lineno, ": event type is missing"
            elif kind.startswith("int64 "):
                if not dialect.is_missing(value) and not (re.fullmatch(INTEGER_TEXT, value.strip())
                                                          and -INT64 <= int(value) < INT64):
                    return lineno, f": {_int64_problem(col, value)}"
            elif not dialect.is_missing(value):
                if _beyond_double(value):
                    return lineno, f": {_beyond_double_problem(col, value)}"
                if (problem := dialect.number_problem(value)) is not None:
                    return lineno, f", column {col}: {problem}"
    return None


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
    if sep and kind == BEFORE_ZERO:
        return before_zero_error(source)
    if not sep or not (kind in ("ts", "type") or kind.startswith(("column ", "integer column ", "int64 column "))):
        return CepoptError(body)  # a kernel's own message
    where = source or "the stream"
    if source and is_local(source) and source.lower().endswith(".csv") and local_path(source).is_file():
        found = _locate_csv(local_path(source), kind)
        if found:
            return CepoptError(f"{where}, line {found[0]}{found[1]}")
    if kind == "ts":
        return CepoptError(f"{where}: an event's {_ts_problem(raw or None)}")
    if kind == "type":
        return CepoptError(f"{where}: an event (ts {raw or '?'}) has no type")
    if kind.startswith("integer "):
        return CepoptError(f"{where}: an event's {_beyond_double_problem(kind.removeprefix('integer column '), raw)}")
    if kind.startswith("int64 "):
        return CepoptError(f"{where}: an event's {_int64_problem(kind.removeprefix('int64 column '), raw)}")
    return CepoptError(f"{where}, {kind}: {dialect.number_problem(raw) or repr(raw) + ' is not a number'}")


# ---------------------------------------------------------------------------------------------
# aggregated columns hold numbers
# ---------------------------------------------------------------------------------------------


def text_columns(events: Any, names: Iterable[str]) -> list[str]:
    """Those of ``names`` that a stream (pandas or Spark) holds as text (or bools), not numbers."""
    if isinstance(events, pd.DataFrame):
        return [n for n in names if n in events.columns and events[n].dtype.kind not in "iuf"
                and events[n].map(lambda v: isinstance(v, str | bool | np.bool_)).any()]
    from pyspark.sql.types import NumericType

    kinds = {f.name: f.dataType for f in events.schema.fields}
    return [n for n in names if n in kinds and not isinstance(kinds[n], NumericType)]


def require_numbers(columns: list[str], source: str | None, spark=None) -> None:
    """A CepoptError when an aggregated column holds text: for a CSV stream naming the line and the
    column of its first value that is no number (as both engines read it), else naming the column."""
    if not columns:
        return
    name = columns[0]
    where = source or "the stream"
    if source and str(source).lower().rstrip("/").endswith(".csv"):
        found = dialect.records(_lines(str(source), spark))
        header = next(found, (1, []))[1]
        i = header.index(name) if name in header else -1
        for lineno, row in found:
            value = row[i] if 0 <= i < len(row) else None
            if not dialect.is_missing(value) and (problem := dialect.number_problem(value)):
                raise CepoptError(f"{where}, line {lineno}, column {name}: {problem}, but a query aggregates "
                                  "the column (SUM, AVG, MIN and MAX take numbers)")
    raise CepoptError(f"{where}: column {name} holds text, but a query aggregates it (SUM, AVG, MIN and MAX "
                      "take numbers)")


# ---------------------------------------------------------------------------------------------
# time stamps before 0 under sliding windows
# ---------------------------------------------------------------------------------------------

#: the kind of a time stamp before 0 raised inside a Spark job (see :func:`user_error`)
BEFORE_ZERO = "before 0"


def before_zero_error(source: str | None) -> CepoptError:
    """The error for a stream with a time stamp before 0 under windows with a SLIDE, naming the line of
    the first one in a local CSV file (the same text on both engines)."""
    where = source or "the stream"
    why = ("but windows with a SLIDE start at time 0 (window k = [kS, kS + W), k >= 0; docs/FORMATS.md) and "
           "would lose it: move the stream's time stamps past 0")
    if source and is_local(source) and str(source).lower().endswith(".csv") and local_path(source).is_file():
        with local_path(source).open(newline="", encoding="utf-8", errors="replace") as fh:
            found = dialect.records(fh)
            header = next(found, (1, []))[1]
            t = header.index("ts") if "ts" in header else 0
            for lineno, row in found:
                value = _ts_value(row[t] if t < len(row) else None)
                if isinstance(value, int) and value < 0:
                    return CepoptError(f"{where}, line {lineno}: time stamp ts is before 0 ({value}), {why}")
    return CepoptError(f"{where}: an event's time stamp ts is before 0, {why}")


def refuse_before_zero(events: Any, source: str | None) -> Any:
    """``events`` (pandas, checked: raises at once; Spark: raises inside the job that reads it, no job of
    its own) refused when a time stamp is before 0: for queries with a SLIDE only."""
    if isinstance(events, pd.DataFrame):
        if len(events) and int(events["ts"].min()) < 0:
            raise before_zero_error(source)
        return events
    from pyspark.sql import functions as F

    ts = F.col("ts")
    return events.withColumn("ts", F.when(ts < 0, _raise(BEFORE_ZERO, ts)).otherwise(ts))
