"""The local engine for join plans: the join tree of executor/join_plan.py evaluated in process with
pandas and NumPy (no JVM), for small streams and quick checks.

It computes what the Spark evaluator (executor/join_eval.py) computes, node by node: a node is a
pandas DataFrame of partial matches with, per single-event item p, the row ``i<p>_e`` of its event
in the stream, and per Kleene item the tuple ``i<p>_set`` of its events' rows (sorted by ts, id) with
``i<p>_lo``/``i<p>_hi``; ``_lo``/``_hi`` are the match's first and last timestamps. Joins are
equi-joins on time buckets of width W: a left match at bucket b = floor(lo/W) meets the right matches
whose bucket is b-1, b or b+1 (two matches within the window have buckets at most one apart), then
the window, the SEQ order, distinctness and the conditions filter the pairs (vectorized; a Kleene
set's "every event" conditions in Python, per pair). A NOT check is an anti-join with the negated
type's events. Every partial match is held once, so a node's count is its number of rows and its
``active`` the sum of ``W - (hi - lo)``, as Spark counts them; missing values compare as in
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

__all__ = ["LocalEvaluation", "evaluate", "evaluate_many", "match_texts", "prepare_events"]

#: A Kleene leaf enumerates 2^k sets per first event (k later events in its window): refuse beyond.
MAX_KLEENE_LATER = 20


def prepare_events(events: pd.DataFrame) -> pd.DataFrame:
    """``events`` sorted by (ts, id) with ``ts`` and ``id`` as int64 (``id`` = the row number when
    absent) and a fresh index 0..n-1 (the row an item refers to)."""
    for col in ("ts", "type"):
        if col not in events.columns:
            raise CepoptError(f"the stream has no column {col!r} (columns: {', '.join(map(str, events.columns))})")
    if "id" not in events.columns:
        events = events.assign(id=np.arange(len(events), dtype=np.int64))
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


class _Evaluator:
    def __init__(self, pattern: CompiledPattern, events: pd.DataFrame, negate: bool):
        self.p = pattern
        self.ev = events
        self.w = float(pattern.window)
        self.negate = negate and bool(pattern.negations)
        missing = {a for it in pattern.items for a in pattern.attrs_of(it.position)} - set(events.columns)
        if missing:
            raise CepoptError(f"the stream has no attribute {sorted(missing)[0]!r} used by the pattern")
        self.ts = events["ts"].to_numpy()
        self.ids = events["id"].to_numpy()

    # -- item values ---------------------------------------------------------------------------

    def _lo(self, df: pd.DataFrame, pos: int) -> np.ndarray:
        if self.p.items[pos].kleene:
            return df[f"i{pos}_lo"].to_numpy()
        return self.ts[df[f"i{pos}_e"].to_numpy()]

    def _hi(self, df: pd.DataFrame, pos: int) -> np.ndarray:
        if self.p.items[pos].kleene:
            return df[f"i{pos}_hi"].to_numpy()
        return self.ts[df[f"i{pos}_e"].to_numpy()]

    def _values(self, df: pd.DataFrame, pos: int, attr: str) -> np.ndarray:
        return self.ev[attr].to_numpy()[df[f"i{pos}_e"].to_numpy()]

    def _rows(self, df: pd.DataFrame, pos: int) -> list[tuple]:
        """Per partial match, the stream rows of item ``pos`` (one, or a Kleene set's)."""
        if self.p.items[pos].kleene:
            return list(df[f"i{pos}_set"])
        return [(int(r),) for r in df[f"i{pos}_e"].to_numpy()]

    def _check(self, c: PairCheck, df: pd.DataFrame) -> np.ndarray:
        """Whether check ``c`` holds on each row of ``df`` (a frame binding both of its items)."""
        if c.kind == "order":
            return self._hi(df, c.a) <= self._lo(df, c.b)
        kleene = self.p.items[c.a].kleene or self.p.items[c.b].kleene
        if c.kind == "distinct":
            if not kleene:
                return self._values(df, c.a, "id") != self._values(df, c.b, "id")
            return np.array([not set(ra) & set(rb) for ra, rb in zip(self._rows(df, c.a), self._rows(df, c.b),
                                                                      strict=True)], dtype=bool)
        if not kleene:
            return compare_arrays(c.op, self._values(df, c.a, c.attr), self._values(df, c.b, c.battr))
        left, right = self.ev[c.attr].to_numpy(), self.ev[c.battr].to_numpy()
        return np.array([all(compare(c.op, left[x], right[y]) for x in ra for y in rb)
                         for ra, rb in zip(self._rows(df, c.a), self._rows(df, c.b), strict=True)], dtype=bool)

    def _window_ok(self, df: pd.DataFrame) -> np.ndarray:
        return (df["_hi"].to_numpy() - df["_lo"].to_numpy()) <= self.w

    # -- leaves --------------------------------------------------------------------------------

    def _events_of(self, pos: int) -> np.ndarray:
        """Rows of the item's type that pass its filters."""
        ev = self.ev
        mask = (ev["type"] == self.p.items[pos].type).to_numpy()
        for f in self.p.filters_of(pos):
            mask &= compare_arrays(f.op, ev[f.attr], f.value)
        return np.flatnonzero(mask)

    def _single(self, pos: int) -> pd.DataFrame:
        rows = self._events_of(pos)
        ts = self.ts[rows]
        return pd.DataFrame({f"i{pos}_e": rows, "_lo": ts, "_hi": ts})

    def _kleene(self, pos: int) -> pd.DataFrame:
        """Every non-empty set of the item's events within the window whose events share their
        (present) equivalence values: each event as the set's first with every subset of the later ones."""
        rows = self._events_of(pos)
        eq = [self.ev[a].to_numpy() for a in self.p.equivalences]
        sets, los, his = [], [], []
        for i, first in enumerate(rows):
            later = [r for r in rows[i + 1:] if self.ts[r] - self.ts[first] <= self.w
                     and all(compare("=", col[r], col[first]) for col in eq)]
            if len(later) > MAX_KLEENE_LATER:
                raise CepoptError(f"KL({self.p.items[pos].ref}): more than {MAX_KLEENE_LATER} events in one "
                                  "window; its 2^k sets are beyond this executor")
            for k in range(len(later) + 1):
                for rest in combinations(later, k):
                    members = (int(first), *map(int, rest))
                    sets.append(members)
                    los.append(self.ts[first])
                    his.append(self.ts[members[-1]])
        return pd.DataFrame({f"i{pos}_set": pd.Series(sets, dtype=object), f"i{pos}_lo": np.array(los, dtype=np.int64),
                             f"i{pos}_hi": np.array(his, dtype=np.int64), "_lo": np.array(los, dtype=np.int64),
                             "_hi": np.array(his, dtype=np.int64)})

    # -- joins ---------------------------------------------------------------------------------

    def _pairs(self, left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        """Every (left, right) pair whose first timestamps lie in neighbouring buckets, with the
        joint first/last timestamps."""
        lb = np.floor(left["_lo"].to_numpy() / self.w).astype(np.int64)
        rb = np.floor(right["_lo"].to_numpy() / self.w).astype(np.int64)
        rr = right.rename(columns={"_lo": "_rlo", "_hi": "_rhi"})
        rr = pd.concat([rr.assign(_b=rb + d) for d in (-1, 0, 1)], ignore_index=True)
        df = left.assign(_b=lb).merge(rr, on="_b", how="inner").drop(columns="_b")
        df["_lo"] = np.minimum(df["_lo"].to_numpy(), df.pop("_rlo").to_numpy())
        df["_hi"] = np.maximum(df["_hi"].to_numpy(), df.pop("_rhi").to_numpy())
        return df

    def _join(self, left: pd.DataFrame, right: pd.DataFrame, lpos: Sequence[int], rpos: Sequence[int]) -> pd.DataFrame:
        df = self._pairs(left, right)
        keep = self._window_ok(df)
        for c in self.p.checks_between(lpos, rpos):
            if keep.any():
                keep &= self._check(c, df)
        return df[keep].reset_index(drop=True)

    def _negate(self, df: pd.DataFrame, pos: int, positions: Sequence[int]) -> pd.DataFrame:
        """``df`` without the matches some event of negated item ``pos`` could complete."""
        if not len(df):
            return df
        neg = self._single(pos)
        pairs = self._pairs(df.assign(_row=np.arange(len(df))), neg)
        hit = self._window_ok(pairs)
        for c in self.p.checks_between([pos], positions):
            if hit.any():
                hit &= self._check(c, pairs)
        rejected = np.unique(pairs["_row"].to_numpy()[hit])
        return df.drop(index=rejected).reset_index(drop=True)

    def node(self, node: Node, out: list[NodeCount], names: Sequence[str]) -> pd.DataFrame:
        if node.leaf is not None:
            pos = self.p.leaves[node.leaf]
            df = self._kleene(pos) if self.p.items[pos].kleene else self._single(pos)
        else:
            left = self.node(node.left, out, names)  # type: ignore[arg-type]
            right = self.node(node.right, out, names)  # type: ignore[arg-type]
            df = self._join(left, right, self._positions(node.left.leaves),  # type: ignore[union-attr]
                            self._positions(node.right.leaves))  # type: ignore[union-attr]
        negations = node.negations if self.negate else ()
        for pos in negations:
            df = self._negate(df, pos, self._positions(node.leaves))
        count = active = None
        if node.counted:
            count = len(df)
            active = float(np.sum(self.w - (df["_hi"].to_numpy() - df["_lo"].to_numpy())))
        out.append(NodeCount(node.label(names), tuple(sorted(node.leaves)), node.counted, count, active, negations))
        return df

    def _positions(self, leaves) -> list[int]:
        return [self.p.leaves[i] for i in sorted(leaves)]


def match_texts(pattern: CompiledPattern, matches: pd.DataFrame, events: pd.DataFrame) -> list[str]:
    """The canonical text of each match (``ref=id,...``; a Kleene item ``ref=[id;id]`` with ascending
    ids): join_reference.match_text and join_eval.match_values give the same."""
    ids = events["id"].to_numpy()
    parts = []
    for k, pos in enumerate(pattern.leaves):
        item = pattern.items[pos]
        sep = "," if k else ""
        if item.kleene:
            parts.append([f"{sep}{item.ref}=[{';'.join(str(i) for i in sorted(int(ids[r]) for r in s))}]"
                          for s in matches[f"i{pos}_set"]])
        else:
            parts.append([f"{sep}{item.ref}={int(i)}" for i in ids[matches[f"i{pos}_e"].to_numpy()]])
    return ["".join(p) for p in zip(*parts, strict=True)] if parts else []


def evaluate_many(trees: Sequence[JoinTree], events: pd.DataFrame, *, negate: bool = True) -> LocalEvaluation:
    """Run ``trees`` on a pandas stream; each run's ``matches`` holds the root's partial matches
    and their texts (column ``value``). ``negate=False`` skips the NOT checks (the positive part)."""
    start = time.perf_counter()
    events = prepare_events(events)
    runs = []
    for tree in trees:
        ev = _Evaluator(tree.pattern, events, negate)
        nodes: list[NodeCount] = []
        root = ev.node(tree.root, nodes, tree.pattern.leaf_names())
        root = root.assign(value=match_texts(tree.pattern, root, events))
        runs.append(PlanRun(tree, root, nodes, 0.0))
    elapsed = time.perf_counter() - start
    for run in runs:
        run.time_s = elapsed
    ts = events["ts"]
    return LocalEvaluation(runs, elapsed, len(events), int(ts.min()) if len(ts) else None,
                           int(ts.max()) if len(ts) else None)


def evaluate(tree: JoinTree, events: pd.DataFrame, *, negate: bool = True) -> PlanRun:
    """Run one ``tree`` on a pandas stream (:func:`evaluate_many` of one tree)."""
    return evaluate_many([tree], events, negate=negate).runs[0]

