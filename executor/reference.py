"""Brute-force enumeration of every match: the oracle of every sequence and trend executor.

Semantics (sharon.md §1, hamlet.md §1.4/§2, gloria.md §1.2):

* A **match** (a sequence for a SEQ pattern, a *trend* for a Kleene pattern) is a sequence of events
  e1..ek with strictly increasing time stamps whose types spell a word of the pattern's language
  (skip-till-any-match: any events may lie between, every combination counts). ``Kleene(p)`` is one
  or more repetitions of ``p``; ``Or`` any one branch; ``And`` every item in any order (expanded to
  the SEQ of each permutation, strict time); ``Not(T)`` inside a SEQ: no T event (passing T's filters,
  in the same partition) strictly between its neighbours, or between the window start and the first
  event (leading NOT), or between the last event and the window end (trailing NOT).
* A match counts once as a sequence of events, however many ways the pattern can bind it.
* Every event passes the filters of the reference (type or variable) it is bound to; conditions
  between two references hold on every pair of events bound to them (``conditions="all"``) or only
  on adjacent events of the match (``conditions="adjacent"``, GRETA's edge predicates). A filter or
  condition with a missing value (None, NaN) on either side does not hold (cepopt.predicates).
* Every event of a match has the same values of the GROUP-BY and equivalence attributes (a missing
  value is a value of its own), i.e. matches live inside one partition of the stream.
* Windows: with SLIDE S, window k = [kS, kS+W) (k >= 0) and a match is in window k iff
  start >= kS and end < kS+W (sharon.md §1.5, hamlet.md §8.9). Without SLIDE there is one window,
  index 0, and a match needs end - start <= W (the model's "single window per match").
* Aggregates per (query, GROUP-BY group, window): COUNT(*) = number of matches; COUNT(E) = number of
  E-events summed over matches (with multiplicity); SUM(E.a) likewise; AVG = SUM / COUNT(E);
  MIN / MAX over every E-event of every match. Equivalence partitions of one group add up.

Use it for small inputs only: it walks every match (their number grows like 2^n for Kleene).

Public API:

* :func:`enumerate_trends` (alias :func:`enumerate_matches`): every match of one query, with its
  events, binding, group text and windows;
* :func:`reference_results`: the results table (:mod:`cepopt.executor.results`) of a workload.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.results import (
    AggAccumulator,
    format_group,
    group_attrs,
    partition_attrs,
    py_scalar,
    results_frame,
)
from cepopt.model import And, Kleene, Not, Or, Query, Seq, Type, Workload, is_flat_seq
from cepopt.predicates import compare

__all__ = ["Match", "enumerate_matches", "enumerate_trends", "events_as_records", "reference_results",
           "window_range"]

_MAX_AND = 6


@dataclass(frozen=True)
class Match:
    """One match (sequence or trend) of a query.

    ``events``: row positions (0-based, in the order given to the enumerator) of the matched events,
    in time order; ``leaves``: the pattern leaf (Type) each event is bound to; ``group``: the group
    text (:func:`~cepopt.executor.results.format_group`); ``partition``: the values of the GROUP-BY
    and equivalence attributes; ``windows``: the indices k of the windows the match lies in.
    """

    events: tuple[int, ...]
    leaves: tuple[Type, ...]
    group: str
    partition: tuple
    windows: tuple[int, ...]


# ---------------------------------------------------------------------------------------------
# Pattern -> position automaton (Glushkov construction) with NOT guards on its edges
# ---------------------------------------------------------------------------------------------

Guards = frozenset  # of Type leaves that must be absent


@dataclass
class _Frag:
    first: dict[int, Guards]
    last: dict[int, Guards]
    follow: dict[int, dict[int, list[Guards]]]


class _Automaton:
    def __init__(self, pattern):
        self.leaves: list[Type] = []
        frag = self._build(pattern)
        self.first = frag.first
        self.last = frag.last
        self.follow = frag.follow

    def _add_edge(self, follow, p, q, g) -> None:
        alts = follow.setdefault(p, {}).setdefault(q, [])
        if g not in alts:
            alts.append(g)

    def _copy_edges(self, follow, edges) -> None:
        for src, dsts in edges.items():
            for dst, alts in dsts.items():
                for g in alts:
                    self._add_edge(follow, src, dst, g)

    def _build(self, p) -> _Frag:
        if isinstance(p, Type):
            pos = len(self.leaves)
            self.leaves.append(p)
            return _Frag({pos: frozenset()}, {pos: frozenset()}, {})
        if isinstance(p, Seq):
            return self._build_seq(p)
        if isinstance(p, Or):
            out = _Frag({}, {}, {})
            for item in p.items:
                frag = self._build(item)
                out.first.update(frag.first)
                out.last.update(frag.last)
                self._copy_edges(out.follow, frag.follow)
            return out
        if isinstance(p, And):
            if len(p.items) > _MAX_AND:
                raise CepoptError(f"the reference expands AND into permutations: at most {_MAX_AND} items")
            return self._build(Or(tuple(Seq(perm) for perm in itertools.permutations(p.items))))
        if isinstance(p, Kleene):
            frag = self._build(p.inner)
            self._link(frag.follow, frag.last, frag.first, frozenset())
            return frag
        if isinstance(p, Not):
            raise CepoptError("NOT is supported only inside a SEQ")
        raise CepoptError(f"not a pattern: {p!r}")

    def _link(self, follow, last, first, guard: frozenset) -> None:
        """Edges from every last position to every first one, guarded by both sides' and ``guard``."""
        for a, ga in last.items():
            for b, gb in first.items():
                self._add_edge(follow, a, b, ga | gb | guard)

    def _build_seq(self, p: Seq) -> _Frag:
        """SEQ: concatenate the items; the negated types between two items guard the edges between them
        (before the first item: its first positions; after the last: its last positions)."""
        cur: _Frag | None = None
        pending: set = set()
        for item in p.items:
            if isinstance(item, Not):
                if not isinstance(item.inner, Type):
                    raise CepoptError("the reference supports NOT of a single event type only")
                pending.add(item.inner)
                continue
            frag = self._build(item)
            if cur is None:
                cur = _Frag({q: g | pending for q, g in frag.first.items()}, frag.last, frag.follow)
            else:
                self._copy_edges(cur.follow, frag.follow)
                self._link(cur.follow, cur.last, frag.first, frozenset(pending))
                cur = _Frag(cur.first, frag.last, cur.follow)
            pending = set()
        if cur is None:
            raise CepoptError("a SEQ needs at least one event that is not negated")
        if pending:
            cur = _Frag(cur.first, {q: g | pending for q, g in cur.last.items()}, cur.follow)
        return cur


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------


def events_as_records(events: pd.DataFrame | Iterable[dict]) -> list[dict]:
    """Events as a list of dicts with plain Python values (None for missing), in the given order."""
    if isinstance(events, pd.DataFrame):
        records = events.to_dict("records")
    else:
        records = [dict(e) for e in events]
    out = []
    for i, rec in enumerate(records):
        rec = {k: py_scalar(v) for k, v in rec.items()}
        if rec.get("ts") is None or rec.get("type") is None:
            raise CepoptError(f"event {i} has no ts or no type: {rec!r}")
        rec["type"] = str(rec["type"])
        out.append(rec)
    return out


def window_range(first_ts: float, last_ts: float, length: float, slide: float | None) -> range:
    """Indices k of the windows [kS, kS+W) holding both time stamps (range(0, 1) when no slide)."""
    if slide is None:
        return range(0, 1) if last_ts - first_ts <= length else range(0)
    s, w = Fraction(slide), Fraction(length)
    lo = max(0, math.floor((Fraction(last_ts) - w) / s) + 1)
    hi = math.floor(Fraction(first_ts) / s)
    return range(lo, hi + 1)


# ---------------------------------------------------------------------------------------------
# Enumeration
# ---------------------------------------------------------------------------------------------


class _QueryMatcher:
    def __init__(self, query: Query, conditions: str):
        if conditions not in ("all", "adjacent"):
            raise CepoptError(f"conditions must be 'all' or 'adjacent', got {conditions!r}")
        self.query = query
        self.auto = _Automaton(query.pattern)
        self.adjacent = conditions == "adjacent"
        leaves = self.auto.leaves
        self.filters = [[f for f in query.filters if f.ref in (leaf.var, leaf.name)] for leaf in leaves]
        self.conds = query.conditions
        # conditions relevant to (leaf i, leaf j) with i bound before j: (cond, i_is_left)
        self.types = [leaf.name for leaf in leaves]
        names = [leaf.name for leaf in leaves]
        self.dedupe = not is_flat_seq(query.pattern) and len(set(names)) < len(names)
        self.window = query.window

    def passes(self, pos: int, ev: dict) -> bool:
        return all(compare(f.op, ev.get(f.attr), f.value) for f in self.filters[pos])

    def guard_filters_pass(self, leaf: Type, ev: dict) -> bool:
        return all(compare(f.op, ev.get(f.attr), f.value) for f in self.query.filters
                   if f.ref in (leaf.var, leaf.name))

    def cond_ok(self, pa: int, ea: dict, pb: int, eb: dict) -> bool:
        """Conditions between an earlier event ea (leaf pa) and a later event eb (leaf pb)."""
        la, lb = self.auto.leaves[pa], self.auto.leaves[pb]
        for c in self.conds:
            lref, rref = c.left.ref, c.right.ref
            if lref in (la.var, la.name) and rref in (lb.var, lb.name):
                if not compare(c.op, ea.get(c.left.attr), eb.get(c.right.attr)):
                    return False
            if lref in (lb.var, lb.name) and rref in (la.var, la.name):
                if not compare(c.op, eb.get(c.left.attr), ea.get(c.right.attr)):
                    return False
        return True


def _partitions(records: list[dict], attrs: Sequence[str]) -> dict[tuple, list[int]]:
    parts: dict[tuple, list[int]] = {}
    for i, rec in enumerate(records):
        key = tuple(_norm_key(rec.get(a)) for a in attrs)
        parts.setdefault(key, []).append(i)
    return parts


def _norm_key(v: Any) -> Any:
    # 3 and 3.0 are one partition, as they are one group text
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def enumerate_trends(query: Query, events: pd.DataFrame | Iterable[dict], *,
                     conditions: str = "all") -> Iterator[Match]:
    """Every match (trend or sequence) of ``query`` in ``events``, by brute force.

    ``events``: a DataFrame or dicts with ``ts``, ``type`` and attributes, in any order (ties keep
    the given order; events with equal ``ts`` never follow each other in a match). Yields
    :class:`Match` objects whose ``events`` are row positions of the input; a match is yielded once
    (with the first binding found) and carries every window it lies in (no window: not yielded).
    See the module docstring for the semantics. For small inputs only.
    """
    records = events_as_records(events)
    m = _QueryMatcher(query, conditions)
    attrs = partition_attrs(query)
    gattrs = group_attrs(query)
    gidx = [attrs.index(a) for a in gattrs]
    for key, rows in _partitions(records, attrs).items():
        group = format_group(gattrs, [key[i] for i in gidx])
        yield from _enumerate_partition(m, records, rows, key, group)


def _enumerate_partition(m: _QueryMatcher, records: list[dict], rows: list[int], key: tuple,
                         group: str) -> Iterator[Match]:
    """Every match inside one partition (rows: its record positions)."""
    yield from _Partition(m, records, rows, key, group).matches()


class _Partition:
    """Depth-first enumeration of the matches of one partition: paths of (event, automaton position)
    extended in time order, each checked against its windows and the NOT guards between its events."""

    def __init__(self, m: _QueryMatcher, records: list[dict], rows: list[int], key: tuple, group: str):
        self.m, self.key, self.group = m, key, group
        self.length, self.slide = m.window.length, m.window.slide
        self.rows = sorted(rows, key=lambda i: records[i]["ts"])
        self.ts = [records[i]["ts"] for i in self.rows]
        self.evs = [records[i] for i in self.rows]
        self.guard_ts: dict[Type, list] = {}  # time stamps of the events each NOT guard forbids, sorted
        self.seen: set = set()

    def span_ok(self, d) -> bool:
        return d <= self.length if self.slide is None else d < self.length

    def forbidden(self, leaf: Type) -> list:
        if leaf not in self.guard_ts:
            self.guard_ts[leaf] = [t for t, e in zip(self.ts, self.evs, strict=True)
                                   if e["type"] == leaf.name and self.m.guard_filters_pass(leaf, e)]
        return self.guard_ts[leaf]

    def clear(self, guards: Guards, lo, hi, lo_incl: bool = False, hi_incl: bool = False) -> bool:
        """No forbidden event strictly between lo and hi (bounds included when asked)."""
        for leaf in guards:
            arr = self.forbidden(leaf)
            i = bisect.bisect_left(arr, lo) if lo_incl else bisect.bisect_right(arr, lo)
            j = bisect.bisect_right(arr, hi) if hi_incl else bisect.bisect_left(arr, hi)
            if j > i:
                return False
        return True

    def windows_of(self, path_idx, path_pos) -> tuple[int, ...]:
        auto, length, slide = self.m.auto, self.length, self.slide
        t0, t1 = self.ts[path_idx[0]], self.ts[path_idx[-1]]
        sg, eg = auto.first[path_pos[0]], auto.last[path_pos[-1]]
        out = []
        for k in window_range(t0, t1, length, slide):
            if slide is None:
                ws, we, we_incl = t1 - length, t0 + length, True
            else:
                ws, we, we_incl = k * slide, k * slide + length, False
            if sg and not self.clear(sg, ws, t0, lo_incl=True):
                continue
            if eg and not self.clear(eg, t1, we, hi_incl=we_incl):
                continue
            out.append(k)
        return tuple(out)

    def emit(self, path_idx, path_pos) -> Match | None:
        wins = self.windows_of(path_idx, path_pos)
        if self.m.dedupe:
            ev_key = tuple(path_idx)
            wins = tuple(k for k in wins if (ev_key, k) not in self.seen)
            self.seen.update((ev_key, k) for k in wins)
        if wins:
            return Match(tuple(self.rows[i] for i in path_idx), tuple(self.m.auto.leaves[p] for p in path_pos),
                         self.group, self.key, wins)
        return None

    def joins(self, path_idx: list, path_pos: list, j: int, q: int, alts) -> bool:
        """Can event ``j`` at position ``q`` extend the path (type, filters, NOT guards, conditions)?"""
        m, ej, last_i, last_p = self.m, self.evs[j], path_idx[-1], path_pos[-1]
        if m.types[q] != ej["type"] or not m.passes(q, ej):
            return False
        if not any(not g or self.clear(g, self.ts[last_i], self.ts[j]) for g in alts):
            return False
        if not m.conds:
            return True
        if m.adjacent:
            return m.cond_ok(last_p, self.evs[last_i], q, ej)
        return all(m.cond_ok(pp, self.evs[pi], q, ej) for pi, pp in zip(path_idx, path_pos, strict=True))

    def extend(self, path_idx: list, path_pos: list) -> Iterator[Match]:
        last_i, last_p = path_idx[-1], path_pos[-1]
        if last_p in self.m.auto.last:
            match = self.emit(path_idx, path_pos)
            if match is not None:
                yield match
        nexts = self.m.auto.follow.get(last_p)
        if not nexts:
            return
        t_first, t_last = self.ts[path_idx[0]], self.ts[last_i]
        for j in range(last_i + 1, len(self.ts)):
            tj = self.ts[j]
            if tj <= t_last:
                continue
            if not self.span_ok(tj - t_first):
                break
            for q, alts in nexts.items():
                if self.joins(path_idx, path_pos, j, q, alts):
                    path_idx.append(j)
                    path_pos.append(q)
                    yield from self.extend(path_idx, path_pos)
                    path_idx.pop()
                    path_pos.pop()

    def matches(self) -> Iterator[Match]:
        for i, ei in enumerate(self.evs):
            for p in self.m.auto.first:
                if self.m.types[p] == ei["type"] and self.m.passes(p, ei):
                    yield from self.extend([i], [p])


enumerate_matches = enumerate_trends


def _match_targets(match: Match, records: list[dict], targets) -> dict:
    """Per (ref, attr): (count of ref-events, sum of attr, min, max) of one match."""
    out = {}
    for ref, attr in targets:
        c, s, lo, hi = 0, 0, None, None
        for row, leaf in zip(match.events, match.leaves, strict=True):
            if ref not in (leaf.var, leaf.name):
                continue
            c += 1
            if attr is not None:
                v = records[row].get(attr)
                if v is None:
                    continue
                s += v
                lo = v if lo is None or v < lo else lo
                hi = v if hi is None or v > hi else hi
        out[(ref, attr)] = (c, s, lo, hi)
    return out


def reference_results(workload: Workload | Query | Iterable[Query], events_df: pd.DataFrame | Iterable[dict],
                      *, conditions: str = "all") -> pd.DataFrame:
    """The results table of every query of ``workload`` over ``events_df``, by brute force.

    Returns the DataFrame (query, group, window, aggregate, value) of
    :mod:`cepopt.executor.results`: one row per query, GROUP-BY group, window and aggregate with at
    least one match; counts are exact Python ints.
    """
    if isinstance(workload, Query):
        queries: Sequence[Query] = Workload((workload,)).queries
    elif isinstance(workload, Workload):
        queries = workload.queries
    else:
        queries = Workload(tuple(workload)).queries
    records = events_as_records(events_df)
    rows = []
    for query in queries:
        acc = AggAccumulator(query)
        for match in enumerate_trends(query, records, conditions=conditions):
            per = _match_targets(match, records, acc.targets)
            for k in match.windows:
                acc.add(match.group, k, 1, per)
        rows.extend(acc.rows())
    return results_frame(rows)
