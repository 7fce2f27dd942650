"""The join-plan kernel: the join tree of executor/join_plan.py evaluated with NumPy on a pandas
stream. The local engine runs it on the whole stream in process (no JVM); the Spark engine
(executor/join_eval.py) runs the same kernel on each partition of time chunks, so both count and
match alike by construction.

A node is a dict of NumPy arrays, one row per partial match: per single-event item p the row
``i<p>_e`` of its event in the stream, per Kleene item the tuple ``i<p>_set`` of its events' rows
(sorted by ts, id) with ``i<p>_lo``/``i<p>_hi``; ``_lo``/``_hi`` are the match's first and last
timestamps and ``_own`` whether the event at ``_lo`` is owned by this evaluation (always, locally;
Spark: the event lies in the chunk's own time range, so that each partial match is counted by one
chunk only).

Time stamps are int64 throughout and the window enters as the integer ``floor(W)`` (a span of integer
time stamps is at most W exactly when it is at most floor(W)), so no time stamp goes through a float
(a float64 holds no odd integer past 2^53; bounds are saturated at the int64 range instead of wrapping).

Joins are range joins on time, not equi-joins on buckets: the right side sorted by ``_lo``, each left
match meets the right matches whose first timestamp lies in ``[hi_l - W, lo_l + W]`` (two matches in
one window), narrowed by the SEQ order where it bounds the right side's first event (a right event
after a left one starts at or after the left one's timestamp; a right event before a left one bounds
it from above). The window, the SEQ order, distinctness and the conditions then filter the candidate
pairs (vectorized; a Kleene set's "every event" conditions in Python, per pair). A NOT check is the
same range join with the negated type's events, an anti-join. A node's count is its number of owned
rows and its ``active`` the sum of ``W - (hi - lo)`` over them; missing values compare as in
cepopt.predicates. The matches' texts, the results and their digest are those of the Spark engine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.join_plan import CompiledPattern, JoinTree, Node, NodeCount, PairCheck, PlanRun
from cepopt.predicates import compare, compare_arrays

__all__ = ["LocalEvaluation", "evaluate", "evaluate_many", "evaluate_partition", "match_texts", "prepare_events"]

#: A Kleene leaf enumerates 2^k sets per first event (k later events in its window): refuse beyond.
MAX_KLEENE_LATER = 20
#: candidate pairs expanded at once by a join (a block's arrays stay in cache)
PAIR_BLOCK = 1 << 16
#: the columns of a node that are not item columns
_SPAN = ("_lo", "_hi", "_own")
_INT64 = np.iinfo(np.int64)


def window_units(window: float) -> int:
    """The window as whole time units: time stamps are integers, so a span is at most ``window``
    exactly when it is at most its floor."""
    return int(np.floor(window))


def _plus(ts: np.ndarray, w: int) -> np.ndarray:
    """``ts + w`` (``w >= 0``) in int64, saturated at its maximum instead of wrapping."""
    return np.where(ts > _INT64.max - w, _INT64.max, ts + min(w, int(_INT64.max)))


def _minus(ts: np.ndarray, w: int) -> np.ndarray:
    """``ts - w`` (``w >= 0``) in int64, saturated at its minimum instead of wrapping."""
    return np.where(ts < _INT64.min + w, _INT64.min, ts - min(w, int(_INT64.max)))


def prepare_events(events: pd.DataFrame) -> pd.DataFrame:
    """``events`` sorted by (ts, id) with ``ts`` and ``id`` as int64 (``id`` = the row number when
    absent) and a fresh index 0..n-1 (the row an item refers to)."""
    for col in ("ts", "type"):
        if col not in events.columns:
            raise CepoptError(f"the stream has no column {col!r} (columns: {', '.join(map(str, events.columns))})")
    from cepopt.executor.integers import exact_integer_columns

    if "id" not in events.columns:
        events = events.assign(id=np.arange(len(events), dtype=np.int64))
    events = exact_integer_columns(events)  # a nullable integer column's to_numpy() would be float64
    events = events.assign(ts=events["ts"].astype("int64"), id=events["id"].astype("int64"))
    return events.sort_values(["ts", "id"], kind="stable").reset_index(drop=True)


@dataclass
class LocalEvaluation:
    """Trees evaluated on one pandas stream: one run per tree, the stream's size and span."""

    runs: list[PlanRun]
    time_s: float
    events: int
    first_ts: int | None
    last_ts: int | None

    def results(self, query: str) -> pd.DataFrame:
        """The match set in the results format: one row per distinct match of any run."""
        from cepopt.executor.results import results_frame

        texts = sorted(set().union(*(set(run.matches["value"]) for run in self.runs)))
        return results_frame((query, "", 0, "match", t) for t in texts)


class _Events:
    """A prepared stream as arrays: timestamps, ids, ownership, type rows and attribute columns
    (read once, shared by every tree evaluated on it). ``types``: ``type`` holds indices into it."""

    def __init__(self, events: pd.DataFrame, types: Sequence[str] | None = None):
        self.frame = events
        self.ts = events["ts"].to_numpy()
        self.ids = events["id"].to_numpy()
        self.own = events["_own"].to_numpy(dtype=bool) if "_own" in events.columns else np.ones(len(events), bool)
        if types is None:
            codes, uniques = pd.factorize(events["type"])
        else:
            codes, uniques = events["type"].to_numpy(), types
        self._codes = codes
        self._code = {t: i for i, t in enumerate(uniques)}
        self._rows: dict[str, np.ndarray] = {}
        self._cols: dict[str, np.ndarray] = {}

    def col(self, attr: str) -> np.ndarray:
        if attr not in self._cols:
            self._cols[attr] = self.frame[attr].to_numpy()
        return self._cols[attr]

    def of_type(self, t: str) -> np.ndarray:
        if t not in self._rows:
            code = self._code.get(t)
            self._rows[t] = np.empty(0, np.int64) if code is None else np.flatnonzero(self._codes == code)
        return self._rows[t]


class _Pairs:
    """Candidate pairs (left row ``li``, right row ``ri``) read like a node: a column is gathered
    from its side when a check asks for it."""

    def __init__(self, left: dict, right: dict, li: np.ndarray, ri: np.ndarray):
        self.left, self.right, self.li, self.ri = left, right, li, ri

    def __getitem__(self, key: str) -> np.ndarray:
        if key in self.left:
            return self.left[key][self.li]
        return self.right[key][self.ri]


def _take(node: dict, rows: np.ndarray) -> dict:
    return {k: v[rows] for k, v in node.items()}


class _Evaluator:
    def __init__(self, pattern: CompiledPattern, events: _Events, negate: bool, pair_block: int = PAIR_BLOCK):
        if pair_block < 1:
            raise CepoptError(f"pair_block must be at least 1, got {pair_block}")
        self.pair_block = pair_block
        self.p = pattern
        self.s = events
        self.w = float(pattern.window)
        self.wi = window_units(pattern.window)
        self.negate = negate and bool(pattern.negations)
        missing = {a for it in pattern.items for a in pattern.attrs_of(it.position)} - set(events.frame.columns)
        if missing:
            raise CepoptError(f"the stream has no attribute {sorted(missing)[0]!r} used by the pattern")
        self.ts = events.ts

    # -- item values ---------------------------------------------------------------------------

    def _lo(self, node, pos: int) -> np.ndarray:
        if self.p.items[pos].kleene:
            return node[f"i{pos}_lo"]
        return self.ts[node[f"i{pos}_e"]]

    def _hi(self, node, pos: int) -> np.ndarray:
        if self.p.items[pos].kleene:
            return node[f"i{pos}_hi"]
        return self.ts[node[f"i{pos}_e"]]

    def _values(self, node, pos: int, attr: str) -> np.ndarray:
        return self.s.col(attr)[node[f"i{pos}_e"]]

    def _rows(self, node, pos: int) -> list[tuple]:
        """Per partial match, the stream rows of item ``pos`` (one, or a Kleene set's)."""
        if self.p.items[pos].kleene:
            return list(node[f"i{pos}_set"])
        return [(int(r),) for r in node[f"i{pos}_e"]]

    def _check(self, c: PairCheck, node) -> np.ndarray:
        """Whether check ``c`` holds on each row of ``node`` (a node or pairs binding both items)."""
        if c.kind == "order":
            return self._hi(node, c.a) <= self._lo(node, c.b)
        kleene = self.p.items[c.a].kleene or self.p.items[c.b].kleene
        if c.kind == "distinct":
            if not kleene:
                return self.s.ids[node[f"i{c.a}_e"]] != self.s.ids[node[f"i{c.b}_e"]]
            return np.array([not set(ra) & set(rb) for ra, rb in zip(self._rows(node, c.a), self._rows(node, c.b),
                                                                      strict=True)], dtype=bool)
        if not kleene:
            return compare_arrays(c.op, self._values(node, c.a, c.attr), self._values(node, c.b, c.battr))
        left, right = self.s.col(c.attr), self.s.col(c.battr)
        return np.array([all(compare(c.op, left[x], right[y]) for x in ra for y in rb)
                         for ra, rb in zip(self._rows(node, c.a), self._rows(node, c.b), strict=True)], dtype=bool)

    # -- leaves --------------------------------------------------------------------------------

    def _events_of(self, pos: int) -> np.ndarray:
        """Rows of the item's type that pass its filters (ascending: sorted by ts, id)."""
        rows = self.s.of_type(self.p.items[pos].type)
        filters = self.p.filters_of(pos)
        if filters:
            mask = np.ones(len(rows), dtype=bool)
            for f in filters:
                mask &= compare_arrays(f.op, self.s.col(f.attr)[rows], f.value)
            rows = rows[mask]
        return rows

    def _single(self, pos: int) -> dict:
        rows = self._events_of(pos)
        ts = self.ts[rows]
        return {f"i{pos}_e": rows, "_lo": ts, "_hi": ts, "_own": self.s.own[rows]}

    def _kleene(self, pos: int) -> dict:
        """Every non-empty set of the item's events within the window whose events share their
        (present) equivalence values: each event as the set's first with every subset of the later ones."""
        rows = self._events_of(pos)
        ts = self.ts[rows]
        ends = np.searchsorted(ts, _plus(ts, self.wi), side="right")
        eq = [self.s.col(a) for a in self.p.equivalences]
        sets, firsts, his = [], [], []
        for i, first in enumerate(rows):
            later = [r for r in rows[i + 1:ends[i]] if all(compare("=", col[r], col[first]) for col in eq)]
            if len(later) > MAX_KLEENE_LATER:
                raise CepoptError(f"KL({self.p.items[pos].ref}): more than {MAX_KLEENE_LATER} events in one "
                                  "window; its 2^k sets are beyond this executor")
            for k in range(len(later) + 1):
                for rest in combinations(later, k):
                    members = (int(first), *map(int, rest))
                    sets.append(members)
                    firsts.append(first)
                    his.append(self.ts[members[-1]])
        firsts_a = np.array(firsts, dtype=np.int64)
        lo, hi = self.ts[firsts_a], np.array(his, dtype=np.int64)
        set_col = np.empty(len(sets), dtype=object)
        set_col[:] = sets
        return {f"i{pos}_set": set_col, f"i{pos}_lo": lo, f"i{pos}_hi": hi, "_lo": lo, "_hi": hi,
                "_own": self.s.own[firsts_a]}

    # -- joins ---------------------------------------------------------------------------------

    def _bounds(self, left: dict, lpos: Sequence[int], rpos: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Per left row, the range of the right side's first timestamp: the window, narrowed by the
        SEQ order (every right item after some left item: at or after the earliest such bound; a
        right item before a left item: at or before that item's first timestamp)."""
        lower = _minus(left["_hi"], self.wi)
        upper = _plus(left["_lo"], self.wi)
        after: dict[int, np.ndarray] = {}
        for c in self.p.checks:
            if c.kind != "order":
                continue
            if c.a in lpos and c.b in rpos:
                h = self._hi(left, c.a)
                after[c.b] = h if c.b not in after else np.maximum(after[c.b], h)
            elif c.a in rpos and c.b in lpos:
                upper = np.minimum(upper, self._lo(left, c.b))
        if len(after) == len(rpos):
            lower = np.maximum(lower, np.minimum.reduce(list(after.values())))
        return lower, upper

    def _ranges(self, left: dict, right: dict, lpos: Sequence[int], rpos: Sequence[int]):
        """(right rows sorted by first timestamp, per left row the start and count of its candidates
        there): the right rows whose first timestamp is in the left row's range (:meth:`_bounds`, int64)."""
        order = np.argsort(right["_lo"], kind="stable")
        rlo = right["_lo"][order]
        lower, upper = self._bounds(left, lpos, rpos)
        start = np.searchsorted(rlo, lower, side="left")
        count = np.maximum(np.searchsorted(rlo, upper, side="right") - start, 0)
        return order, start, count

    def _single_event(self, positions: Sequence[int]) -> bool:
        return len(positions) == 1 and not self.p.items[positions[0]].kleene

    def _matching(self, left: dict, right: dict, lpos: Sequence[int], rpos: Sequence[int]) -> tuple[np.ndarray, ...]:
        """The (left row, right row) pairs that pass the window and every check between the two
        sides. Candidates are expanded for blocks of left rows of about ``pair_block`` pairs each, so
        that the arrays of a block stay in the processor's cache (and need no fresh memory). With a
        right side of one event the window and the SEQ order follow from the range (:meth:`_bounds`)."""
        if not len(left["_lo"]) or not len(right["_lo"]):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        order, start, count = self._ranges(left, right, lpos, rpos)
        ends = np.cumsum(count)
        cuts = np.searchsorted(ends, np.arange(self.pair_block, int(ends[-1]), self.pair_block), side="left")
        bounds = [0, *dict.fromkeys(int(c) + 1 for c in cuts), len(count)]
        implied = self._single_event(rpos)
        checks = [c for c in self.p.checks_between(lpos, rpos) if not (implied and c.kind == "order")]
        found_l, found_r = [], []
        for a, b in zip(bounds, bounds[1:]):
            if b <= a:
                continue
            n = count[a:b]
            total = int(n.sum())
            if not total:
                continue
            li = np.repeat(np.arange(a, b), n)
            ri = order[np.repeat(start[a:b] - (np.cumsum(n) - n), n) + np.arange(total)]
            if not implied:
                span = (np.maximum(left["_hi"][li], right["_hi"][ri])
                        - np.minimum(left["_lo"][li], right["_lo"][ri]))
                keep = span <= self.wi
                li, ri = li[keep], ri[keep]
            for c in checks:
                if not len(li):
                    break
                ok = self._check(c, _Pairs(left, right, li, ri))
                li, ri = li[ok], ri[ok]
            found_l.append(li)
            found_r.append(ri)
        if not found_l:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(found_l), np.concatenate(found_r)

    def _join(self, left: dict, right: dict, lpos: Sequence[int], rpos: Sequence[int]) -> dict:
        li, ri = self._matching(left, right, lpos, rpos)
        out = {k: v[li] for k, v in left.items() if k not in _SPAN}
        out.update({k: v[ri] for k, v in right.items() if k not in _SPAN})
        llo, rlo = left["_lo"][li], right["_lo"][ri]
        out["_lo"] = np.minimum(llo, rlo)
        out["_hi"] = np.maximum(left["_hi"][li], right["_hi"][ri])
        # equal first timestamps belong to the same chunk: either side's ownership is the match's
        out["_own"] = np.where(llo <= rlo, left["_own"][li], right["_own"][ri])
        return out

    def _negate(self, node: dict, pos: int, positions: Sequence[int]) -> dict:
        """``node`` without the matches some event of negated item ``pos`` could complete."""
        if not len(node["_lo"]):
            return node
        li, _ = self._matching(node, self._single(pos), positions, [pos])
        if not len(li):
            return node
        keep = np.ones(len(node["_lo"]), dtype=bool)
        keep[li] = False
        return _take(node, np.flatnonzero(keep))

    def node(self, node: Node, out: list[NodeCount], names: Sequence[str]) -> dict:
        if node.leaf is not None:
            pos = self.p.leaves[node.leaf]
            built = self._kleene(pos) if self.p.items[pos].kleene else self._single(pos)
        else:
            left = self.node(node.left, out, names)  # type: ignore[arg-type]
            right = self.node(node.right, out, names)  # type: ignore[arg-type]
            built = self._join(left, right, self._positions(node.left.leaves),  # type: ignore[union-attr]
                               self._positions(node.right.leaves))  # type: ignore[union-attr]
        negations = node.negations if self.negate else ()
        for pos in negations:
            built = self._negate(built, pos, self._positions(node.leaves))
        count = active = None
        if node.counted:
            own = built["_own"]
            count = int(own.sum())
            active = float(np.sum(self.w - (built["_hi"][own] - built["_lo"][own])))
        out.append(NodeCount(node.label(names), tuple(sorted(node.leaves)), node.counted, count, active, negations))
        return built

    def _positions(self, leaves) -> list[int]:
        return [self.p.leaves[i] for i in sorted(leaves)]


def match_texts(pattern: CompiledPattern, matches: dict, ids: np.ndarray) -> list[str]:
    """The canonical text of each match (``ref=id,...``; a Kleene item ``ref=[id;id]`` with ascending
    ids): join_reference.match_text gives the same."""
    parts = []
    for k, pos in enumerate(pattern.leaves):
        item = pattern.items[pos]
        sep = "," if k else ""
        if item.kleene:
            parts.append([f"{sep}{item.ref}=[{';'.join(str(i) for i in sorted(int(ids[r]) for r in s))}]"
                          for s in matches[f"i{pos}_set"]])
        else:
            parts.append([f"{sep}{item.ref}={i}" for i in ids[matches[f"i{pos}_e"]].tolist()])
    return ["".join(p) for p in zip(*parts, strict=True)] if parts else []


def _run(tree: JoinTree, events: _Events, negate: bool, pair_block: int = PAIR_BLOCK
         ) -> tuple[list[NodeCount], list[str]]:
    """One tree on a prepared stream: its node counts (owned rows) and the texts of its owned matches."""
    ev = _Evaluator(tree.pattern, events, negate, pair_block)
    nodes: list[NodeCount] = []
    root = ev.node(tree.root, nodes, tree.pattern.leaf_names())
    return nodes, match_texts(tree.pattern, _take(root, np.flatnonzero(root["_own"])), events.ids)


def evaluate_partition(trees: Sequence[JoinTree], events: pd.DataFrame, *, negate: bool = True,
                       types: Sequence[str] | None = None) -> list[tuple[list[NodeCount], list[str]]]:
    """Every tree on ``events`` (columns id, ts, type, the attributes and ``_own`` (default: all
    owned); any order; ``types``: ``type`` holds indices into it): per tree, the node counts of the
    owned partial matches and the texts of the owned full matches."""
    if not _sorted(events["ts"].to_numpy(), events["id"].to_numpy()):
        events = events.sort_values(["ts", "id"], kind="stable").reset_index(drop=True)
    stream = _Events(events, types)
    return [_run(tree, stream, negate) for tree in trees]


def _sorted(ts: np.ndarray, ids: np.ndarray) -> bool:
    """Whether rows are in (ts, id) order already (a stream read in order needs no sort)."""
    return bool(np.all((ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (ids[1:] >= ids[:-1]))))


def evaluate_many(trees: Sequence[JoinTree], events: pd.DataFrame, *, negate: bool = True,
                  pair_block: int = PAIR_BLOCK) -> LocalEvaluation:
    """Run ``trees`` on a pandas stream; each run's ``matches`` holds the texts of its full matches
    (column ``value``). ``negate=False`` skips the NOT checks (the positive part); ``pair_block``:
    the candidate pairs a join expands at once (the answer does not depend on it)."""
    start = time.perf_counter()
    events = prepare_events(events)
    stream = _Events(events)
    runs = []
    for tree in trees:
        nodes, texts = _run(tree, stream, negate, pair_block)
        runs.append(PlanRun(tree, pd.DataFrame({"value": pd.Series(texts, dtype=object)}), nodes, 0.0))
    elapsed = time.perf_counter() - start
    for run in runs:
        run.time_s = elapsed
    ts = events["ts"]
    return LocalEvaluation(runs, elapsed, len(events), int(ts.min()) if len(ts) else None,
                           int(ts.max()) if len(ts) else None)


def evaluate(tree: JoinTree, events: pd.DataFrame, *, negate: bool = True, pair_block: int = PAIR_BLOCK) -> PlanRun:
    """Run one ``tree`` on a pandas stream (:func:`evaluate_many` of one tree)."""
    return evaluate_many([tree], events, negate=negate, pair_block=pair_block).runs[0]
