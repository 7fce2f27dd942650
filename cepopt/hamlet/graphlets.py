"""Graphlets and bursts (hamlet.md §1.9, Def. 3.6, Def. 4.1).

A *burst* B_E of a sharing group (Kleene type E, candidates Q_E, T = the types of Q_E's patterns) is a
maximal run of type-E events inside one pane during which no event of another type of T is matched by
a query of Q_E. The optimizer decides once per complete burst (§4.1). A *graphlet* is the same run
without the pane cut: a burst that starts right after a pane boundary, with no other type of T in
between, may extend the previous shared graphlet (``continues``).

Events with equal time stamps are never predecessors of each other (§8.10). A tie group whose
relevant events are all of type E belongs to a burst; a tie group that mixes E with another type of
T closes the burst and its E events are processed without sharing (they cannot share one graphlet
snapshot). This is the [DECISION] that keeps the snapshot rule of §3.7 exact under ties.

Each event of a burst carries a *signature class* per candidate query (§4.3 step 1): events whose
candidates all agree (class 0 everywhere) need no event-level snapshot; an event with two or more
distinct classes among the shared queries needs one (Def. 3.11). Class 0 is the majority. The
signatures (:func:`signatures`) are computed exactly from the stream (§8.14), the same way for the
optimizer (:func:`stream_bursts`) and the executor (:func:`scope_bursts` serves both), so that both
price a burst alike and the executor creates exactly the event-level snapshots it priced.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cepopt.errors import CepoptError

__all__ = ["BURST_KEYS", "MAX_EVENTS", "N_RULES", "Burst", "ScopeBursts", "Segment", "burst_from_json",
           "burst_to_json", "classes_of", "scope_bursts", "scope_label", "segment", "signatures", "stream_bursts"]

#: what n of Eq. 7 counts (hamlet.md §8.7): "graph", the events in the graph at decision time
#: including the burst (the paper's examples: 7, 11, 15; the default); "before", the events before
#: the burst's first event (the authors' code)
N_RULES = ("graph", "before")


@dataclass(frozen=True)
class Burst:
    """One complete burst as the cost model sees it (hamlet.md §4.1).

    ``type``: E; ``queries``: the candidates Q_E; ``b``: events in the burst; ``n``: events in the
    graph at decision time including the burst (§8.7); ``classes``: per burst event, the signature
    class of each candidate (empty = every event uniform); ``continues``: the previous burst of this
    scope ended only at a pane boundary, so its shared graphlet is still active; ``scope``: the
    (class, partition, window) the burst lives in (state does not carry across scopes); ``n_rule``:
    which n Eq. 7 prices (:data:`N_RULES`, :attr:`n_eq7`).
    """

    type: str
    queries: tuple[str, ...]
    b: int
    n: int
    classes: tuple[tuple[int, ...], ...] = ()
    continues: bool = False
    scope: str = ""
    n_rule: str = "graph"

    @property
    def n_eq7(self) -> int:
        """n as Eq. 7 prices it under ``n_rule``."""
        return self.n if self.n_rule == "graph" else self.n - self.b

    def __post_init__(self) -> None:
        if self.n_rule not in N_RULES:
            raise CepoptError(f"eq7_n: expected one of {', '.join(N_RULES)}, got {self.n_rule!r}")
        if self.b < 1 or self.n < self.b:
            raise CepoptError(f"burst of {self.type}: need 1 <= b <= n, got b={self.b}, n={self.n}")
        if len(self.queries) < 2:
            raise CepoptError(f"burst of {self.type}: a sharable burst needs at least two queries")
        if len(set(self.queries)) != len(self.queries):
            raise CepoptError(f"burst of {self.type}: a query is listed twice in {', '.join(self.queries)}")
        if self.classes and (len(self.classes) != self.b
                             or any(len(c) != len(self.queries) for c in self.classes)):
            raise CepoptError(f"burst of {self.type}: classes must give one class per query for each of "
                              f"the {self.b} events")

    def snapshot_events(self, queries: Iterable[str]) -> int:
        """Burst events that need an event-level snapshot when ``queries`` share it (Def. 3.11)."""
        idx = [self.queries.index(q) for q in queries]
        return sum(1 for cls in self.classes if len({cls[i] for i in idx}) > 1)

    def snapshot_queries(self) -> tuple[str, ...]:
        """The queries that introduce snapshots: off the majority class for some event (§4.3, M)."""
        out = [q for i, q in enumerate(self.queries) if any(cls[i] != 0 for cls in self.classes)]
        return tuple(out)


#: the keys of a burst's JSON form, the first four required
BURST_KEYS = ("type", "queries", "b", "n", "classes", "continues", "scope")
#: the largest b and n read from JSON: beyond 2^53 counts are not exact as floats (the Eq. 7 costs)
MAX_EVENTS = 2 ** 53


def burst_to_json(burst: Burst) -> dict:
    out: dict = {"type": burst.type, "queries": list(burst.queries), "b": burst.b, "n": burst.n}
    if burst.classes:
        out["classes"] = [list(c) for c in burst.classes]
    if burst.continues:
        out["continues"] = True
    if burst.scope:
        out["scope"] = burst.scope
    return out


def burst_from_json(data: Mapping, where: str = "burst", names: set[str] | None = None) -> Burst:
    """A Burst from its JSON form (the keys of :func:`burst_to_json`), strictly typed: a count given
    as a float, a bool or text is an error, not truncated; errors name ``where``."""
    if not isinstance(data, Mapping):
        raise CepoptError(f"{where}: expected an object")
    unknown = sorted(set(data) - set(BURST_KEYS))
    if unknown:
        raise CepoptError(f"{where}.{unknown[0]}: unknown burst key (known: {', '.join(BURST_KEYS)})")
    missing = [key for key in BURST_KEYS[:4] if key not in data]
    if missing:
        raise CepoptError(f"{where}: missing {missing[0]!r} (a burst needs type, queries, b, n)")
    queries, classes = data["queries"], data.get("classes", [])
    _expect(isinstance(data["type"], str) and data["type"] != "", f"{where}.type", "an event type", data["type"])
    _expect(isinstance(queries, list) and all(isinstance(q, str) for q in queries), f"{where}.queries",
            "a list of query names", queries)
    if names is not None:
        unknown = [q for q in queries if q not in names]
        if unknown:
            raise CepoptError(f"{where}.queries: unknown query {unknown[0]!r}")
    for key in ("b", "n"):
        _expect(_is_int(data[key]) and 1 <= data[key] <= MAX_EVENTS, f"{where}.{key}",
                "an integer in 1..2^53", data[key])
    _expect(isinstance(data.get("continues", False), bool), f"{where}.continues", "true or false",
            data.get("continues"))
    _expect(isinstance(data.get("scope", ""), str), f"{where}.scope", "text", data.get("scope"))
    _expect(isinstance(classes, list) and all(
        isinstance(row, list) and all(_is_int(c) and 0 <= c < len(queries) for c in row) for row in classes),
        f"{where}.classes", f"per event a list of class ids in 0..{len(queries) - 1}", classes)
    try:
        return Burst(data["type"], tuple(queries), data["b"], data["n"], tuple(tuple(row) for row in classes),
                     data.get("continues", False), data.get("scope", ""))
    except CepoptError as exc:
        raise CepoptError(f"{where}: {exc}") from None


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _expect(ok: bool, where: str, what: str, value: Any) -> None:
    if not ok:
        text = repr(value)
        raise CepoptError(f"{where}: expected {what}, got {text if len(text) <= 60 else text[:57] + '...'}")


def classes_of(signatures: Sequence[Sequence[Hashable]]) -> tuple[tuple[int, ...], ...]:
    """Per event, map the candidates' signatures to class ids: 0 = the most frequent signature
    (ties: the first candidate's), then by frequency. Returns () when every event is uniform."""
    out = []
    uniform = True
    for sigs in signatures:
        counts: dict[Hashable, int] = {}
        for s in sigs:
            counts[s] = counts.get(s, 0) + 1
        order = sorted(counts, key=lambda s: (-counts[s], list(sigs).index(s)))
        ids = {s: i for i, s in enumerate(order)}
        row = tuple(ids[s] for s in sigs)
        uniform = uniform and len(order) == 1
        out.append(row)
    return () if uniform else tuple(out)


@dataclass
class Segment:
    """Positions (into the scope's event arrays) of one burst: its tie groups' event positions."""

    positions: list[int]
    continues: bool
    n_before: int


def segment(ts: np.ndarray, types: np.ndarray, relevant: np.ndarray, kleene: str, group_types: frozenset[str],
            pane: float) -> tuple[list[Segment], np.ndarray]:
    """Bursts of one sharing group in one scope.

    ``ts``, ``types``: the scope's events sorted by time; ``relevant``: mask of events matched by some
    candidate of the group; ``group_types``: T. Returns the bursts and a boolean mask of the E events
    that must be processed without sharing (E events in mixed tie groups). ``n_before`` counts the
    scope's events before the burst (the graph size at decision time minus b).
    """
    n = len(ts)
    solo = np.zeros(n, dtype=bool)
    out: list[Segment] = []
    if n == 0:
        return out, solo
    in_t = np.isin(types, list(group_types)) & relevant
    is_e = (types == kleene) & relevant
    other = in_t & ~is_e
    # tie groups: runs of equal ts
    starts = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
    ends = np.r_[starts[1:], n]
    cur: Segment | None = None
    cur_pane = None
    prev_open = False  # the last burst ended only at a pane boundary: its graphlet is still open
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        has_other = bool(other[s:e].any())
        e_pos = [i for i in range(s, e) if is_e[i]]
        if has_other:
            solo[e_pos] = True
            if cur is not None:
                out.append(cur)
                cur = None
            prev_open = False
            continue
        if not e_pos:
            continue
        pane_id = int(ts[s] // pane) if pane else 0
        if cur is not None and pane_id == cur_pane:
            cur.positions.extend(e_pos)
            continue
        if cur is not None:
            out.append(cur)
            prev_open = True
        cur = Segment(e_pos, continues=prev_open, n_before=s)
        cur_pane = pane_id
    if cur is not None:
        out.append(cur)
    return out, solo


def signatures(scope, cqs: Mapping[str, Any], kleene: str, positions: Sequence[int]) -> list[tuple]:
    """Per burst event (``positions`` into the scope, in time order), the signature of each candidate
    query of ``cqs`` (§4.3 step 1, the §3.7 identity test):

    * ``None``: q does not match the event (its value for q is 0);
    * ``("own", q)``: an edge predicate of q blocks an edge into the event from a matched event before
      the burst, so the graphlet-level snapshot does not give its value for q: it needs an
      event-level snapshot whoever shares it ([DECISION]: §3.7, not a signature shared by every
      query blocked alike, as a literal §4.3 would have it; the executor needs the snapshot);
    * else the frozenset of the earlier burst events matched by q whose edge to it q blocks.

    An event needs an event-level snapshot under a shared set S iff S gives it two signatures. They
    depend on the stream only, not on earlier decisions: when a burst extends the open graphlet, the
    graphlet's earlier events count as "before the burst" (an edge from them blocked alike for all of
    S costs a snapshot that an exact in-graphlet test would not need)."""
    names = list(cqs)
    masks = [scope.masks[q] for q in names]
    into = [[ep for ep in cqs[q].edges if ep.dst == kleene] for q in names]
    if not any(into):
        return [tuple(frozenset() if m[i] else None for m in masks) for i in positions]
    ts, types = scope.ts, scope.types

    def blocked(eps, p, rec) -> bool:
        return not all(ep.holds(scope.record(p), rec) for ep in eps if ep.src == types[p])

    before = positions[0]
    external = [np.flatnonzero(m[:before] & np.isin(types[:before], list(cqs[q].pt_map.get(kleene, ()))))
                for q, m in zip(names, masks, strict=True)]
    rows = []
    for i in positions:
        rec = scope.record(i)
        row: list = []
        for q, m, eps, ext in zip(names, masks, into, external, strict=True):
            if not m[i]:
                row.append(None)
            elif any(ts[p] < ts[i] and blocked(eps, p, rec) for p in ext.tolist()):
                row.append(("own", q))
            else:
                row.append(frozenset(p for p in positions if ts[p] < ts[i] and m[p] and blocked(eps, p, rec)))
        rows.append(tuple(row))
    return rows


@dataclass
class ScopeBursts:
    """A sharing group's bursts in one scope: ``relevant`` (events matched by a candidate), ``solo``
    (E events processed without sharing, see :func:`segment`) and per burst its event positions,
    the :class:`Burst` the cost model prices and the events' :func:`signatures`."""

    relevant: np.ndarray
    solo: np.ndarray
    bursts: list[tuple[list[int], Burst, list[tuple]]]


def scope_label(ci: int, scope) -> str:
    """A burst's ``scope``: the class index, partition key and window."""
    return f"{ci}|{scope.key}|{scope.window}"


def scope_bursts(cls, scope, label: str, kleene: str, cands: tuple[str, ...]) -> ScopeBursts:
    """The bursts of the sharing group (``kleene``, ``cands``) of class ``cls`` in one scope
    (:class:`cepopt.executor.greta.Scope`), labelled ``label``: what the optimizer prices and the
    executor decides, from one computation."""
    from cepopt.hamlet.problem import pane_size  # problem imports this module

    cqs = {q: cls.query(q) for q in cands}
    relevant = np.zeros(scope.n, dtype=bool)
    for q in cands:
        relevant |= scope.masks[q]
    gtypes = frozenset().union(*(cq.types for cq in cqs.values()))
    segs, solo = segment(scope.ts, scope.types, relevant, kleene, gtypes, pane_size([cls.length, cls.slide]))
    out = []
    for seg in segs:
        sigs = signatures(scope, cqs, kleene, seg.positions)
        b = len(seg.positions)
        out.append((seg.positions, Burst(kleene, tuple(cands), b, int(scope.matched_before[seg.n_before]) + b,
                                         classes_of(sigs), seg.continues, label, cls.n_rule), sigs))
    return ScopeBursts(relevant, solo, out)


def stream_bursts(classes, stream: Sequence[Mapping]) -> list[Burst]:
    """The bursts of an embedded stream, for the cost model: the executor's bursts (scope_bursts)."""
    import pandas as pd

    # local import: the executor's scopes (no Spark); problem imports this module
    from cepopt.executor.greta import Scope, scopes

    df = pd.DataFrame(list(stream))
    out: list[Burst] = []
    for ci, cls in enumerate(classes):
        if not cls.groups:
            continue
        for key, wk, part in scopes(cls, df):
            scope = Scope(cls, part, key, wk)
            for e, cands in cls.groups:
                out.extend(burst for _, burst, _ in scope_bursts(cls, scope, scope_label(ci, scope), e, cands).bursts)
    return out
