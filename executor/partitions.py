"""The partition-kernel protocol: how the trend and Sharon executors meet the engines.

A family's executor compiles ``(problem, plan)`` once, on the driver, into a picklable object with

* ``classes``: a tuple of :class:`PartitionClass`, the groups of queries evaluated on the same
  partitions (same event types read, same partition attributes, same windows);
* ``run(index, events, block) -> (partials, metrics)``: the kernel of class ``index`` on the events of
  one partition: one value of the class's ``keys`` and, when the class is cut into window blocks,
  one block (see :func:`block_bounds`). ``events`` is a pandas DataFrame with the class's ``columns``
  (``ts`` and ``type`` first) in any row order; the kernel orders it by ``ts``. ``partials`` is a
  pandas DataFrame with :data:`PARTIAL_COLUMNS` (see :func:`partial_rows`); ``metrics`` maps counter
  names to numbers that add up over partitions.

The engines (Spark: ``groupBy(keys + block).applyInPandas``; local: pandas ``groupby``) call only
this, and merge the partials of every partition with :func:`merge_partials` (the same exact merge on
both engines), so that a (query, group, window) split over several partitions (the equivalence
partitions of one GROUP-BY group) gets one result row per aggregate.

Partials: one row per (query, group, window, aggregate) of a partition that has at least one match.
``op`` says how rows of one key merge: ``sum`` (COUNT(*), COUNT(E), SUM: values add), ``min``,
``max``, ``avg`` (``value`` the sum and ``weight`` the count of the partition; the result is their
ratios' weighted mean). Values travel as text so that integers stay exact at any size: an ``int`` in
decimal, a ``float`` as ``repr`` (``"nan"``/``"inf"`` included).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import pandas as pd

__all__ = [
    "PARTIAL_COLUMNS", "PARTIAL_SCHEMA", "CompiledPlan", "PartitionClass", "block_bounds", "empty_partials",
    "merge_partials", "merge_text", "partial_rows", "parse_value", "window_blocks",
]

PARTIAL_COLUMNS = ["query", "group", "window", "aggregate", "op", "value", "weight"]
#: the Spark DDL of a partials DataFrame
PARTIAL_SCHEMA = ("query string, group string, window long, aggregate string, op string, value string, "
                  "weight string")
OPS = ("sum", "min", "max", "avg")


@dataclass(frozen=True)
class PartitionClass:
    """Queries evaluated together on one partitioning of the stream.

    ``keys``: the partition attributes (GROUP-BY then equivalence attributes); ``length`` / ``slide``:
    the windows (the longest length when a class mixes lengths of one slide); ``windows_per_block``:
    K, the number of consecutive windows one partition computes (None: the whole stream of a key is
    one partition, block 0).
    """

    types: tuple[str, ...]
    columns: tuple[str, ...]
    keys: tuple[str, ...]
    length: float | None = None
    slide: float | None = None
    windows_per_block: int | None = None


class CompiledPlan(Protocol):
    """What a family's ``compile(problem, plan, **options)`` returns (module docstring)."""

    classes: tuple[PartitionClass, ...]

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]: ...


def window_blocks(ts: np.ndarray, cls: PartitionClass) -> tuple[np.ndarray, np.ndarray]:
    """First and last block of each time stamp: the blocks whose windows hold it.

    Window k = [kS, kS + W) (sharon.md §1.5); block b holds windows [bK, (b+1)K). With K >= W/S an
    event lies in at most two blocks; an event in no window (S > W) gets first > last. Exact for
    integral time stamps, lengths and slides.
    """
    if cls.windows_per_block is None or cls.slide is None:
        zero = np.zeros(len(ts), dtype=np.int64)
        return zero, zero
    k = int(cls.windows_per_block)
    w, s = cls.length, cls.slide
    if float(w).is_integer() and float(s).is_integer() and np.issubdtype(np.asarray(ts).dtype, np.integer):
        w, s = int(w), int(s)
        lo = np.maximum(0, (ts - w) // s + 1)
        hi = ts // s
    else:
        tsf = np.asarray(ts, dtype=float)
        lo = np.maximum(0, np.floor((tsf - w) / s) + 1).astype(np.int64)
        hi = np.floor(tsf / s).astype(np.int64)
    first, last = (lo // k).astype(np.int64), (hi // k).astype(np.int64)
    return np.where(lo > hi, last + 1, first), last


def block_bounds(cls: PartitionClass, block: int | None) -> tuple[int, float]:
    """The window indexes [lo, hi) that partition ``block`` of ``cls`` reports (all when unblocked)."""
    if block is None or cls.windows_per_block is None:
        return 0, math.inf
    k = int(cls.windows_per_block)
    return block * k, (block + 1) * k


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, Fraction):
        return str(v.numerator) if v.denominator == 1 else repr(float(v))
    return repr(float(v))


def parse_value(text: str) -> int | float:
    """A partial value back from text: an exact int when it is one, else a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def partial_rows(rows: Iterable[Sequence[Any]]) -> pd.DataFrame:
    """A partials DataFrame from tuples (query, group, window, aggregate, op, value[, weight])."""
    out = []
    for r in rows:
        query, group, window, aggregate, op, value = r[:6]
        weight = r[6] if len(r) > 6 else None
        if op not in OPS:
            raise ValueError(f"unknown partial op {op!r}")
        out.append((str(query), str(group), int(window), str(aggregate), op, _text(value),
                    "" if weight is None else _text(weight)))
    if not out:
        return empty_partials()
    df = pd.DataFrame(out, columns=PARTIAL_COLUMNS)
    df["window"] = df["window"].astype("int64")
    return df


def empty_partials() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="int64" if c == "window" else "object") for c in PARTIAL_COLUMNS})


def _merge_one(op: str, values: Sequence[str], weights: Sequence[str]) -> int | float:
    nums = [parse_value(v) for v in values]
    if op == "min":
        return min(nums)
    if op == "max":
        return max(nums)
    exact = all(isinstance(x, int) for x in nums)
    total = sum(nums) if exact else math.fsum(nums)  # fsum: correctly rounded, independent of order
    if op == "sum":
        return total
    count = sum(int(w) for w in weights)
    return float(Fraction(total) / count) if exact else total / count


def merge_text(partials: pd.DataFrame) -> pd.DataFrame:
    """Result rows (query, group, window, aggregate, value as exact text) of partials from any number of
    partitions: what both engines run (Spark on each hash partition of the partials by their key).

    Most keys have one partial (a window lies in one partition): their value passes through (an
    ``avg`` divided); keys with several merge exactly (:func:`_merge_one`).
    """
    from cepopt.executor.results import RESULT_COLUMNS, RESULT_KEYS, value_text

    if not len(partials):
        return pd.DataFrame({c: pd.Series(dtype="int64" if c == "window" else "object") for c in RESULT_COLUMNS})
    several = partials.duplicated(RESULT_KEYS, keep=False).to_numpy()
    single = partials[~several]
    values = [value_text(_merge_one(op, [v], [w])) if op == "avg" else value_text(parse_value(v))
              for op, v, w in zip(single["op"], single["value"], single["weight"], strict=True)]
    out = [single[RESULT_KEYS].assign(value=values)]
    if several.any():
        rows = []
        for key, part in partials[several].groupby(RESULT_KEYS, sort=False):
            ops = set(part["op"])
            if len(ops) != 1:
                raise ValueError(f"partials of {key} disagree on their op: {sorted(ops)}")
            rows.append((*key, value_text(_merge_one(ops.pop(), list(part["value"]), list(part["weight"])))))
        out.append(pd.DataFrame(rows, columns=RESULT_COLUMNS))
    merged = pd.concat(out, ignore_index=True) if len(out) > 1 else out[0].reset_index(drop=True)
    merged["window"] = merged["window"].astype("int64")
    return merged


def merge_partials(partials: pd.DataFrame) -> pd.DataFrame:
    """Result rows (query, group, window, aggregate, value) of partials from any number of partitions.

    Integers add exactly; float sums are correctly rounded (``math.fsum``), so the result does not
    depend on how the stream was partitioned or in what order partials arrive.
    """
    from cepopt.executor.results import parse_value as parse_result
    from cepopt.executor.results import results_frame

    merged = merge_text(partials)
    return results_frame(zip(merged["query"], merged["group"], merged["window"], merged["aggregate"],
                             map(parse_result, merged["value"]), strict=True))
