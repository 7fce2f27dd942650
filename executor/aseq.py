"""A partition's events as the arrays of the A-Seq / Sharon kernel, and its exact arithmetic.

:func:`partition_rows` turns the events of one partition (any row order) into per time-stamp batch
rows: the level keys (event type + position filters, :class:`LevelKey`) with events in the batch,
their number, and per attribute the sum of their values scaled to integers and the min / max of their
value ranks. The kernel (:mod:`cepopt.executor.sharon_loops`) computes in int64 modulo 2^64 or modulo
primes below 2^31; :func:`crt` joins the passes. Values stay exact:

* counts and integer attributes are integers;
* float attributes are scaled to integers by a power of two common to the partition (every finite
  double is an odd integer times a power of two), so sums are exact integers too, turned into the
  correctly rounded float at the end (:meth:`SumScale.value`): every plan gives the same sums;
* min / max work on the ranks of the distinct values (exact for any numbers).

Missing values (None, NaN, absent column) add 0 to sums and are skipped by min / max; an event with a
missing value still counts for COUNT(E) (sharon.md §1.4, the oracle :mod:`cepopt.executor.reference`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.exact import largest_primes
from cepopt.executor.sharon_loops import NO_MAX, NO_MIN
from cepopt.model import Filter, Query, Type, is_flat_seq
from cepopt.predicates import compare_arrays

__all__ = ["LevelKey", "PartitionRows", "SumScale", "crt", "filter_mask", "numeric", "partition_rows", "primes",
           "query_leaves", "query_types", "position_filters"]

#: log2 of the bound below which the int64 results of a pass modulo 2^64 are exact
INT64_SAFE_LOG2 = 62


# ---------------------------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------------------------


def query_types(query: Query) -> tuple[str, ...]:
    """The type sequence of a flat SEQ query; other patterns raise CepoptError."""
    if not is_flat_seq(query.pattern):
        raise CepoptError(f"query {query.name}: the sequence executors handle SEQ of event types only")
    p = query.pattern
    return (p.name,) if isinstance(p, Type) else tuple(item.name for item in p.items)


def query_leaves(query: Query) -> tuple[Type, ...]:
    p = query.pattern
    return (p,) if isinstance(p, Type) else tuple(p.items)


def position_filters(query: Query) -> list[tuple[Filter, ...]]:
    """The local filters of each pattern position (a filter names the position's variable or type)."""
    return [tuple(f for f in query.filters if f.ref in (leaf.var, leaf.name)) for leaf in query_leaves(query)]


@dataclass(frozen=True)
class LevelKey:
    """The events one pattern position takes: its type, passing its filters."""

    type: str
    filters: tuple[Filter, ...]

    @property
    def sig(self) -> tuple:
        return (self.type, tuple(sorted((f.attr, f.op, repr(f.value)) for f in self.filters)))


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------


def numeric(events: pd.DataFrame, attr: str) -> np.ndarray:
    """Attribute as int64 (an integer column without missing values), an object array of Python ints
    and None (an integer column with missing values, exact: executor/integers.py) or float64 (missing:
    NaN; text that is no number: NaN; absent column: all NaN)."""
    if attr not in events.columns:
        return np.full(len(events), np.nan)
    col = events[attr]
    if pd.api.types.is_integer_dtype(col.dtype) and not col.isna().any():
        return col.to_numpy(dtype=np.int64)
    if col.dtype == object and pd.api.types.infer_dtype(col, skipna=True) == "integer":
        return np.array([None if v is None or v is pd.NA else int(v) for v in col.tolist()], dtype=object)
    if pd.api.types.is_bool_dtype(col.dtype) and not col.isna().any():
        return col.to_numpy(dtype=np.int64)
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)


def filter_mask(events: pd.DataFrame, filters: Sequence[Filter]) -> np.ndarray:
    """Events passing every filter: the oracle's comparison, vectorised (cepopt.predicates: a missing
    value never passes, nor an ordering of values without one; an absent column is all missing)."""
    mask = np.ones(len(events), dtype=bool)
    for f in filters:
        if f.attr not in events.columns:
            return np.zeros(len(events), dtype=bool)
        mask &= compare_arrays(f.op, events[f.attr], f.value)
    return mask


@dataclass(frozen=True)
class SumScale:
    """Values of one attribute as integers: value = scaled x 2^exp (exp 0 for an integer attribute)."""

    is_int: bool
    exp: int
    #: the largest |scaled value|
    top: int

    def value(self, scaled: int) -> int | float:
        """The exact sum of an integer attribute; the correctly rounded float of a float attribute."""
        if self.is_int:
            return scaled
        try:
            return float(scaled << self.exp) if self.exp >= 0 else scaled / (1 << -self.exp)
        except OverflowError:
            return math.copysign(math.inf, scaled)


def _scaled(vals: np.ndarray) -> tuple[np.ndarray, SumScale]:
    """Integer values (int64, or Python ints in an object array past int64) and their scale."""
    if vals.dtype == object:  # Python ints and None (missing: 0 in a sum, as a float's NaN)
        vals = _as_int64(np.array([0 if v is None else v for v in vals.tolist()], dtype=object))
    if vals.dtype.kind == "i" or vals.dtype == object:
        top = max((abs(int(v)) for v in vals.tolist()), default=0) if vals.dtype == object else (
            int(np.abs(vals).max()) if len(vals) else 0)
        return vals, SumScale(True, 0, top)
    v = np.where(np.isfinite(vals), vals, 0.0)
    nz = v != 0
    if not nz.any():
        return np.zeros(len(v), dtype=np.int64), SumScale(False, 0, 0)
    mant, e2 = np.frexp(v[nz])
    m = (mant * 2.0 ** 53).astype(np.int64)  # exact: |m| < 2^53
    low = m & -m
    tz = np.log2(low.astype(np.float64)).astype(np.int64)  # exact for powers of two
    odd = m >> tz
    ex = e2.astype(np.int64) - 53 + tz
    emin = int(ex.min())
    shift = ex - emin
    bits = np.log2(np.abs(odd).astype(np.float64)) + 1 + shift
    out: np.ndarray
    if float(bits.max()) < 62:
        out = np.zeros(len(v), dtype=np.int64)
        out[nz] = odd << shift
        top = int(np.abs(out).max())
    else:  # values spanning many binades: Python ints
        out = np.zeros(len(v), dtype=object)
        out[np.flatnonzero(nz)] = [int(o) << int(s) for o, s in zip(odd.tolist(), shift.tolist(), strict=True)]
        top = max(abs(x) for x in out.tolist())
    return out, SumScale(False, emin, top)


def _as_int64(vals: np.ndarray) -> np.ndarray:
    """An object array of Python ints as int64 when every one fits (else unchanged)."""
    try:
        return vals.astype(np.int64)
    except OverflowError:
        return vals


def ranks(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank or -1 for missing, the distinct values in order, whether the attribute is integer)."""
    if vals.dtype == object:  # Python ints and None
        ok = np.array([v is not None for v in vals.tolist()], dtype=bool)
        uniq = _as_int64(np.array(sorted(set(vals[ok].tolist())), dtype=object))
        pos = {v: i for i, v in enumerate(uniq.tolist())}
        r = np.full(len(vals), -1, dtype=np.int64)
        r[ok] = [pos[v] for v in vals[ok].tolist()]
        return r, uniq, np.asarray(True)
    ok = ~np.isnan(vals) if vals.dtype.kind == "f" else np.ones(len(vals), dtype=bool)
    uniq = np.unique(vals[ok])
    r = np.full(len(vals), -1, dtype=np.int64)
    r[ok] = np.searchsorted(uniq, vals[ok])
    return r, uniq, np.asarray(vals.dtype.kind == "i")


# ---------------------------------------------------------------------------------------------
# partition rows
# ---------------------------------------------------------------------------------------------


@dataclass
class PartitionRows:
    """The rows of one partition (see the module docstring) and what decodes the kernel's output."""

    bts: np.ndarray          # batch time stamps (scaled), batches with rows only
    row_ptr: np.ndarray
    row_lk: np.ndarray
    row_k: np.ndarray
    row_sum: np.ndarray      # exact scaled sums per (row, sum attribute): int64 or object
    row_min: np.ndarray      # min rank per (row, min/max attribute); NO_MIN when none
    row_max: np.ndarray
    scales: list[SumScale]   # per sum attribute
    uniq: list[np.ndarray]   # per min/max attribute: its distinct values
    lk_events: np.ndarray    # events per level key
    n_events: int
    ts_min: int
    ts_max: int


def _type_codes(events: pd.DataFrame, type_names: Sequence[str]) -> np.ndarray:
    """Per event the index of its type in ``type_names`` (-1: another type)."""
    col = events["type"]
    if col.dtype != object and not pd.api.types.is_string_dtype(col.dtype):
        col = col.astype(str)
    codes, uniq = pd.factorize(col, use_na_sentinel=True)
    index = {t: x for x, t in enumerate(type_names)}
    lut = np.asarray([index.get(str(u), -1) for u in uniq] + [-1], dtype=np.int64)
    return lut[codes]  # the NA code -1 maps to the last entry, -1


def _pairs(events: pd.DataFrame, codes: np.ndarray, lks: Sequence[LevelKey], type_names: Sequence[str]
           ) -> tuple[np.ndarray, np.ndarray]:
    """(event, level key) pairs: every event with every level key it takes."""
    by_type: dict[str, list[int]] = {}
    for x, lk in enumerate(lks):
        by_type.setdefault(lk.type, []).append(x)
    tcode = {t: c for c, t in enumerate(type_names)}
    if all(len(v) == 1 and not lks[v[0]].filters for v in by_type.values()):
        lk_of = np.full(len(type_names) + 1, -1, dtype=np.int64)
        for t, (x,) in by_type.items():
            lk_of[tcode[t]] = x
        lk = lk_of[codes]  # code -1 (another type) maps to the last entry, -1
        ev = np.flatnonzero(lk >= 0)
        return ev, lk[ev]
    evs, keys = [], []
    for x, lk in enumerate(lks):
        idx = np.flatnonzero(codes == tcode[lk.type])
        if lk.filters and len(idx):
            idx = idx[filter_mask(events.iloc[idx], lk.filters)]
        evs.append(idx)
        keys.append(np.full(len(idx), x, dtype=np.int64))
    return np.concatenate(evs), np.concatenate(keys)


def _time_order(ts: np.ndarray, lk: np.ndarray, nlk: int) -> np.ndarray | None:
    """The order of the (time, level key) pairs, or None when they are in strictly increasing order."""
    if not len(ts):
        return None
    lo, hi = int(ts.min()), int(ts.max())
    if (hi - lo + 1) * max(nlk, 1) < 2 ** 62:
        key = (ts - lo) * nlk + lk
        if (key[1:] > key[:-1]).all():
            return None
        return np.argsort(key, kind="stable")  # fast on nearly sorted input
    return np.lexsort((lk, ts))


def partition_rows(events: pd.DataFrame, lks: Sequence[LevelKey], type_names: Sequence[str],
                   sum_attrs: Sequence[str], mm_attrs: Sequence[str], time_scale: int = 1) -> PartitionRows:
    """The rows of one partition's events (any order); ``time_scale`` multiplies time stamps."""
    ts = events["ts"].to_numpy()
    if ts.dtype.kind != "i":
        ts = ts.astype(np.int64)
    if time_scale != 1:
        ts = ts * np.int64(time_scale)
    nlk = len(lks)
    ev, lk = _pairs(events, _type_codes(events, type_names), lks, type_names)
    key = ts[ev]
    order = _time_order(key, lk, nlk)
    if order is not None:
        ev, lk, key = ev[order], lk[order], key[order]
    n_pairs = len(ev)
    if order is None:  # one event per row
        first = np.arange(n_pairs)
        row_k = np.ones(n_pairs, dtype=np.int64)
    else:
        new_row = np.ones(n_pairs, dtype=bool)
        new_row[1:] = (key[1:] != key[:-1]) | (lk[1:] != lk[:-1])
        first = np.flatnonzero(new_row)
        row_k = np.diff(np.append(first, n_pairs)).astype(np.int64)
    row_ts, row_lk = key[first], lk[first]
    new_b = np.ones(len(first), dtype=bool)
    new_b[1:] = row_ts[1:] != row_ts[:-1]
    bfirst = np.flatnonzero(new_b)
    n = len(first)
    sums, scales = [], []
    for a in sum_attrs:
        vals, sc = _scaled(numeric(events, a)[ev])
        scales.append(sc)
        sums.append(np.add.reduceat(vals, first) if n else np.zeros(0, dtype=vals.dtype))
    mins, maxs, uniq = [], [], []
    for a in mm_attrs:
        r, u, _ = ranks(numeric(events, a)[ev])
        uniq.append(u)
        rmin = np.where(r >= 0, r, NO_MIN)
        mins.append(np.minimum.reduceat(rmin, first) if n else rmin[:0])
        maxs.append(np.maximum.reduceat(r, first) if n else r[:0])  # -1 = NO_MAX

    def stack(cols, dtype, fill):
        if not cols:
            return np.full((n, 0), fill, dtype=dtype)
        return np.stack(cols, axis=1) if n else np.zeros((0, len(cols)), dtype=dtype)

    row_sum = stack(sums, object if any(x.dtype == object for x in sums) else np.int64, 0)
    return PartitionRows(
        row_ts[bfirst], np.append(bfirst, n).astype(np.int64), row_lk.astype(np.int64), row_k,
        row_sum, stack(mins, np.int64, NO_MIN), stack(maxs, np.int64, NO_MAX), scales, uniq,
        np.bincount(lk, minlength=nlk).astype(np.int64), len(events),
        int(ts.min()) if len(ts) else 0, int(ts.max()) if len(ts) else 0)


def row_sums_mod(row_sum: np.ndarray, mod: int) -> np.ndarray:
    """The exact row sums modulo ``mod`` (0: modulo 2^64, as int64)."""
    if mod == 0:
        if row_sum.dtype != object:
            return row_sum
        return np.array([[((int(x) + 2 ** 63) % 2 ** 64) - 2 ** 63 for x in r] for r in row_sum.tolist()],
                        dtype=np.int64).reshape(row_sum.shape)
    if row_sum.dtype != object:
        return np.mod(row_sum, mod)
    return np.array([[int(x) % mod for x in r] for r in row_sum.tolist()], dtype=np.int64).reshape(row_sum.shape)


# ---------------------------------------------------------------------------------------------
# several moduli
# ---------------------------------------------------------------------------------------------


def primes(count: int) -> list[int]:
    """The ``count`` largest primes below 2^31 (products of two residues fit in int64)."""
    return largest_primes(2 ** 31, count)


def primes_for(bound_log2: float) -> int:
    """How many primes, beside the modulus 2^64, represent every integer of absolute value <=
    2^bound_log2 (each prime is above 2^30.99; one bit for the sign)."""
    bits = max(bound_log2, 0.0) + 1.0 + 1e-6
    if bits <= 64:
        return 0
    return int(math.ceil((bits - 64) / 30.99))


def crt(residues: Sequence[np.ndarray], moduli: Sequence[int]) -> list[int]:
    """Signed integers from their residues: ``residues[0]`` int64 modulo 2^64, the others modulo the
    primes ``moduli`` (the symmetric representative of the product of all moduli)."""
    big = 1 << 64
    out = [int(x) % big for x in residues[0].tolist()]
    m = big
    for res, p in zip(residues[1:], moduli, strict=True):
        inv = pow(m % p, -1, p)
        out = [x + m * (((int(r) - x) * inv) % p) for x, r in zip(out, res.tolist(), strict=True)]
        m *= p
    half = m // 2
    return [x - m if x > half else x for x in out]


def time_scale(lengths: Sequence[Any]) -> int:
    """The least integer D making every window length and slide an integer multiple of 1/D... times D."""
    d = 1
    for x in lengths:
        d = math.lcm(d, Fraction(x).denominator)
    return d
