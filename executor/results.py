"""THE results format of every executor, and the helpers that build, compare and digest it.

A results table is a pandas DataFrame with one row per (query, group, window, aggregate)::

    query      str   the query name
    group      str   a stable text of the GROUP-BY key ("" when the query has no GROUP-BY),
                     see :func:`format_group`
    window     int   the window index k (window k = [k*S, k*S + W); 0 when the query has no slide)
    aggregate  str   the aggregate's label, see :func:`aggregate_label` ("COUNT(*)", "SUM(B.v)")
    value      object  a Python int for counts (exact, may exceed 2**63), an int or float for
                     SUM/MIN/MAX (the attribute's type), a float for AVG

A row exists only for a (query, group, window) with at least one match; AVG, MIN and MAX rows are
left out when the match set holds no event of the aggregated reference.

On Spark, a results DataFrame has the same columns (:data:`RESULT_SCHEMA`) with ``value`` as exact text
(:func:`value_text`; :func:`parse_value` reads it back), so counts beyond 2**63 stay exact.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import pandas as pd

from cepopt.model import Aggregate, AttrRef, Query

__all__ = [
    "RESULT_COLUMNS", "RESULT_KEYS", "RESULT_SCHEMA", "AggAccumulator", "aggregate_label", "compare_results",
    "digest", "digest_hex", "digest_sum", "empty_results", "format_group", "format_value", "group_attrs",
    "int_text", "merge_results", "parse_value", "parse_values", "partition_attrs", "printable", "py_scalar",
    "results_frame", "text_int", "value_text",
]

RESULT_COLUMNS = ["query", "group", "window", "aggregate", "value"]
RESULT_KEYS = ["query", "group", "window", "aggregate"]
#: the Spark DDL of a results DataFrame: ``value`` is exact text (:func:`value_text`)
RESULT_SCHEMA = "query string, group string, window long, aggregate string, value string"


def aggregate_label(agg: Aggregate) -> str:
    """The text of an aggregate in the results: COUNT(*), COUNT(E), SUM(E.attr), ..."""
    if agg.func == "COUNT":
        return "COUNT(*)" if agg.ref is None else f"COUNT({agg.ref})"
    return f"{agg.func}({agg.ref}.{agg.attr})"


def py_scalar(value: Any) -> Any:
    """A numpy / pandas scalar as a plain Python value; NaN and NA become None."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


#: below this many bits an int's decimal text is below Python's default limit of 4,300 digits for
#: int <-> str conversion (a guard against slow parsing of untrusted text, left in place)
_SHORT_INT_BITS = 14_000


def int_text(value: int) -> str:
    """The decimal text of an int of any size: a trend count over n events can have 0.3 n digits,
    past the digit limit of ``str(int)``; :class:`decimal.Decimal` converts without it."""
    return str(value) if value.bit_length() < _SHORT_INT_BITS else str(Decimal(value))


def text_int(text: str) -> int:
    """The int of a decimal text of any size (:func:`int_text` read back); ValueError if it is none."""
    if len(text) < 4000:
        return int(text)
    body = text[1:] if text[:1] in "+-" else text
    if not body.isdigit():
        raise ValueError(f"not an integer: {text[:40]!r}...")
    return int(Decimal(text))


def printable(frame: pd.DataFrame) -> pd.DataFrame:
    """A results frame to print: ints as their exact text (pandas would call ``str`` on them)."""
    return frame.assign(value=pd.Series([int_text(v) if type(v) is int else v for v in frame["value"]],
                                         index=frame.index, dtype="object"))


def _key_text(value: Any) -> str:
    value = py_scalar(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        # a column read as double (CSV with gaps, Spark casts) must name the same group as an int one
        return str(int(value))
    return str(value)


def group_attrs(query: Query) -> tuple[str, ...]:
    """The GROUP-BY attributes of a query (the ref of ``T.district`` is dropped: the stream is
    partitioned by the attribute, as the papers do)."""
    out: dict[str, None] = {}
    for key in query.group_by:
        out.setdefault(key.attr if isinstance(key, AttrRef) else str(key), None)
    return tuple(out)


def partition_attrs(query: Query) -> tuple[str, ...]:
    """GROUP-BY attributes followed by the equivalence-predicate attributes not already among them:
    every event of a match has the same values of all of them."""
    out = dict.fromkeys(group_attrs(query))
    for attr in query.equivalences:
        out.setdefault(attr, None)
    return tuple(out)


def format_group(attrs: Sequence[str], values: Sequence[Any]) -> str:
    """Stable text of a group key: ``attr=value`` pairs joined by ``,`` ("" when no attributes).

    Integral floats print as ints and missing values as ``null``, so executors that read the same
    column with different dtypes name the same group.
    """
    return ",".join(f"{a}={_key_text(v)}" for a, v in zip(attrs, values, strict=True))


def format_value(value: Any) -> str:
    """Exact text of a result value for the digest: ints in decimal, floats rounded to 12
    significant digits (an integral float prints as an int, -0.0 as 0)."""
    value = py_scalar(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return int_text(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        rounded = float(f"{value:.12g}")
        if rounded.is_integer() and abs(rounded) < 2 ** 63:
            return str(int(rounded))
        return repr(rounded)
    return str(value)


def empty_results() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object" if c in ("value",) else
                                      ("int64" if c == "window" else "object")) for c in RESULT_COLUMNS})


def results_frame(rows: Iterable[Sequence[Any] | dict]) -> pd.DataFrame:
    """A results DataFrame from rows (query, group, window, aggregate, value) or dicts, sorted by
    (query, group, window, aggregate); ``value`` keeps Python ints (object dtype)."""
    rows = [tuple(r[c] for c in RESULT_COLUMNS) if isinstance(r, dict) else tuple(r) for r in rows]
    if not rows:
        return empty_results()
    rows = [(str(q), str(g), int(w), str(a), py_scalar(v)) for q, g, w, a, v in rows]
    rows.sort(key=lambda r: r[:4])
    df = pd.DataFrame({
        "query": pd.Series([r[0] for r in rows], dtype="object"),
        "group": pd.Series([r[1] for r in rows], dtype="object"),
        "window": pd.Series([r[2] for r in rows], dtype="int64"),
        "aggregate": pd.Series([r[3] for r in rows], dtype="object"),
        "value": pd.Series([r[4] for r in rows], dtype="object"),
    })
    return df


def parse_values(texts: pd.Series) -> pd.Series:
    """:func:`parse_value` of a column of texts, as an object column on the same index: Python ints of
    any size beside floats (from a list or an array pandas would try to turn them all into floats)."""
    return pd.Series([parse_value(t) for t in texts], index=texts.index, dtype="object")


def value_text(value: Any) -> str:
    """The exact text of a result value in a results DataFrame on Spark: an int in decimal (any size), a
    float as ``repr`` ("nan", "inf" included), anything else as ``str``; "" for a missing value."""
    value = py_scalar(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return int_text(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_value(text: Any) -> Any:
    """A result value back from its text (:func:`value_text`): an exact int when it is one, else a float,
    else the text; None for "" or a missing value. Values that are not text pass unchanged."""
    if not isinstance(text, str):
        return py_scalar(text)
    if text == "":
        return None
    try:
        return text_int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


DIGEST_MODULUS = 2 ** 256


def _line_hash(query: Any, group: Any, window: Any, aggregate: Any, value: Any) -> int:
    if isinstance(value, str) and value and (value.isdigit() or value[0] == "-" and value[1:].isdigit()):
        shown = int_text(text_int(value))  # a canonical int's text is its format_value
    else:
        shown = format_value(parse_value(value))
    line = f"{query}\t{group}\t{int(window)}\t{aggregate}\t{shown}\n"
    return int.from_bytes(hashlib.sha256(line.encode()).digest(), "big")


def digest_sum(results: pd.DataFrame) -> tuple[int, int]:
    """(sum of the rows' line hashes modulo 2**256, rows) of a results table whose values are objects
    or texts: the part of :func:`digest` one partition of the results contributes."""
    total = 0
    if not len(results):
        return 0, 0
    for row in zip(results["query"], results["group"], results["window"], results["aggregate"],
                   results["value"], strict=True):
        total += _line_hash(*row)
    return total % DIGEST_MODULUS, len(results)


def digest_hex(total: int) -> str:
    """The digest text of a sum of line hashes."""
    return f"{total % DIGEST_MODULUS:064x}"


def digest(results: pd.DataFrame) -> str:
    """An order-independent digest of a results table: the sum modulo 2**256 of the sha256 of each row's
    line ``query, group, window, aggregate, value`` with exactly formatted values (:func:`format_value`).

    A sum of per-row hashes, so that partitions of a results DataFrame digest apart (on the cluster) and
    only their sums meet; the same rows give the same digest in any order and any partitioning.
    """
    return digest_hex(digest_sum(results)[0])


def compare_results(a: pd.DataFrame, b: pd.DataFrame, rel: float = 1e-9) -> list[str]:
    """Differences between two results tables (empty list when equal). Ints must be equal; floats
    may differ by ``rel`` (float sums depend on the order of additions)."""

    def table(df: pd.DataFrame) -> dict:
        return {(q, g, int(w), ag): py_scalar(v) for q, g, w, ag, v in
                zip(df["query"], df["group"], df["window"], df["aggregate"], df["value"], strict=True)}

    ta, tb = table(a), table(b)
    out = []
    for key in sorted(set(ta) | set(tb), key=str):
        if key not in ta:
            out.append(f"{key}: missing on the left (right = {tb[key]!r})")
        elif key not in tb:
            out.append(f"{key}: missing on the right (left = {ta[key]!r})")
        else:
            x, y = ta[key], tb[key]
            if isinstance(x, int) and isinstance(y, int):
                ok = x == y
            elif x is None or y is None:
                ok = x is y
            else:
                ok = math.isclose(float(x), float(y), rel_tol=rel, abs_tol=rel)
            if not ok:
                out.append(f"{key}: {x!r} != {y!r}")
    return out


def merge_results(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate results tables and sort them."""
    rows = []
    for df in frames:
        rows.extend(zip(df["query"], df["group"], df["window"], df["aggregate"], df["value"], strict=True))
    return results_frame(rows)


class AggAccumulator:
    """The aggregates of one query over a set of matches, per (group, window).

    ``add(group, window, cnt, per_ref)`` adds ``cnt`` matches; ``per_ref[(ref, attr)]`` gives
    (count of ref-events with multiplicity, sum of attr, min, max) over them. Accumulators of
    different partitions merge with :meth:`merge` (counts and sums add, min/max combine), which is how
    equivalence partitions of one GROUP-BY group are combined.
    """

    def __init__(self, query: Query):
        self.query = query
        self.aggs = query.aggregates
        #: (ref, attr or None) pairs the aggregates need
        self.targets = tuple(dict.fromkeys((a.ref, a.attr) for a in self.aggs if a.ref is not None))
        self.cells: dict[tuple[str, int], list] = {}

    def _cell(self, group: str, window: int) -> list:
        cell = self.cells.get((group, window))
        if cell is None:
            # [cnt, {target: [count, sum, min, max]}]
            cell = [0, {t: [0, 0, None, None] for t in self.targets}]
            self.cells[(group, window)] = cell
        return cell

    def add(self, group: str, window: int, cnt: int, per_target: dict | None = None) -> None:
        cell = self._cell(group, window)
        cell[0] += cnt
        for t, (c, s, lo, hi) in (per_target or {}).items():
            acc = cell[1][t]
            acc[0] += c
            acc[1] += s
            if lo is not None and (acc[2] is None or lo < acc[2]):
                acc[2] = lo
            if hi is not None and (acc[3] is None or hi > acc[3]):
                acc[3] = hi

    def merge(self, other: AggAccumulator) -> None:
        for (g, w), (cnt, per) in other.cells.items():
            self.add(g, w, cnt, {t: tuple(v) for t, v in per.items()})

    def rows(self) -> list[tuple]:
        """Result rows (query, group, window, aggregate, value) of the cells with matches."""
        out = []
        name = self.query.name
        for (g, w), (cnt, per) in self.cells.items():
            if cnt <= 0:
                continue
            for agg in self.aggs:
                label = aggregate_label(agg)
                if agg.ref is None:
                    out.append((name, g, w, label, int(cnt)))
                    continue
                c, s, lo, hi = per[(agg.ref, agg.attr)]
                if agg.func == "COUNT":
                    out.append((name, g, w, label, int(c)))
                elif agg.func == "SUM":
                    out.append((name, g, w, label, s))
                elif agg.func == "AVG":
                    if c > 0:
                        out.append((name, g, w, label, float(s / c)))
                elif agg.func == "MIN":
                    if lo is not None:
                        out.append((name, g, w, label, lo))
                elif agg.func == "MAX":
                    if hi is not None:
                        out.append((name, g, w, label, hi))
        return out
