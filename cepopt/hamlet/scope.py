"""The scopes of a sharing class as arrays: what the optimizer (bursts of an embedded stream) and the
trend kernels (cepopt.executor) both read (hamlet.md §1.8, sharon.md §1.5).

A *scope* is one partition (a value of the class's GROUP-BY and equivalence attributes) and one window
k = [kS, kS + W). :func:`class_layout` lays out the events of a class once for every scope: one row per
(event, window holding it), rows sorted by scope and then by time (stable: events of one time stamp
keep their order in the stream), with per query the mask of rows it matches (type, local filters,
and, for a query of a shorter window in a class of mixed lengths, its own window end). Everything is
vectorized: no Python loop per event.

Edge predicates compare attribute values of two events; :func:`edge_codes` turns the two columns of a
predicate into joint rank codes so that the comparison is a comparison of integers
(:func:`codes_compare`), with cepopt.predicates' semantics: never true on a missing value; between
values of different kinds (text against a number) ``=`` is false, ``!=`` true, an ordering false.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["OP_CODES", "Layout", "before_window_end", "class_layout", "codes_compare", "edge_codes", "matched_mask",
           "norm_key", "pane_size", "type_codes", "window_bounds"]

#: comparison operators as codes (the kernels compare integer codes)
OP_CODES = {"=": 0, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}


def norm_key(v: Any) -> Any:
    """A partition value as the scope key shows it: NaN is None, an integral float an int."""
    if v is None:
        return None
    if hasattr(v, "item") and not isinstance(v, str | bytes):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if v.is_integer():
            return int(v)
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    return v


def matched_mask(cq, frame, tcode: np.ndarray | None = None, names: Sequence[str] = ()) -> np.ndarray:
    """Events of ``frame`` matched by ``cq``: type of the pattern and every local filter holds (not on
    a missing value, cepopt.predicates). ``tcode`` / ``names``: the frame's type codes, if known."""
    from cepopt.predicates import compare_arrays

    if tcode is None:
        names = tuple(sorted(set(frame["type"].astype(str))))
        tcode = type_codes(frame, names)
    table = np.array([t in cq.types for t in names] + [False], dtype=bool)
    mask = table[tcode]
    for t, attr, op, value in cq.filters:
        if t not in names:
            continue
        on_t = tcode == names.index(t)
        if attr not in frame.columns:
            mask &= ~on_t
            continue
        mask &= ~on_t | compare_arrays(op, frame[attr], value)
    return mask


def type_codes(frame, names: Sequence[str]) -> np.ndarray:
    """Per row the index of its type in ``names`` (len(names) for any other type). The column is
    factorized once and its few distinct values looked up, which is cheaper per block than a
    Categorical over ``names``."""
    import pandas as pd

    col = frame["type"]
    if not (col.dtype == object or pd.api.types.is_string_dtype(col)):
        col = col.astype(str)
    codes, uniq = pd.factorize(col)
    index = {name: i for i, name in enumerate(names)}
    other = len(names)
    # a type that is not text (an int, a missing value in an object column) is read as its text
    text = col.dtype == object
    table = np.array([index.get(u, other) if isinstance(u, str) else (index.get(str(u), other) if text else other)
                      for u in uniq] + [other], dtype=np.int64)
    out = table[codes]
    if text and len(codes) and codes.min() < 0:
        missing = np.flatnonzero(codes < 0)
        out[missing] = [index.get(str(v), other) for v in col.iloc[missing]]
    return out


def pane_size(lengths_and_slides: Sequence[float]) -> float:
    """gcd of all window sizes and slides (hamlet.md §1.8), of decimals too: gcd(1.5, 1) = 0.5. Each
    value is read as the decimal it prints as, so 0.1 is 1/10, not the binary float's fraction."""
    fracs = [Fraction(repr(float(v))) for v in lengths_and_slides]
    den = math.lcm(*(f.denominator for f in fracs))
    g = Fraction(math.gcd(*(int(f * den) for f in fracs)), den)
    return int(g) if g.denominator == 1 else float(g)


def _exact_times(ts: np.ndarray, *values: float) -> tuple[bool, int, list[int]]:
    """(integral, d, the values times d as ints): d the least common denominator of ``values`` (their
    exact binary fractions); integral when d is 1 and the time stamps are integers (int64 arithmetic)."""
    fracs = [Fraction(v) for v in values]
    d = math.lcm(*(f.denominator for f in fracs))
    return d == 1 and np.issubdtype(ts.dtype, np.integer), d, [int(f * d) for f in fracs]


def window_bounds(ts: np.ndarray, length: float, slide: float) -> tuple[np.ndarray, np.ndarray]:
    """First and last window index k with kS <= t < kS + W (sharon.md §1.5), vectorized, exact: int64
    arithmetic for integral time stamps and windows, else Python fractions (a fractional window or
    float time stamps); no time stamp goes through a float."""
    ts = np.asarray(ts)
    integral, d, (w, s) = _exact_times(ts, length, slide)
    if integral:
        lo = np.maximum(0, (ts - w) // s + 1)
        hi = ts // s
        return lo.astype(np.int64), hi.astype(np.int64)
    scaled = [Fraction(t) * d for t in ts.tolist()]
    lo = np.array([max(0, (t - w) // s + 1) for t in scaled], dtype=np.int64)
    return lo, np.array([t // s for t in scaled], dtype=np.int64)


def before_window_end(ts: np.ndarray, window: np.ndarray, slide: float, length: float) -> np.ndarray:
    """``ts < window * slide + length`` element by element, exactly (as :func:`window_bounds`)."""
    ts, window = np.asarray(ts), np.asarray(window, dtype=np.int64)
    integral, d, (s, w) = _exact_times(ts, slide, length)
    if integral:
        return ts < window * s + w
    return np.array([Fraction(t) * d < k * s + w for t, k in zip(ts.tolist(), window.tolist(), strict=True)],
                    dtype=bool)


@dataclass
class Layout:
    """One class's events laid out per scope (module docstring).

    ``frame``: the class's events (types of the class), index 0..m-1, in stream order; ``src[r]``:
    the frame row of layout row r; ``ts``, ``tcode`` (index into ``type_names``): per row;
    ``scope_start``: rows of scope j are ``scope_start[j]:scope_start[j+1]``; ``scope_key``: its
    partition key (a tuple of :func:`norm_key` values), ``scope_window``: its window k; ``masks[i]``:
    rows matched by ``cls.queries[i]``; ``tie[r]``: the first row of r's time stamp in its scope, so
    that the rows before r's tie group are ``scope_start[j]:tie[r]``.
    """

    cls: Any
    frame: Any
    src: np.ndarray
    ts: np.ndarray
    tcode: np.ndarray
    type_names: tuple[str, ...]
    scope_start: np.ndarray
    scope_key: list
    scope_window: np.ndarray
    masks: np.ndarray
    tie: np.ndarray
    _codes: dict = field(default_factory=dict, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.src)

    @property
    def scopes(self) -> int:
        return len(self.scope_window)

    def type_code(self, name: str) -> int:
        """The code of event type ``name`` (-1 when the class has no such type)."""
        return self.type_names.index(name) if name in self.type_names else -1

    def scope_of(self) -> np.ndarray:
        """Per row, its scope index (computed once: the bursts, Eq. 7's n and the kernel's buffers
        all read it; do not modify)."""
        got = self._cache.get("scope_of")
        if got is None:
            got = self._cache["scope_of"] = np.repeat(np.arange(self.scopes), np.diff(self.scope_start))
        return got

    def matched_before(self) -> np.ndarray:
        """``[r]``: rows of r's scope before row r matched by some query of the class (Eq. 7's n
        counts these, plus the burst). Computed once; do not modify."""
        got = self._cache.get("matched_before")
        if got is None:
            anyq = self.masks.any(axis=0) if len(self.masks) else np.zeros(self.n, dtype=bool)
            cum = np.r_[0, np.cumsum(anyq)]
            got = cum[:-1] - cum[self.scope_start[:-1]][self.scope_of()] if self.n else np.zeros(0, dtype=np.int64)
            self._cache["matched_before"] = got
        return got

    def edge_codes(self, left: str, right: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:func:`edge_codes` of the frame's columns ``left`` and ``right``, per row (cached)."""
        got = self._codes.get((left, right))
        if got is None:
            got = self._codes[(left, right)] = tuple(c[self.src] for c in edge_codes(self.frame, left, right))
        return got

    def column(self, name: str) -> np.ndarray | None:
        """The frame's column ``name`` per row (None when the stream has no such column)."""
        if name not in self.frame.columns:
            return None
        return self.frame[name].to_numpy()[self.src]


def _key_codes(frame, attrs: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
    """Per frame row a key id, and the key tuples of the ids (sorted: numbers, then text and null)."""
    import pandas as pd

    m = len(frame)
    if not attrs:
        return np.zeros(m, dtype=np.int64), [()]
    codes, values = [], []
    for a in attrs:
        if a not in frame.columns:
            codes.append(np.zeros(m, dtype=np.int64))
            values.append([None])
            continue
        c, uniq = pd.factorize(frame[a], use_na_sentinel=True)
        c = np.where(c < 0, len(uniq), c).astype(np.int64)
        codes.append(c)
        values.append([norm_key(v) for v in uniq] + [None])
    radix = [len(v) for v in values]
    if math.prod(radix) < 2 ** 62:
        # one int64 code per row (mixed radix), its distinct values by hashing: no sort of the rows
        combined = np.zeros(m, dtype=np.int64)
        for c, r in zip(codes, radix, strict=True):
            combined = combined * r + c
        inverse, distinct = pd.factorize(combined)
        uniq_rows = np.zeros((len(distinct), len(attrs)), dtype=np.int64)
        rest = np.asarray(distinct, dtype=np.int64)
        for j in range(len(attrs) - 1, -1, -1):
            uniq_rows[:, j] = rest % radix[j]
            rest = rest // radix[j]
    else:
        uniq_rows, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    keys = [tuple(values[j][int(r[j])] for j in range(len(attrs))) for r in uniq_rows]
    # distinct codes may name one key (1 and 1.0 in an object column): merge them
    order = sorted(set(keys), key=_key_order)
    rank = {k: i for i, k in enumerate(order)}
    remap = np.array([rank[k] for k in keys], dtype=np.int64)
    return remap[inverse.reshape(-1)], order


def _key_order(key: tuple) -> tuple:
    return tuple((0, v, "") if isinstance(v, int | float) and not isinstance(v, bool) else
                 (1, 0, "__null__" if v is None else str(v)) for v in key)


def _window_runs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, window) of every (event, window holding it), by window then row, for one partition
    key in time order: ``lo`` and ``hi`` (each row's first and last window) never decrease, so the
    rows of window k are one run, from the first row with hi >= k to the last with lo <= k, and
    the rows need no sort."""
    if not len(lo):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    inside = lo <= hi
    if not inside.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ks = np.arange(int(lo[inside].min()), int(hi[inside].max()) + 1, dtype=np.int64)
    first = np.searchsorted(hi, ks, side="left")
    # rows with lo > hi (no window) lie between runs and are skipped: lo is non-decreasing, so
    # the rows with lo <= k are a prefix
    end = np.searchsorted(lo, ks, side="right")
    count = np.maximum(end - first, 0)
    total = int(count.sum())
    offset = np.cumsum(count) - count
    src = np.repeat(first - offset, count) + np.arange(total, dtype=np.int64)
    return src.astype(np.int64), np.repeat(ks, count)


def _scope_rows(lo, hi, key_id, ts_src) -> tuple:
    """(row, window, key, scope id) of every (event, window holding it), by scope, then time, then
    stream order: the general case of :func:`_window_runs` (several keys, or events out of order)."""
    reps = np.maximum(hi - lo + 1, 0)
    src = np.repeat(np.arange(len(lo), dtype=np.int64), reps)
    window = lo[src] + (np.arange(len(src)) - np.repeat(np.cumsum(reps) - reps, reps))
    rkey = key_id[src]
    scope_id = np.zeros(len(src), dtype=np.int64)
    if len(src):
        scope_id = rkey * (int(window.max() - window.min()) + 1) + (window - window.min())
        if np.all(ts_src[1:] >= ts_src[:-1]):  # a time-ordered stream: order the rows by scope alone
            order = None if np.all(scope_id[1:] >= scope_id[:-1]) else np.argsort(scope_id, kind="stable")
        else:
            order = np.lexsort((src, ts_src[src], scope_id))
        if order is not None:
            src, window, rkey, scope_id = src[order], window[order], rkey[order], scope_id[order]
    return src, window, rkey, scope_id


def class_layout(cls, events, windows: tuple[int, float] = (0, math.inf)) -> Layout:
    """The layout of class ``cls`` over ``events`` (a pandas DataFrame with ``ts`` and ``type``, any
    row order taken as stream order), restricted to the windows k with lo <= k < hi."""
    import pandas as pd

    names = tuple(sorted(cls.types))
    codes_all = type_codes(events, names)
    keep = codes_all < len(names)
    frame = events.reset_index(drop=True) if keep.all() else events.loc[keep].reset_index(drop=True)
    tcode_src = codes_all[keep]
    ts_src = frame["ts"].to_numpy() if len(frame) else np.zeros(0, dtype=np.int64)
    if ts_src.dtype == object:
        ts_src = pd.to_numeric(frame["ts"]).to_numpy()
    lo, hi = window_bounds(ts_src, cls.length, cls.slide)
    lo = np.maximum(lo, windows[0])
    if windows[1] != math.inf:
        hi = np.minimum(hi, int(windows[1]) - 1)
    key_id, keys = _key_codes(frame, cls.partition)
    if len(keys) == 1 and np.all(ts_src[1:] >= ts_src[:-1]):
        src, window = _window_runs(lo, hi)
        rkey = np.zeros(len(src), dtype=np.int64)
        scope_id = window
    else:
        src, window, rkey, scope_id = _scope_rows(lo, hi, key_id, ts_src)
    n = len(src)
    ts = ts_src[src]
    new_scope = np.ones(n, dtype=bool)
    new_scope[1:] = scope_id[1:] != scope_id[:-1]
    starts = np.flatnonzero(new_scope)
    new_tie = new_scope.copy()
    new_tie[1:] |= ts[1:] != ts[:-1]
    tie = np.maximum.accumulate(np.where(new_tie, np.arange(n), 0)) if n else np.zeros(0, dtype=np.int64)
    masks = np.zeros((len(cls.queries), n), dtype=bool)
    for i, cq in enumerate(cls.queries):
        m = matched_mask(cq, frame, tcode_src, names)[src]
        if cq.length < cls.length:  # a shorter window of the class ends earlier (Gloria, mixed lengths)
            m &= before_window_end(ts, window, cls.slide, cq.length)
        masks[i] = m
    return Layout(cls, frame, src, ts, tcode_src[src], names, np.r_[starts, n].astype(np.int64),
                  [keys[k] for k in rkey[starts]], window[starts].astype(np.int64), masks, tie.astype(np.int64))


# ---------------------------------------------------------------------------------------------
# Edge predicates as integer comparisons
# ---------------------------------------------------------------------------------------------


def _kind(v: Any) -> int:
    if isinstance(v, bool | int | float | np.integer | np.floating):
        return 0
    return 1 if isinstance(v, str) else 2


def edge_codes(frame, left: str, right: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Joint codes of columns ``left`` and ``right`` of ``frame``: (left rank, left kind, right rank,
    right kind) per frame row; rank -1 for a missing value. Equal values get equal ranks and ranks
    keep the order of values of one kind (numbers: 0, text: 1, anything else: 2)."""
    import pandas as pd

    m = len(frame)
    cols = []
    for name in (left, right):
        if name not in frame.columns:
            cols.append(np.full(m, None, dtype=object))
        else:
            cols.append(frame[name].to_numpy())
    a, b = cols
    if a.dtype != object and b.dtype != object and a.dtype.kind in "iuf" and b.dtype.kind in "iuf":
        both = np.concatenate([a, b]).astype(np.float64 if "f" in (a.dtype.kind, b.dtype.kind) else np.int64)
        miss = np.isnan(both) if both.dtype.kind == "f" else np.zeros(len(both), dtype=bool)
        uniq, inv = np.unique(both[~miss], return_inverse=True)
        rank = np.full(len(both), -1, dtype=np.int64)
        rank[~miss] = inv
        kind = np.zeros(len(both), dtype=np.int64)
        return rank[:m], kind[:m], rank[m:], kind[m:]
    vals = list(a) + list(b)
    miss = np.asarray(pd.isna(np.array(vals, dtype=object)), dtype=bool) if vals else np.zeros(0, dtype=bool)
    kinds = np.array([_kind(v) for v in vals], dtype=np.int64)
    rank = np.full(len(vals), -1, dtype=np.int64)
    for k in (0, 1, 2):
        idx = [i for i in range(len(vals)) if not miss[i] and kinds[i] == k]
        if not idx:
            continue
        present = [vals[i] for i in idx]
        try:
            distinct = sorted(set(present))
        except TypeError:  # values without an order among themselves: only = and != are meaningful
            distinct = sorted(set(present), key=repr)
        pos = {v: j for j, v in enumerate(distinct)}
        rank[idx] = [pos[v] for v in present]
    return rank[:m], kinds[:m], rank[m:], kinds[m:]


def codes_compare(op: int, lr, lk, rr, rk) -> np.ndarray:
    """``left op right`` on codes (:func:`edge_codes`), element by element with broadcasting."""
    lr, lk, rr, rk = (np.asarray(x) for x in (lr, lk, rr, rk))
    present = (lr >= 0) & (rr >= 0)
    same = lk == rk
    if op == 0:
        ok = same & (lr == rr)
    elif op == 1:
        ok = ~same | (lr != rr)
    elif op == 2:
        ok = same & (lr < rr)
    elif op == 3:
        ok = same & (lr <= rr)
    elif op == 4:
        ok = same & (lr > rr)
    else:
        ok = same & (lr >= rr)
    return ok & present
