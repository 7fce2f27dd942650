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

import functools
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cepopt.errors import CepoptError
from cepopt.hamlet.scope import OP_CODES as OP_CODE

__all__ = ["BURST_KEYS", "MAX_EVENTS", "N_RULES", "Burst", "GroupBursts", "burst_from_json", "burst_to_json",
           "classes_of", "group_bursts", "scope_label", "stream_bursts"]

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
class GroupBursts:
    """The bursts of one sharing group (``kleene``, ``cands``) over every scope of a layout
    (:func:`group_bursts`).

    Per layout row: ``solo`` (an E event of a tie group with another relevant type: processed
    without sharing) and ``burst_of`` (the index of its burst, -1 for none). Per burst, in row order:
    its scope ``burst_scope[i]``, its size ``b[i]`` and Eq. 7's ``n[i]``, whether it ``continues`` an
    open graphlet, its rows ``rows[ptr[i]:ptr[i+1]]`` and per row and candidate the signature class
    ``sig_class`` (equal iff equal signatures, :func:`classes_of`) and kind ``sig_kind``: 0 not
    matched, 1 no edge blocked, 2 some in-burst predecessors blocked, 3 an edge from before the burst
    blocked ("own"). ``burst(i)`` / ``bursts``: what the cost model prices, built on demand (the
    executor asks its policy only about bursts it has not seen, :mod:`cepopt.executor.hamlet_kernel`).
    """

    kleene: str
    cands: tuple[str, ...]
    solo: np.ndarray
    burst_of: np.ndarray
    burst_scope: np.ndarray
    ptr: np.ndarray
    rows: np.ndarray
    sig_class: np.ndarray
    sig_kind: np.ndarray
    b: np.ndarray
    n: np.ndarray
    continues: np.ndarray
    labels: tuple = ((), (), 0, "graph")     # (scope keys, scope windows, class index, n_rule)
    _bursts: list | None = field(default=None, repr=False)

    def burst(self, i: int) -> Burst:
        """Burst ``i`` as the cost model sees it."""
        keys, windows, ci, n_rule = self.labels
        a, z = int(self.ptr[i]), int(self.ptr[i + 1])
        block = self.sig_class[a:z]
        classes = () if not block.any() else tuple(map(tuple, block.tolist()))
        j = int(self.burst_scope[i])
        return Burst(self.kleene, self.cands, int(self.b[i]), int(self.n[i]), classes, bool(self.continues[i]),
                     scope_label(ci, keys[j], int(windows[j])), n_rule)

    @property
    def bursts(self) -> list[Burst]:
        if self._bursts is None:
            self._bursts = [self.burst(i) for i in range(len(self.b))]
        return self._bursts


def scope_label(ci: int, key: tuple, window: int) -> str:
    """A burst's ``scope``: the class index, partition key and window."""
    return f"{ci}|{key}|{window}"


def _segment_rows(tie, relevant, is_e, scope_of, ts, pane):  # noqa: C901 (one pass, every case inline)
    """One pass over the rows (:func:`_segments`, which compiles it): per row solo and burst id, per
    burst its first row and whether it continues an open graphlet."""
    n = tie.shape[0]
    solo = np.zeros(n, dtype=np.bool_)
    burst_of = np.full(n, -1, dtype=np.int64)
    starts = np.zeros(n, dtype=np.int64)
    cont = np.zeros(n, dtype=np.bool_)
    nb = 0
    have_prev = False                       # a kept tie group before this one
    prev_scope, prev_e_only, prev_pane = -1, False, 0.0
    a = 0
    while a < n:
        z = a + 1
        while z < n and tie[z] == a:
            z += 1
        has_other = False
        has_e = False
        for i in range(a, z):
            has_e |= is_e[i]
            has_other |= relevant[i] and not is_e[i]
        if has_other or has_e:
            scope = scope_of[a]
            pane_id = ts[a] // pane if pane else 0.0
            e_only = has_e and not has_other
            prev_e = have_prev and prev_e_only and prev_scope == scope
            if e_only:
                if not (prev_e and prev_pane == pane_id):
                    starts[nb] = a
                    cont[nb] = prev_e
                    nb += 1
                for i in range(a, z):
                    if is_e[i]:
                        burst_of[i] = nb - 1
            elif has_e:
                for i in range(a, z):
                    solo[i] = is_e[i]
            have_prev, prev_scope, prev_e_only, prev_pane = True, scope, e_only, pane_id
        a = z
    return solo, burst_of, starts[:nb].copy(), cont[:nb].copy()


def _segments(layout, relevant: np.ndarray, is_e: np.ndarray, pane: float):
    """Burst segmentation (module docstring) over every scope: per row ``solo`` and burst id (-1:
    none), per burst its first tie row and whether it continues an open graphlet. A tie group (rows
    of one time stamp in a scope) with a relevant event of another type than E makes its E events
    solo; a run of E-only tie groups of one scope and one pane is one burst; a burst that follows an
    E-only tie group of its scope (another pane) continues an open graphlet. Compiled: one pass over
    the rows instead of twenty NumPy passes."""
    ts = np.asarray(layout.ts, dtype=np.float64)
    return _compiled_segment_rows()(layout.tie, relevant, is_e, layout.scope_of(), ts, float(pane or 0.0))


@functools.cache
def _compiled_segment_rows():
    """:func:`_segment_rows` compiled (Numba is imported on first use: the optimizer's imports of this
    module, which need no stream, do not load it)."""
    from numba import njit

    return njit(cache=True)(_segment_rows)


def group_bursts(layout, ci: int, kleene: str, cands: Sequence[str]) -> GroupBursts:
    """The bursts of the sharing group (``kleene``, ``cands``) of class ``ci`` over ``layout``
    (:class:`cepopt.hamlet.scope.Layout`): what the optimizer prices and the executor decides, from
    one computation. Vectorized except, with edge predicates into E, the signatures (per burst)."""
    from cepopt.hamlet.scope import pane_size

    cls = layout.cls
    names = [cq.name for cq in cls.queries]
    qidx = [names.index(q) for q in cands]
    masks = layout.masks[qidx]
    relevant = masks.any(axis=0)
    is_e = relevant & (layout.tcode == layout.type_code(kleene))
    solo, burst_of, starts, continues = _segments(layout, relevant, is_e, pane_size([cls.length, cls.slide]))
    rows = np.flatnonzero(burst_of >= 0)
    nb = len(starts)
    ptr = np.searchsorted(burst_of[rows], np.arange(nb + 1)).astype(np.int64)
    sig_class, sig_kind = _signatures(layout, [cls.query(q) for q in cands], masks, kleene, rows, ptr)
    scope = layout.scope_of()[starts] if nb else np.zeros(0, dtype=np.int64)
    b = np.diff(ptr).astype(np.int64)
    n = layout.matched_before()[starts].astype(np.int64) + b if nb else np.zeros(0, dtype=np.int64)
    return GroupBursts(kleene, tuple(cands), solo, burst_of, scope.astype(np.int64), ptr, rows, sig_class, sig_kind,
                       b, n, np.asarray(continues, dtype=bool),
                       (layout.scope_key, layout.scope_window, ci, cls.n_rule))


def _signatures(layout, cqs: Sequence[Any], masks: np.ndarray, kleene: str, rows: np.ndarray,
                ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per burst row and candidate: signature class and kind (:class:`GroupBursts`).

    The signature of candidate q at burst event e (§4.3 step 1, the §3.7 identity test): None when q
    does not match e; ``("own", q)`` when an edge predicate of q blocks an edge into e from a matched
    event before the burst (the graphlet-level snapshot does not give e's value for q: it needs an
    event-level snapshot whoever shares it -- [DECISION]: §3.7, not a signature shared by every query
    blocked alike as a literal §4.3 would have it); else the set of the earlier burst events matched
    by q whose edge to e q blocks. They depend on the stream only, not on earlier decisions: when a
    burst extends the open graphlet, the graphlet's earlier events count as "before the burst"."""
    matched = masks[:, rows].T if len(rows) else np.zeros((0, len(cqs)), dtype=bool)
    into = [[ep for ep in cq.edges if ep.dst == kleene] for cq in cqs]
    if not any(into):
        k = len(cqs)
        cnt = matched.sum(axis=1)
        zero_matched = (2 * cnt > k) | ((2 * cnt == k) & matched[:, 0]) if k else np.zeros(0, dtype=bool)
        return (matched != zero_matched[:, None]).astype(np.int64), matched.astype(np.int64)
    sig_class = np.zeros(matched.shape, dtype=np.int64)
    sig_kind = matched.astype(np.int64)
    for i in range(len(ptr) - 1):
        a, b = int(ptr[i]), int(ptr[i + 1])
        sigs, kinds = _burst_signatures(layout, cqs, masks, into, kleene, rows[a:b])
        classes = classes_of(sigs)
        if classes:
            sig_class[a:b] = classes
        sig_kind[a:b] = kinds
    return sig_class, sig_kind


def _burst_signatures(layout, cqs, masks, into, kleene: str, pos: np.ndarray) -> tuple[list[tuple], list[list]]:
    """The signatures of one burst's events (rows ``pos``) for every candidate, and their kinds."""
    from cepopt.hamlet.scope import codes_compare

    ts, tcode = layout.ts, layout.tcode
    lo = int(layout.scope_start[np.searchsorted(layout.scope_start, pos[0], side="right") - 1])
    sigs: list[list] = [[] for _ in pos]
    kinds: list[list] = [[] for _ in pos]
    for qi, (cq, eps) in enumerate(zip(cqs, into, strict=True)):
        m = masks[qi]
        if not eps:
            for r, p in enumerate(pos):
                sigs[r].append(frozenset() if m[p] else None)
                kinds[r].append(1 if m[p] else 0)
            continue
        pt = [layout.type_code(t) for t in cq.pt_map.get(kleene, ())]
        ext = np.arange(lo, pos[0])
        ext = ext[m[ext] & np.isin(tcode[ext], pt)]
        own = np.zeros(len(pos), dtype=bool)
        inner = np.zeros((len(pos), len(pos)), dtype=bool)   # [e, p]: p's edge to e is blocked for q
        for ep in eps:
            lr, lk, rr, rk = layout.edge_codes(ep.left, ep.right)
            src = ext[tcode[ext] == layout.type_code(ep.src)]
            if len(src):
                fail = ~codes_compare(OP_CODE[ep.op], lr[src][None, :], lk[src][None, :], rr[pos][:, None],
                                      rk[pos][:, None])
                own |= fail.any(axis=1)
            if ep.src == kleene:
                inner |= ~codes_compare(OP_CODE[ep.op], lr[pos][None, :], lk[pos][None, :], rr[pos][:, None],
                                        rk[pos][:, None])
        earlier = (ts[pos][None, :] < ts[pos][:, None]) & m[pos][None, :]
        inner &= earlier
        for r, p in enumerate(pos):
            if not m[p]:
                sigs[r].append(None)
                kinds[r].append(0)
            elif own[r]:
                sigs[r].append(("own", cq.name))
                kinds[r].append(3)
            else:
                blocked = frozenset(pos[inner[r]].tolist())
                sigs[r].append(blocked)
                kinds[r].append(2 if blocked else 1)
    return [tuple(s) for s in sigs], kinds


def stream_bursts(classes, stream: Sequence[Mapping]) -> list[Burst]:
    """The bursts of an embedded stream, for the cost model: the executor's bursts (:func:`group_bursts`),
    scope by scope, group by group, in time order."""
    import pandas as pd

    from cepopt.hamlet.scope import class_layout

    df = pd.DataFrame(list(stream))
    out: list[Burst] = []
    for ci, cls in enumerate(classes):
        if not cls.groups or df.empty:
            continue
        layout = class_layout(cls, df)
        found = [group_bursts(layout, ci, e, cands) for e, cands in cls.groups]
        order = sorted((int(gb.burst_scope[i]), g, i) for g, gb in enumerate(found) for i in range(len(gb.bursts)))
        out.extend(found[g].bursts[i] for _, g, i in order)
    return out
