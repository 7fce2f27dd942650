"""Stream generators: name -> "module:function".

A generator is ``fn(*, seed=0, **params) -> pandas.DataFrame`` with columns ``ts`` (int64, sorted),
``type`` (str) and attributes; all randomness comes from ``seed`` (NumPy ``default_rng``). The
``workload`` generator also receives the instance as keyword ``instance``. Use them through
``--stream gen:NAME[:key=value,...]`` (:func:`cepopt.executor.streams.resolve_stream`) or
:func:`generate`.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pandas as pd

from cepopt.errors import CepoptError, NotBuiltError, UnknownNameError

__all__ = ["GENERATORS", "generate", "generator"]

GENERATORS: dict[str, str] = {
    "ecommerce": "cepopt.instances.ecommerce_stream:generate",
    "linear-road": "cepopt.instances.linear_road_stream:generate",
    "bursty": "cepopt.instances.bursty_stream:generate",
    "workload": "cepopt.instances.workload_stream:generate",
    "hamlet": "cepopt.instances.hamlet_stream:generate",
    "stock": "cepopt.instances.stock_stream:generate",
}


def generator(name: str):
    """The generator function registered as ``name``."""
    if name not in GENERATORS:
        raise UnknownNameError(f"unknown stream generator {name!r} (known: {', '.join(GENERATORS)})")
    module, func = GENERATORS[name].split(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise NotBuiltError(f"stream generator {name!r} is not built yet") from None
        raise
    return getattr(mod, func)


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
