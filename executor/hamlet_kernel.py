"""Hamlet: shared online trend aggregation with graphlets, snapshots and per-burst decisions
(hamlet.md §3.3-§3.7, §3.10, §4.2), one partition and window at a time.

For each sharing group (Kleene type E, candidates Q_E) of a class, the events are walked in time
order. At the first event of each complete burst (cepopt.hamlet.graphlets.scope_bursts, the bursts the
optimizer prices from an embedded stream) the policy decides
which queries share it (hamlet.md §4.2 state machine):

* *extend*: the burst joins the open shared graphlet (same query set, graphlet still active);
* *share / merge*: the open graphlet, if any, is closed and a new shared graphlet starts; its
  graphlet-level snapshot x gets, per query, ``start(E,q) + the sum of the values of ALL earlier
  matched events of the types pt(E,q)`` -- the spec's correction of Alg. 1 line 13 (§3.7, §8.2), read
  from per-type running sums that include every earlier graphlet;
* *split / none*: the open graphlet is closed (its events are evaluated per query, §8.20) and the
  burst is processed per query (GRETA).

Inside a shared graphlet an event's value is a linear expression over snapshots, the same for all
sharing queries: a coefficient map ``c`` (counts) and, for COUNT(E)/SUM(E.attr)/AVG, maps ``d`` per
weight (§3.10). An event whose signatures (cepopt.hamlet.graphlets.signatures: matched, blocked
external edges, blocked in-burst predecessors) differ between the sharing queries gets an event-level
snapshot z holding its per-query value (Def. 3.11, §3.7 identity test): exactly the snapshots the
burst's decision priced. An event no sharing query matches adds nothing. When the graphlet closes its
aggregated maps are evaluated once per query and folded into the per-query running sums and results.

Operations counted. ``operations`` is in the unit of the cost model, Eq. 7 (and Eqs. 4/6): one
operation per predecessor edge read, times the width of what is read, the same unit for both
modes so that plans can be ranked (as the Gloria kernel counts Eqs. 2-4 units). With
``pe(e, q)`` = the earlier (strict ``<``) events of the scope matched by q, of a type in
``pt(e.type, q)``, whose edge predicates hold (hamlet.md §2.3, the GRETA graph):

* ``pred_edges`` (NonShared = k*b*n): every event processed per query q counts ``|pe(e, q)|``,
  once per query -- whether the kernel scans the stored events or reads per-type running sums;
* ``shared_edges`` (the b*n*s_p term): every event of a shared graphlet counts
  ``|pe(e)| * s`` once for all sharing queries, where ``pe(e)`` is the union of ``pe(e, q)`` over
  the sharing queries that match e (e's predecessor edges in the merged Hamlet graph, external
  ones included although the kernel reads them through the graphlet-level snapshot) and ``s`` is
  the width of e's coefficient vector in Algorithm 1: the number of snapshots of the graphlet so
  far, the graphlet-level snapshot, the event-level snapshots of earlier events and e's own, if it
  gets one (Eq. 7's s_p is this width at the end of the burst);
* ``snapshot_edges`` (the s_c*k*g*t term: per snapshot and query, the events of the graphlets it
  reads): a snapshot's value is computed per sharing query by reading events. The graphlet-level
  snapshot x of q is computed as §3.7 (b) says, incrementally: one read of q's previous
  graphlet-level snapshot in the scope (if any) plus every event matched by q of a type in
  pt(E, q) that arrived since that snapshot (all earlier ones for q's first x: Eq. 5's graphlets);
  an event-level snapshot z of event e (Def. 3.11) reads, per sharing query q that matches e,
  q's graphlet-level snapshot x for every predecessor before the graphlet (1; when q has an edge
  predicate into E, which may block some of them, its external predecessor edges instead) plus
  its in-graphlet predecessors, one per event (Eq. 7 prices snapshot maintenance by the events of
  the graphlets read, g*t, not by n);
* ``evaluations`` (the O(k*s) final-count update of §3.8, which Eq. 7 leaves out): the expression
  terms evaluated per query when a graphlet closes (§8.20).

``operations = pred_edges + shared_edges + snapshot_edges + evaluations``. A non-shared run gives
exactly Σ_q Σ_e |pe(e, q)|, the quantity Eq. 4 (k*n^2) bounds and GRETA's ``operations``.

``fastpath_operations`` keeps the work the running-sum implementation does, the count this kernel
reported before: ``propagations`` (non-shared: the predecessor edges per query, as above; shared:
one snapshot term per event plus the expression terms of its in-graphlet predecessors -- everything
before the graphlet is one term, read from the graphlet-level snapshot), ``snapshot_reads`` (events
whose values make up a graphlet-level snapshot; for an event-level snapshot, per query one
running-sum read plus the expression terms of its in-graphlet predecessors) and ``evaluations``.
Shared and non-shared are counted in different units there (a snapshot read vs n edges), which is
why it cannot rank plans the way Eq. 7 does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cepopt.executor.greta import QueryState, Scope, _num, greta_scope, scopes
from cepopt.executor.results import AggAccumulator, results_frame
from cepopt.hamlet.graphlets import scope_bursts, scope_label
from cepopt.hamlet.policy import GroupState, Policy, get_policy
from cepopt.hamlet.problem import SharingClass, compile_workload, mean_t, query_t

__all__ = ["hamlet_class", "run_local"]

_COUNTERS = ("propagations", "values", "snapshots", "snapshot_reads", "evaluations", "bursts",
             "shared_bursts", "graphlets", "pred_edges", "shared_edges", "snapshot_edges")


def _add_map(dst: dict, src: dict, factor=1) -> None:
    for k, v in src.items():
        dst[k] = dst.get(k, 0) + v * factor


class _Graphlet:
    """An open shared graphlet: sharing queries, external snapshot map, committed / pending maps."""

    def __init__(self, queries: tuple[str, ...], weights: tuple):
        self.queries = queries
        self.weights = weights            # attr keys of the d maps (None = COUNT(E))
        self.ext: dict | None = None      # {x: 1} once created
        self.c_com: dict = {}             # sum of c over events of earlier tie groups
        self.d_com: dict = {w: {} for w in weights}
        self.c_pen: dict = {}
        self.d_pen: dict = {w: {} for w in weights}
        self.pen_ts = None
        self.terms_com = 0                # sum of |c(e)| over committed events (faithful cost)
        self.terms_pen = 0
        self.events: list[tuple[int, dict, dict]] = []   # (pos, c, d) for the scan path
        self.committed_upto = 0          # events[:committed_upto] have ts < current tie group
        self.nsnap = 0                    # snapshots of this graphlet so far (coefficient vector width)

    def advance(self, ts) -> None:
        if self.pen_ts is not None and ts != self.pen_ts:
            _add_map(self.c_com, self.c_pen)
            for w in self.weights:
                _add_map(self.d_com[w], self.d_pen[w])
            self.c_pen = {}
            self.d_pen = {w: {} for w in self.weights}
            self.terms_com += self.terms_pen
            self.terms_pen = 0
            self.committed_upto = len(self.events)
        self.pen_ts = ts

    def add(self, pos: int, c: dict, d: dict) -> None:
        _add_map(self.c_pen, c)
        for w in self.weights:
            _add_map(self.d_pen[w], d.get(w, {}))
        self.terms_pen += len(c)
        self.events.append((pos, c, d))

    def totals(self) -> tuple[dict, dict]:
        c = dict(self.c_com)
        _add_map(c, self.c_pen)
        d = {}
        for w in self.weights:
            d[w] = dict(self.d_com[w])
            _add_map(d[w], self.d_pen[w])
        return c, d


class _Group:
    """Shared execution of one sharing group (E, Q_E) over one scope."""

    def __init__(self, cls: SharingClass, scope: Scope, kleene: str, cands: tuple[str, ...], policy: Policy,
                 metrics: dict, decisions: list | None, trace: list | None = None, label: str = ""):
        self.trace = trace
        self.label = label
        self.cls = cls
        self.scope = scope
        self.E = kleene
        self.cands = cands
        self.policy = policy
        self.metrics = metrics
        self.decisions = decisions
        self.cqs = {q: cls.query(q) for q in cands}
        self.states = {q: QueryState(self.cqs[q], scope) for q in cands}
        self.masks = {q: scope.masks[q] for q in cands}
        self.t = {q: query_t(len(self.cqs[q].types), cls.t_rule) for q in cands}
        self.S: dict[int, dict[str, list]] = {}     # snapshot table: sid -> {q: value}
        self.G: _Graphlet | None = None
        self.gstate = GroupState()
        self.col = {q: j for j, q in enumerate(cands)}
        self.sigs: dict[int, tuple] = {}  # per decided burst event: its signatures (one per candidate)
        self.ee_edges = {q: [ep for ep in self.cqs[q].edges if ep.src == kleene and ep.dst == kleene]
                         for q in cands}
        self.ext_edges = {q: [ep for ep in self.cqs[q].edges if ep.dst == kleene] for q in cands}
        # Eq. 7 unit counting: candidates of pe(e, q) for an E event (matched, type in pt(E, q)) and,
        # per event, the number of scope events strictly before it
        self.pmask = {q: self.masks[q] & np.isin(scope.types, list(self.cqs[q].pt_map.get(kleene, ())))
                      for q in cands}
        self.before = np.searchsorted(scope.ts, scope.ts, side="left")
        self._cum: dict[frozenset, np.ndarray] = {}
        self.last_x: dict[str, int] = {}   # per query: the event of its last graphlet-level snapshot

    # -- snapshots ---------------------------------------------------------------------------
    def _new_snapshot(self, values: dict[str, list], kind: str) -> int:
        sid = len(self.S)
        if self.trace is not None:
            self.trace.append((kind, self.E, {q: v[0] for q, v in values.items()}))
        self.S[sid] = values
        self.metrics["snapshots"] += 1
        if self.G is not None:
            self.G.nsnap += 1
        return sid

    def _pe_mask(self, q: str, i: int) -> np.ndarray:
        """pe(e_i, q) as a mask over the scope events before e_i (hamlet.md §2.3)."""
        lo = int(self.before[i])
        m = self.pmask[q][:lo].copy()
        eps = self.ext_edges[q]
        if eps:
            sc = self.scope
            rec = sc.record(i)
            for j in np.flatnonzero(m).tolist():
                if not all(ep.holds(sc.record(j), rec) for ep in eps if ep.src == sc.types[j]):
                    m[j] = False
        return m

    def _cumsum(self, qs: frozenset) -> np.ndarray:
        cum = self._cum.get(qs)
        if cum is None:
            union = np.zeros(self.scope.n, dtype=bool)
            for q in qs:
                union |= self.pmask[q]
            cum = self._cum[qs] = np.r_[0, np.cumsum(union)]
        return cum

    def _union_edges(self, i: int, queries: Sequence[str]) -> int:
        """|pe(e_i)| in the merged graph of ``queries``: the union of pe(e_i, q) over the queries
        that match e_i (one Hamlet graph node per event, an edge if it is an edge for some query)."""
        qs = [q for q in queries if self.masks[q][i]]
        if not qs:
            return 0
        if not any(self.ext_edges[q] for q in qs):
            return int(self._cumsum(frozenset(qs))[self.before[i]])
        union = np.zeros(int(self.before[i]), dtype=bool)
        for q in qs:
            union |= self._pe_mask(q, i)
        return int(union.sum())

    def _eval(self, q: str, c: dict, d: dict) -> list:
        """A shared expression's value for query q (§3.10)."""
        st = self.states[q]
        m, width = st.m, st.width
        vec = [0] * width
        for sid, coef in c.items():
            v = self.S[sid][q]
            for j in range(width):
                if v[j]:
                    vec[j] += coef * v[j]
        for j, ((_ref, attr), ttype) in enumerate(zip(st.cq.targets, st.cq.target_types, strict=True)):
            if ttype != self.E:
                continue
            for sid, coef in d.get(None, {}).items():
                vec[1 + j] += coef * self.S[sid][q][0]
            if attr is not None:
                for sid, coef in d.get(attr, {}).items():
                    vec[1 + m + j] += coef * self.S[sid][q][0]
        return vec

    def _weights(self, queries: Sequence[str]) -> tuple:
        ws: dict = {}
        for q in queries:
            cq = self.cqs[q]
            for (_ref, attr), ttype in zip(cq.targets, cq.target_types, strict=True):
                if ttype == self.E:
                    ws[None] = None
                    if attr is not None:
                        ws[attr] = None
        return tuple(ws)

    # -- graphlet life cycle -----------------------------------------------------------------
    def close(self) -> None:
        """Evaluate the open graphlet once per query and fold it into the per-query sums (§4.2 split)."""
        G = self.G
        if G is None:
            return
        self.G = None
        if not G.events:
            return
        c, d = G.totals()
        for q in G.queries:
            st = self.states[q]
            mask = self.masks[q]
            matched = sum(1 for pos, _, _ in G.events if mask[pos])
            self.metrics["evaluations"] += len(c) + sum(len(v) for v in d.values())
            vec = self._eval(q, c, d)
            st.add_committed(self.E, vec, [None] * st.m, [None] * st.m, matched)
            if self.E in st.cq.end and vec[0]:
                st.add_result(vec, [None] * st.m, [None] * st.m)
            if st.scan:
                # the scan path needs every event's own value as a later predecessor
                for pos, ce, de in G.events:
                    if mask[pos]:
                        st.stored.append((pos, self._eval(q, ce, de), [None] * st.m, [None] * st.m))

    def _open(self, queries: tuple[str, ...]) -> None:
        self.close()
        self.G = _Graphlet(queries, self._weights(queries))
        self.metrics["graphlets"] += 1

    # -- burst decisions -----------------------------------------------------------------------
    def decide(self, positions: list[int], burst, sigs: list[tuple]) -> tuple[str, ...]:
        dec = self.policy.decide(burst, self.gstate, lambda qs: mean_t(self.t, qs))
        self.sigs.update(zip(positions, sigs, strict=True))
        self.metrics["bursts"] += 1
        if self.decisions is not None:
            self.decisions.append(dec)
        queries = tuple(sorted(dec.queries))
        if len(queries) >= 2:
            self.metrics["shared_bursts"] += 1
            extend = (burst.continues and self.gstate.shared is not None
                      and set(self.gstate.shared) == set(queries) and self.G is not None)
            if not extend:
                self._open(queries)
        else:
            self.close()
        self.gstate.after(burst, queries)
        return queries

    # -- one shared event ----------------------------------------------------------------------
    def shared_event(self, i: int) -> None:
        G = self.G
        sc = self.scope
        ts_i = sc.ts[i]
        G.advance(ts_i)
        queries = G.queries
        if G.ext is None:
            # graphlet-level snapshot x: start(E,q) + every earlier matched predecessor (§3.7 (b))
            values = {}
            for q in queries:
                st = self.states[q]
                tot = [0] * st.width
                if self.E in st.cq.start:
                    tot[0] = 1
                if st.scan:
                    for pos, val, _, _ in st.stored:
                        if sc.types[pos] in st.pt.get(self.E, ()) and sc.ts[pos] < ts_i:
                            self.metrics["snapshot_reads"] += 1
                            for j in range(st.width):
                                tot[j] += val[j]
                else:
                    for t in st.pt.get(self.E, ()):
                        acc = st.acc.get(t)
                        if acc is not None:
                            self.metrics["snapshot_reads"] += st.acc_n[t]
                            for j in range(st.width):
                                tot[j] += acc[j]
                values[q] = tot
                # Eq. 5 as §3.7 (b) computes it: the previous graphlet-level snapshot of q (one read)
                # plus the events of the graphlets since, i.e. q's matched pt-type events in between
                cum = self._cumsum(frozenset((q,)))
                last = self.last_x.get(q)
                self.metrics["snapshot_edges"] += int(cum[self.before[i]]) if last is None else \
                    1 + int(cum[self.before[i]] - cum[self.before[last]])
                self.last_x[q] = i
            G.ext = {self._new_snapshot(values, 'graphlet'): 1}
        committed = G.events[:G.committed_upto]
        sigs = {self.sigs[i][self.col[q]] for q in queries}
        common_blocked = next(iter(sigs))
        if len(sigs) == 1 and common_blocked is None:
            # matched by no sharing query: value 0 for all of them
            c, d = {}, {w: {} for w in G.weights}
        elif len(sigs) == 1:
            # one signature: no external edge blocked, the same in-burst predecessors blocked for all
            c = dict(G.ext)
            d = {w: {} for w in G.weights}
            if not common_blocked:
                _add_map(c, G.c_com)
                for w in G.weights:
                    _add_map(d[w], G.d_com[w])
                self.metrics["propagations"] += 1 + G.terms_com
            else:
                terms = 1
                for pos, ce, de in committed:
                    if pos in common_blocked:
                        continue
                    _add_map(c, ce)
                    terms += len(ce)
                    for w in G.weights:
                        _add_map(d[w], de.get(w, {}))
                self.metrics["propagations"] += terms
            for w in G.weights:
                wv = 1 if w is None else sc.attr(i, w)
                if wv:
                    _add_map(d[w], c, _num(wv))
        else:
            # event-level snapshot z: Eq. 2 per query (Def. 3.11)
            values = {}
            for q in queries:
                st = self.states[q]
                if not self.masks[q][i]:
                    values[q] = [0] * st.width
                    continue
                before = st.propagations
                tot, mn, mx = st.predecessors(i)  # external part (running sums or scan)
                ext = st.propagations - before   # external predecessor edges of e for q
                st.propagations = before         # (st.propagations counts per-query processing only)
                self.metrics["propagations"] += ext
                self.metrics["snapshot_reads"] += 1
                # everything before the graphlet is q's graphlet-level snapshot x (one read), unless
                # an edge predicate into E can block an external edge: then they are scanned
                self.metrics["snapshot_edges"] += ext if self.ext_edges[q] else 1
                eps = self.ee_edges[q]
                for pos, ce, de in committed:
                    if not self.masks[q][pos]:
                        continue
                    if eps and not all(ep.holds(sc.record(pos), sc.record(i)) for ep in eps):
                        continue
                    self.metrics["snapshot_edges"] += 1
                    # reading an in-graphlet event's value for q evaluates its expression
                    self.metrics["snapshot_reads"] += len(ce) + sum(len(x) for x in de.values())
                    v = self._eval(q, ce, de)
                    for j in range(st.width):
                        tot[j] += v[j]
                values[q] = st.value(i, (tot, mn, mx))[0]
            c = {self._new_snapshot(values, 'event'): 1}
            d = {w: {} for w in G.weights}
            self.metrics["propagations"] += 1
        # Eq. 7's b*n*s_p, per event: |pe(e)| edges, each read at the coefficient vector's width
        self.metrics["shared_edges"] += self._union_edges(i, queries) * G.nsnap
        G.add(i, c, d)

    # -- the walk -------------------------------------------------------------------------------
    def run(self) -> None:
        sc = self.scope
        group = scope_bursts(self.cls, sc, self.label, self.E, self.cands)
        relevant, solo = group.relevant, group.solo
        starts = {positions[0]: (positions, burst, sigs) for positions, burst, sigs in group.bursts}
        in_burst = np.zeros(sc.n, dtype=bool)
        for positions, _, _ in group.bursts:
            in_burst[positions] = True
        types = frozenset().union(*(self.cqs[q].types for q in self.cands))
        closer = relevant & np.isin(sc.types, list(types - {self.E}))
        shared: tuple[str, ...] = ()
        for i in np.flatnonzero(relevant).tolist():
            ts_i = sc.ts[i]
            for st in self.states.values():
                st.advance(ts_i)
            if closer[i] or solo[i]:
                self.close()
                shared = ()
            if i in starts:
                shared = self.decide(*starts[i])
            if in_burst[i] and shared:
                self.shared_event(i)
                for q in self.cands:
                    if q not in shared and self.masks[q][i]:
                        self.states[q].process(i)
            else:
                for q in self.cands:
                    if self.masks[q][i]:
                        self.states[q].process(i)
        self.close()
        for st in self.states.values():
            self.metrics["propagations"] += st.propagations
            self.metrics["pred_edges"] += st.propagations
            self.metrics["values"] += st.values


def hamlet_class(cls: SharingClass, scope: Scope, policy: Policy, accs: dict[str, AggAccumulator],
                 metrics: dict, decisions: list | None = None, trace: list | None = None, label: str = "") -> None:
    """Hamlet on one scope of a class: groups shared per ``policy``, every other query by GRETA.
    ``label`` is the scope of its bursts (cepopt.hamlet.graphlets.scope_label, as the optimizer's)."""
    for key in _COUNTERS:
        metrics.setdefault(key, 0)
    grouped = {q for _e, qs in cls.groups for q in qs}
    for cq in cls.queries:
        if cq.name not in grouped:
            st = greta_scope(cq, scope)
            st.emit(accs[cq.name])
            metrics["propagations"] += st.propagations
            metrics["pred_edges"] += st.propagations
            metrics["values"] += st.values
    for e, cands in cls.groups:
        grp = _Group(cls, scope, e, cands, policy, metrics, decisions, trace, label)
        grp.run()
        for q, st in grp.states.items():
            st.emit(accs[q])


def finish_metrics(metrics: dict) -> dict:
    """``operations`` in Eq. 7 units and ``fastpath_operations`` (see the module docstring)."""
    metrics["fastpath_operations"] = (metrics.get("propagations", 0) + metrics.get("snapshot_reads", 0)
                                      + metrics.get("evaluations", 0))
    metrics["operations"] = (metrics.get("pred_edges", 0) + metrics.get("shared_edges", 0)
                             + metrics.get("snapshot_edges", 0) + metrics.get("evaluations", 0))
    return metrics


def run_local(workload, events: pd.DataFrame, policy: str | Policy = "dynamic", params: dict | None = None,
              decisions: list | None = None, trace: list | None = None) -> tuple[pd.DataFrame, dict]:
    """Hamlet over a whole stream in-process (no Spark): results table and operation counters.
    ``decisions`` collects the policy's Decision per burst, ``trace`` every snapshot created as
    (kind, type, {query: count value}). A :class:`cepopt.hamlet.policy.ReplayPolicy` replays a plan's
    decisions on the bursts it was made for (CepoptError on other bursts)."""
    start = time.perf_counter()
    pol = get_policy(policy) if isinstance(policy, str) else policy
    classes = compile_workload(workload, params)
    accs = {cq.name: AggAccumulator(cq.query) for cls in classes for cq in cls.queries}
    metrics: dict = dict.fromkeys(_COUNTERS, 0)
    for ci, cls in enumerate(classes):
        for key, k, part in scopes(cls, events):
            scope = Scope(cls, part, key, k)
            hamlet_class(cls, scope, pol, accs, metrics, decisions, trace, scope_label(ci, scope))
    pol.finished(metrics["bursts"])
    rows = [r for acc in accs.values() for r in acc.rows()]
    finish_metrics(metrics)
    metrics["time_s"] = time.perf_counter() - start
    return results_frame(rows), metrics
