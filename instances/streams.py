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

__all__ = ["generate", "generator", "names"]


def names() -> tuple[str, ...]:
    """The registered stream generators."""
    return entry_points.names("streams")


def generator(name: str):
    """The generator function registered as ``name``."""
    return entry_points.load("streams", name, "stream generator")


def generate(name: str, *, seed: int = 0, instance: Any = None, **params) -> pd.DataFrame:
    """Run generator ``name``; unknown parameters raise a CepoptError that lists the known ones."""
    fn = generator(name)
    sig = inspect.signature(fn)
    known = [p for p, spec in sig.parameters.items() if spec.kind == spec.KEYWORD_ONLY]
    if "instance" in sig.parameters:
        params["instance"] = instance
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise CepoptError(f"stream generator {name!r} has no parameter {unknown[0]!r} "
                          f"(parameters: {', '.join(p for p in known if p != 'instance')})")
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
