"""Gloria plan execution: per transition, per Q-set, shared snapshot expressions or per-query values
(specs/gloria.md §2.2, cepopt/gloria/plan.py), one partition and window at a time.

Events are taken one time stamp at a time. Every block of the plan's partition of a transition
t = (Ei, Ej) keeps a *running aggregate* of the Ei events folded into it so far, and an Ej event takes
the running aggregates of its incoming blocks as its contributions (events of one time stamp never
extend each other):

* an unshared block {q}: the running sum of q's values of the predecessors (Eq. 2);
* a shared block (S)^X with X = Ei (a fresh share, local snapshot or merge): each predecessor e' is
  folded in as its own snapshot variable sp_e', holding its per-query values for S (``len = 1``);
* a shared block (S)^X with an upstream X (REUSE): each predecessor's own expression over the
  X-snapshots is added term by term (``len = |X|`` terms at most, Eq. 3). When a predecessor cannot
  hand on one expression for all of S (a query of S does not match it, has it as a start type, or
  reaches it through a transition of another block), it is folded in as a snapshot instead: the
  executor re-snapshots where the plan's assumption does not hold, so every plan gives the
  non-shared results (Gloria's own correctness claim, checked here by brute force). A query whose
  window has already closed (queries of one slide but different lengths share one scope) is ignored.

``value(e, q) = start(e, q) + the sum of e's contributions for q``; a shared contribution is evaluated
for q (``len`` operations) only where it is needed: at end types (results), to fill a snapshot, and
for unshared successors (Eq. 4).

Counted, as the cost model prices them: ``propagations`` = one per (predecessor, event, query) for
unshared blocks (Eq. 2, pairwise) and one per expression term folded into a shared block (Eq. 3, which
has no |E| factor: an event reads its blocks' running expressions for free); ``evaluations`` (Eq. 4
terms); ``snapshots``; ``reused`` (predecessor expressions handed on unchanged). Only COUNT(*) is
shared; queries with other aggregates, and every query with edge predicates, run with GRETA
(:mod:`cepopt.executor.greta`) and are listed in ``metrics["greta_queries"]``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from cepopt.executor.greta import Scope, greta_scope, scopes
from cepopt.executor.results import AggAccumulator, results_frame
from cepopt.hamlet.problem import SharingClass, compile_workload

__all__ = ["gloria_class", "run_local"]


def _blocks_for(plan: Any, source: str, target: str, queries: list[str]) -> list[tuple[tuple[str, ...], str | None]]:
    """The plan's blocks of transition (source, target) restricted to ``queries``; queries the plan
    does not place run unshared."""
    out = []
    placed: set[str] = set()
    for block in (plan.blocks(source, target) if plan is not None else ()):
        qs = tuple(q for q in block.queries if q in queries)
        if not qs:
            continue
        placed.update(qs)
        if block.snapshot is not None and len(qs) >= 2:
            out.append((qs, block.snapshot))
        else:
            out.extend(((q,), None) for q in qs)
    out.extend(((q,), None) for q in queries if q not in placed)
    return out


class _GloriaScope:
    """One scope (group and window) of a class under one plan: events are taken one time stamp at a
    time; every block of every transition keeps a running aggregate of the predecessors folded so far."""

    def __init__(self, cls: SharingClass, scope: Scope, plan: Any, queries: list[str], metrics: dict):
        self.scope = scope
        self.cqs = {q: cls.query(q) for q in queries}
        self.queries = queries
        self.metrics = metrics
        self.pt = {q: self.cqs[q].pt_map for q in queries}
        types = sorted(frozenset().union(*(self.cqs[q].types for q in queries)))
        # per target type: (source type, qs, snapshot type, running state) of every block reaching it;
        # per source type: the same entries, to fold its events into
        self.incoming: dict[str, list[list]] = {}
        self.outgoing: dict[str, list[list]] = {}
        for tj in types:
            for ti in types:
                qs = [q for q in queries if ti in self.pt[q].get(tj, ())]
                for block_qs, snapshot in (_blocks_for(plan, ti, tj, qs) if qs else ()):
                    # running state: [sum, folded] (unshared) or {snapshot id: coefficient} (shared)
                    entry = [ti, block_qs, snapshot, [0, 0] if snapshot is None else {}]
                    self.incoming.setdefault(tj, []).append(entry)
                    self.outgoing.setdefault(ti, []).append(entry)
        self.snap: list[dict[str, int]] = []
        self.sp_of: dict[tuple[int, tuple[str, ...]], int] = {}
        self.parts: dict[int, list[tuple[str, tuple[str, ...], str | None, Any]]] = {}
        self.cache: dict[tuple[int, str], int] = {}
        self.results = dict.fromkeys(queries, 0)

    def matched(self, pos: int, q: str) -> bool:
        return bool(self.scope.masks[q][pos])

    def value(self, pos: int, q: str) -> int:
        """count(e, q), evaluating e's shared contributions for q (Eq. 4) once."""
        if not self.matched(pos, q):
            return 0
        key = (pos, q)
        if key in self.cache:
            return self.cache[key]
        etype = self.scope.types[pos]
        v = 1 if etype in self.cqs[q].start else 0
        for _ti, qs, snapshot, payload in self.parts.get(pos, ()):
            if q not in qs:
                continue
            if snapshot is None:
                v += payload
            else:
                self.metrics["evaluations"] += len(payload)
                snap = self.snap
                v += sum(coef * snap[sid][q] for sid, coef in payload.items())
        self.cache[key] = v
        return v

    def snapshot_of(self, pos: int, qs: tuple[str, ...]) -> int:
        key = (pos, qs)
        sid = self.sp_of.get(key)
        if sid is None:
            sid = len(self.snap)
            self.snap.append({q: self.value(pos, q) for q in qs})
            self.sp_of[key] = sid
            self.metrics["snapshots"] += 1
        return sid

    def expression(self, pos: int, qs: tuple[str, ...], snapshot: str) -> dict | None:
        """e's expression over ``snapshot``-type snapshots valid for every query of qs, or None."""
        etype = self.scope.types[pos]
        # a query whose window has closed before e never reads e's expression again: ignore it
        live = [q for q in qs if self.scope.ts[pos] < self.scope.ends[q]]
        if not all(self.matched(pos, q) and etype not in self.cqs[q].start for q in live):
            return None
        expr: dict = {}
        used = set()
        for ti, qs2, snap2, payload in self.parts.get(pos, ()):
            inter = set(qs) & set(qs2)
            if not inter:
                continue
            if snap2 != snapshot or not set(qs) <= set(qs2):
                return None
            used.add(ti)
            for sid, coef in payload.items():
                expr[sid] = expr.get(sid, 0) + coef
        # every query of qs must reach e through exactly these transitions
        for q in live:
            if {ti for ti in self.pt[q].get(etype, ())} != used:
                return None
        return expr

    def read(self, pos: int) -> None:
        """e's contributions: the running aggregates of its blocks (predecessors of earlier time stamps).

        An unshared block costs one propagation per folded predecessor (Eq. 2: pairwise); reading a
        shared block's running expression is free, as in Eq. 3, which has no |E| factor."""
        parts = []
        for ti, qs, snapshot, state in self.incoming.get(self.scope.types[pos], ()):
            if not any(self.matched(pos, q) for q in qs):
                continue
            if snapshot is None:
                self.metrics["propagations"] += state[1]
                parts.append((ti, qs, None, state[0]))
            else:
                parts.append((ti, qs, snapshot, dict(state)))
        self.parts[pos] = parts

    def fold(self, pos: int) -> None:
        """Add e to the running aggregate of every block leaving its type: its value (unshared), its
        own snapshot (X = its type, or when its expression is not one for the whole block), or its
        expression over the block's X snapshots (REUSE, Eq. 3: one propagation per term)."""
        etype = self.scope.types[pos]
        for _tj, qs, snapshot, state in self.outgoing.get(etype, ()):
            if snapshot is None:
                if self.matched(pos, qs[0]):
                    state[0] += self.value(pos, qs[0])
                    state[1] += 1
                continue
            if not any(self.matched(pos, q) for q in qs):
                continue
            sub = self.expression(pos, qs, snapshot) if snapshot != etype else None
            if sub is None:
                sub = {self.snapshot_of(pos, qs): 1}
            else:
                self.metrics["reused"] += 1
            self.metrics["propagations"] += len(sub)
            for sid, coef in sub.items():
                state[sid] = state.get(sid, 0) + coef

    def run(self, positions: list[int]) -> None:
        """Process events in time order; events of one time stamp never extend each other."""
        ts = self.scope.ts
        i = 0
        while i < len(positions):
            j = i
            while j < len(positions) and ts[positions[j]] == ts[positions[i]]:
                j += 1
            batch = positions[i:j]
            for pos in batch:
                self.read(pos)
            for pos in batch:
                etype = self.scope.types[pos]
                for q in self.queries:
                    if self.matched(pos, q) and etype in self.cqs[q].end:
                        self.results[q] += self.value(pos, q)
                self.fold(pos)
            i = j


def gloria_class(cls: SharingClass, scope: Scope, plan: Any, accs: dict[str, AggAccumulator],
                 metrics: dict) -> None:
    """Execute ``plan`` (a GloriaPlan, None = unshared) on one scope of a class."""
    for key in ("propagations", "evaluations", "snapshots", "values", "reused"):
        metrics.setdefault(key, 0)
    greta_qs = [cq for cq in cls.queries
                if cq.edges or any(not a.is_count_star for a in cq.query.aggregates)]
    metrics.setdefault("greta_queries", set()).update(cq.name for cq in greta_qs)
    for cq in greta_qs:
        st = greta_scope(cq, scope)
        st.emit(accs[cq.name])
        metrics["propagations"] += st.propagations
    names = [cq.name for cq in cls.queries if cq not in greta_qs]
    if not names:
        return
    run = _GloriaScope(cls, scope, plan, names, metrics)
    anyq = np.zeros(scope.n, dtype=bool)
    for q in names:
        anyq |= scope.masks[q]
    run.run(np.flatnonzero(anyq).tolist())
    metrics["values"] += len(run.cache)
    for q in names:
        if run.results[q]:
            accs[q].add(scope.group, scope.window, run.results[q], {})


def run_local(workload, plan: Any, events: pd.DataFrame, params: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Execute a Gloria plan over a whole stream in-process (no Spark)."""
    start = time.perf_counter()
    classes = compile_workload(workload, params, mixed_lengths=True)
    accs = {cq.name: AggAccumulator(cq.query) for cls in classes for cq in cls.queries}
    metrics: dict = {}
    for cls in classes:
        for key, k, part in scopes(cls, events):
            gloria_class(cls, Scope(cls, part, key, k), plan, accs, metrics)
    rows = [r for acc in accs.values() for r in acc.rows()]
    metrics["greta_queries"] = sorted(metrics.get("greta_queries", ()))
    metrics["operations"] = metrics.get("propagations", 0) + metrics.get("evaluations", 0)
    metrics["time_s"] = time.perf_counter() - start
    return results_frame(rows), metrics
