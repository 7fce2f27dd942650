"""A toy compiled plan (the partition-kernel protocol of executor/partitions.py) for the engines' tests:
per window of each class, COUNT(*), SUM/MIN/AVG of v, and 2**(100 + count) (exact beyond int64)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.partitions import PartitionClass, block_bounds, partial_rows
from cepopt.executor.results import format_group


@dataclass(frozen=True)
class ToyPlan:
    classes: tuple[PartitionClass, ...]
    fail_on: str | None = None  # a type whose presence makes the kernel raise a CepoptError
    python_error: bool = False  # raise a ValueError instead (a bug, not a user error)

    def run(self, index: int, events: pd.DataFrame, block: int | None):
        cls = self.classes[index]
        if self.fail_on is not None and (events["type"] == self.fail_on).any():
            if self.python_error:
                raise ValueError(f"toy bug on {self.fail_on}")
            raise CepoptError(f"toy kernel: met an event of type {self.fail_on}")
        assert list(events.columns) == list(cls.columns)
        assert (np.diff(events["ts"].to_numpy()) >= 0).all()
        key = format_group(cls.keys, [events[k].iloc[0] for k in cls.keys]) if len(events) else ""
        lo, hi = block_bounds(cls, block)
        rows, ts = [], events["ts"].to_numpy()
        w, s = (int(cls.length), int(cls.slide)) if cls.slide else (None, None)
        windows = sorted({k for t in ts for k in (range(max(0, (t - w) // s + 1), t // s + 1) if s else [0])})
        for k in windows:
            if not lo <= k < hi:
                continue
            inside = events[(ts >= k * s) & (ts < k * s + w)] if s else events
            v = pd.to_numeric(inside["v"], errors="coerce").dropna() if "v" in inside else pd.Series([], dtype=float)
            q = f"toy{index}"
            rows += [(q, key, k, "COUNT(*)", "sum", len(inside)), (q, key, k, "BIG", "sum", 2 ** (100 + len(inside)))]
            if len(v):
                rows += [(q, key, k, "SUM(v)", "sum", float(v.sum())), (q, key, k, "MIN(v)", "min", float(v.min())),
                         (q, key, k, "AVG(v)", "avg", float(v.sum()), len(v))]
        return partial_rows(rows), {"reads": len(events), "windows": len(rows)}


def toy_plan(*, keys=("g",), length=6, slide=2, block=3, fail_on=None, types=("A", "B"),
             python_error=False) -> ToyPlan:
    cols = ("ts", "type", *keys, "v")
    return ToyPlan((PartitionClass(tuple(types), cols, tuple(keys), float(length), float(slide), block),
                    PartitionClass(("C",), ("ts", "type", "v"), (), None, None, None)), fail_on, python_error)


def brute_force(plan: ToyPlan, events: pd.DataFrame) -> dict:
    """The toy plan's results computed directly: {(query, group, window, aggregate): value}."""
    out: dict = {}
    for index, cls in enumerate(plan.classes):
        df = events[events["type"].isin(cls.types)]
        groups = df.groupby(list(cls.keys), dropna=False) if cls.keys else [((), df)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            g = format_group(cls.keys, list(key)) if cls.keys else ""
            ts = part["ts"].to_numpy()
            if cls.slide:
                w, s = int(cls.length), int(cls.slide)
                ks = sorted({k for t in ts for k in range(max(0, (t - w) // s + 1), t // s + 1)})
            else:
                ks = [0] if len(part) else []
            for k in ks:
                inside = part[(ts >= k * s) & (ts < k * s + w)] if cls.slide else part
                v = pd.to_numeric(inside["v"], errors="coerce").dropna()
                q = f"toy{index}"
                out[(q, g, k, "COUNT(*)")] = len(inside)
                out[(q, g, k, "BIG")] = 2 ** (100 + len(inside))
                if len(v):
                    out[(q, g, k, "SUM(v)")] = float(v.sum())
                    out[(q, g, k, "MIN(v)")] = float(v.min())
                    out[(q, g, k, "AVG(v)")] = float(v.sum()) / len(v)
    return out


def random_events(n: int = 300, seed: int = 0, *, span: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"ts": rng.integers(0, span, n).astype("int64"), "type": rng.choice(list("ABCD"), n),
                       "g": rng.integers(0, 3, n), "v": rng.integers(-5, 20, n).astype(float)})
    df.loc[rng.random(n) < 0.1, "v"] = np.nan
    return df
