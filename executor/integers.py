"""Integer attribute columns kept exact from the stream reader to the kernels, on both engines.

An *integer column* holds integers within the 64-bit range and possibly missing values. pandas has
no exact form of such a column that survives its own conversions: its nullable ``Int64`` gives a
float64 array from ``to_numpy()`` and Spark's Arrow transfer turns a long column with a null into a
float64 Series; either rounds every odd integer past 2^53. So:

* in pandas (the local engine's stream, every kernel input) an integer column is ``int64`` when it
  has no missing value, else an object column of Python ints and None (:func:`exact_integer_columns`);
* on Spark, a long column crosses into Python as its value with nulls replaced by 0 plus a boolean
  column saying where the nulls were (:func:`split_nulls`), turned back on the worker into the pandas
  form above (:func:`restore_nulls`). The pair groups exactly as the column does.

Kernels, predicates and aggregates read an object column of ints and None exactly (cepopt.predicates,
executor/exact.py, executor/aseq.py), so SUM, MIN, MAX and AVG of an integer column are exact on
both engines.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["NULL_PREFIX", "canonical_integers", "exact_form", "exact_integer_column", "exact_integer_columns",
           "frame_from_records", "restore_nulls", "split_nulls", "to_pandas"]

#: the name prefix of the null flag of a long column on its way from Spark to a kernel
NULL_PREFIX = "__cepopt_null_"


def exact_form(ints: list[int], present: np.ndarray, index, name=None) -> pd.Series:
    """An integer column in its exact form from its present values ``ints`` (in row order) and the rows
    ``present`` holds them in: int64 when every row has one, else Python ints and None."""
    if present.all():
        return pd.Series(np.array(ints, dtype=np.int64), index=index, name=name)
    out = np.empty(len(present), dtype=object)
    out[present] = ints
    return pd.Series(out, index=index, name=name)


def exact_integer_column(values: pd.Series) -> pd.Series:
    """A nullable integer Series (``Int64`` and kin) as int64, or as Python ints and None."""
    present = ~values.isna().to_numpy()
    if present.all():
        return values.astype("int64")
    return exact_form([int(v) for v in values[present].to_numpy(dtype=object)], present, values.index, values.name)


def exact_integer_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every nullable integer column in the exact form (module docstring)."""
    nullable = [c for c in df.columns if isinstance(df[c].dtype, pd.api.extensions.ExtensionDtype)
                and pd.api.types.is_integer_dtype(df[c].dtype)]
    if not nullable:
        return df
    return df.assign(**{c: exact_integer_column(df[c]) for c in nullable})


def split_nulls(sdf, columns=None) -> tuple:
    """(``sdf`` with every long column among ``columns`` (default: all) but ``ts`` as its value, 0 where
    null, and its null flag ``NULL_PREFIX + name`` beside it; the flag columns). Spark side."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType

    names = set(sdf.columns if columns is None else columns)
    longs = [f.name for f in sdf.schema.fields
             if f.name in names and f.name != "ts" and isinstance(f.dataType, IntegralType)]
    if not longs:
        return sdf, []
    flags = {NULL_PREFIX + c: F.col(f"`{c}`").isNull() for c in longs}
    values = {c: F.coalesce(F.col(f"`{c}`").cast("long"), F.lit(0).cast("long")) for c in longs}
    return sdf.withColumns({**flags, **values}), list(flags)


def restore_nulls(pdf: pd.DataFrame) -> pd.DataFrame:
    """A batch from :func:`split_nulls` back in the exact pandas form, the flag columns dropped."""
    flags = [c for c in pdf.columns if isinstance(c, str) and c.startswith(NULL_PREFIX)]
    if not flags:
        return pdf
    restored = {}
    for flag in flags:
        name = flag[len(NULL_PREFIX):]
        nulls = pdf[flag].to_numpy(dtype=bool)
        if nulls.any():
            restored[name] = exact_form([int(v) for v in pdf[name].to_numpy()[~nulls]], ~nulls, pdf.index)
    return pdf.drop(columns=flags).assign(**restored)


def canonical_integers(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every object column of Python ints alone (a partition of an integer column with no
    missing value there) as int64: the one form a kernel gets of it on both engines."""
    ints = {}
    for c in df.columns:
        if df[c].dtype != object or not len(df) or c == "type":
            continue
        if pd.api.types.infer_dtype(df[c], skipna=False) == "integer":
            try:
                ints[c] = df[c].astype(np.int64)
            except OverflowError:  # ints past int64 (a frame given in memory): exact as they are
                continue
    return exact_integer_columns(df.assign(**ints) if ints else df)


def frame_from_records(records) -> pd.DataFrame:
    """Event dicts (an embedded stream, a list given in memory) as a frame whose integer columns are
    exact: pandas would make a column of ints with a None float64, rounding every odd int past 2^53."""
    df = pd.DataFrame(list(records), dtype=object)
    typed = {}
    for c in df.columns:
        if pd.api.types.infer_dtype(df[c], skipna=True) == "integer":
            typed[c] = pd.Series([None if v is None or v is pd.NA or v != v else int(v) for v in df[c].tolist()],
                                 index=df.index, dtype=object)
        else:
            typed[c] = df[c].infer_objects()
    return canonical_integers(df.assign(**typed)) if len(df.columns) else df


def to_pandas(sdf) -> pd.DataFrame:
    """A Spark DataFrame collected with its long columns exact (``toPandas`` makes one with a null float64)."""
    return restore_nulls(split_nulls(sdf)[0].toPandas())
