"""Stream generators: the ``cepopt.streams`` entry-point group, name -> "module:function".

A generator is ``fn(*, seed=0, **params) -> pandas.DataFrame`` with columns ``ts`` (int64, sorted),
``type`` (str) and attributes; all randomness comes from ``seed`` (NumPy ``default_rng``). The
``workload`` generator also receives the instance as keyword ``instance``. Use them through
``--stream gen:NAME[:key=value,...]`` (:func:`cepopt.executor.streams.resolve_stream`) or
:func:`generate`.
"""

from __future__ import annotations

import inspect
from typing import Any

import pandas as pd

from cepopt import entry_points
from cepopt.errors import CepoptError
from cepopt.params import check_seed, read_values

__all__ = ["MAX_STREAM_EVENTS", "check_params", "generate", "generator", "names", "parameters"]


def names() -> tuple[str, ...]:
    """The registered stream generators."""
    return entry_points.names("streams")


def generator(name: str):
    """The generator function registered as ``name``."""
    return entry_points.load("streams", name, "stream generator")


#: the largest value of any integer parameter of a stream generator (events, types, symbols, ...): a
#: generated stream is built in memory (a million events: about 0.5 GB and a few seconds). Larger
#: streams are files (CSV, Parquet) that Spark reads in parts.
MAX_STREAM_EVENTS = 5_000_000
#: the largest magnitude of a float parameter, and the longest text parameter
MAX_STREAM_FLOAT = 1e15
MAX_STREAM_TEXT = 10_000


def parameters(name: str) -> dict[str, Any]:
    """The parameters of generator ``name`` (user-settable keyword-only ones) with their defaults."""
    sig = inspect.signature(generator(name))
    return {p: spec.default for p, spec in sig.parameters.items()
            if spec.kind == spec.KEYWORD_ONLY and p not in ("seed", "instance")}


def check_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` of generator ``name`` converted to the types its signature declares and checked
    against the stated maxima, before anything is generated; a bad one raises a CepoptError naming
    ``gen:NAME`` and the parameter."""
    fn = generator(name)
    where = f"stream gen:{name}"
    known = tuple(parameters(name))
    unknown = sorted(set(params) - set(known), key=str)
    if unknown:
        raise CepoptError(f"stream generator {name!r} has no parameter {unknown[0]!r} "
                          f"(parameters: {', '.join(known)})")
    values = read_values(fn, params, where, names=known)
    for key, value in values.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and abs(value) > MAX_STREAM_EVENTS:
            raise CepoptError(f"{where}: {key}: at most {MAX_STREAM_EVENTS} (the stated maximum of a generated "
                              f"stream; write larger streams to a file), got {value}")
        if isinstance(value, float) and abs(value) > MAX_STREAM_FLOAT:
            raise CepoptError(f"{where}: {key}: at most {MAX_STREAM_FLOAT:g} in magnitude, got {value:g}")
        if isinstance(value, str) and len(value) > MAX_STREAM_TEXT:
            raise CepoptError(f"{where}: {key}: at most {MAX_STREAM_TEXT} characters, got {len(value)}")
    return values


def generate(name: str, *, seed: int = 0, instance: Any = None, **params) -> pd.DataFrame:
    """Run generator ``name``; unknown or bad parameters raise a CepoptError (before it runs) that names
    the parameter and lists the known ones."""
    seed = check_seed(seed, f"stream gen:{name}: seed")
    params = check_params(name, params)
    fn = generator(name)
    if "instance" in inspect.signature(fn).parameters:
        params["instance"] = instance
    df = fn(seed=seed, **params)
    return check_frame(df, f"generator {name}")


def check_frame(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """ts int64 sorted, type str."""
    for col in ("ts", "type"):
        if col not in df.columns:
            raise CepoptError(f"{where}: no column {col!r}")
    df = df.copy()
    df["ts"] = df["ts"].astype("int64")
    df["type"] = df["type"].astype(str)
    if not df["ts"].is_monotonic_increasing:
        df = df.sort_values("ts", kind="stable").reset_index(drop=True)
    return df
