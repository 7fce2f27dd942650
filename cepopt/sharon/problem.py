"""The Sharon problem: a workload's sharing candidates, the cost model and the Sharon graph.

Built once per (instance, problem options); every method reads :attr:`SharonProblem.graph`, the
original Sharon graph (Def. 10, ``expand=False``) or the expanded graph (§7.1, Alg. 5-6,
``expand=True``, the default), except the compact models, which read the candidates directly.

Problem options (``--param`` keys, also accepted in the instance's ``params``):

* ``expand`` (bool, default True): resolve conflicts by expansion (§7.1).
* ``subsets`` ("cause" | "all", default "cause"): which queries an option may drop. "cause" is Alg. 5
  (only conflict-causing queries, only beneficial candidates are expanded); "all" allows every subset
  of every sharable pattern (the true optimum over per-query sharing decisions). Requires expand.
* ``comb`` ("both_required" | "missing_as_one"): Eq. 5 with an empty prefix/suffix (spec A3).
* ``max_options`` (int >= 1 or none, default 256): cap on the options of one candidate (Alg. 5 is exponential);
  the expansion reports ``options_cut`` when it truncates.
* ``max_vertices`` (int >= 1 or none, default 100000): the expanded graph is built (lazily, on first use by a
  graph method) only if it has at most this many options; otherwise graph methods report a
  MethodLimitError and the compact models remain available.

Instance ``params`` may also hold ``weights``: {"A,B": BValue} injected for full candidates (p, Q_p),
as in the paper's Fig. 4, whose weights are given without rates. Options of an injected candidate
have no weight, so such instances are built with ``expand=False``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cepopt.clock import passed
from cepopt.errors import CepoptError
from cepopt.model import Statistics, Workload
from cepopt.params import check_keys, parse_bool
from cepopt.sharon.cost import COMB_RULES, CostModel
from cepopt.sharon.expansion import expand as expand_graph
from cepopt.sharon.graph import SharonGraph, Vertex
from cepopt.sharon.patterns import detect_with_starts, query_types, sharing_classes
from cepopt.sharon.plan import SharonPlan

__all__ = ["SharonProblem", "build", "PROBLEM_OPTIONS", "parse_bool"]

PROBLEM_OPTIONS = frozenset({"expand", "subsets", "comb", "max_options", "max_vertices"})
DEFAULT_MAX_OPTIONS = 256
DEFAULT_MAX_VERTICES = 100_000
PARAM_KEYS = PROBLEM_OPTIONS | {"weights", "generator"}  # generator: informational


def _rates(statistics: Statistics, types: Mapping[str, tuple[str, ...]]) -> dict[str, float]:
    """Rate(E): the expected events per window when the statistics give them, else the stated rates.

    One unit for all types: the model is not scale-invariant (Comb is cubic in the rates, spec A4), so a
    partial events_per_window map, which would mix per-window counts with per-time-unit rates, is an error."""
    per_window = dict(statistics.events_per_window)
    if per_window:
        missing = sorted({t for seq in types.values() for t in seq} - set(per_window))
        if missing:
            raise CepoptError(f"statistics.events_per_window has no count for {', '.join(missing[:5])}: the "
                              "Sharon cost model needs one unit, so give events per window for every type or for none")
    source = per_window or dict(statistics.rates)
    out = {}
    for q, seq in types.items():
        for t in seq:
            if t not in source:
                raise CepoptError(f"query {q}: event type {t!r} has no rate in the statistics")
            out[t] = source[t]
    return out


@dataclass
class SharonProblem:
    """Everything a Sharon method needs. Construct with :meth:`from_workload` or :func:`build`."""

    workload: Workload
    statistics: Statistics
    types: dict[str, tuple[str, ...]]
    classes: dict[str, int]
    cost: CostModel
    candidates: dict[tuple[int, tuple[str, ...]], frozenset[str]]
    starts: dict[str, dict[tuple[str, ...], int]]
    original: SharonGraph
    expand: bool = True
    subsets: str = "cause"
    max_options: int | None = DEFAULT_MAX_OPTIONS
    max_vertices: int | None = DEFAULT_MAX_VERTICES
    injected: dict[tuple[str, ...], float] = field(default_factory=dict)
    expansion_stats: dict = field(default_factory=dict)
    non_beneficial: list[Vertex] = field(default_factory=list)
    _graph: SharonGraph | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_workload(cls, workload: Workload, statistics: Statistics, *, expand: bool = True,
                      subsets: str = "cause", comb: str = "both_required",
                      max_options: int | None = DEFAULT_MAX_OPTIONS,
                      max_vertices: int | None = DEFAULT_MAX_VERTICES,
                      weights: Mapping[tuple[str, ...], float] | None = None) -> SharonProblem:
        if subsets not in ("cause", "all"):
            raise CepoptError(f"params.subsets: expected 'cause' or 'all', got {subsets!r}")
        if comb not in COMB_RULES:
            raise CepoptError(f"params.comb: expected one of {', '.join(COMB_RULES)}, got {comb!r}")
        if subsets == "all" and not expand:
            raise CepoptError("params.subsets: subsets=all needs expand=true")
        for key, value in (("max_options", max_options), ("max_vertices", max_vertices)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise CepoptError(f"params.{key}: expected a positive integer, got {value!r}")
        types = query_types(workload)
        classes = sharing_classes(workload)
        cost = CostModel(types, _rates(statistics, types), comb)
        candidates, starts = detect_with_starts(types, classes)
        injected = {tuple(p): w for p, w in (weights or {}).items()}
        known = {p for _, p in candidates}
        for p in injected:
            if p not in known:
                raise CepoptError(f"params.weights: {','.join(p)} is not a sharable pattern of the workload")
        problem = cls(workload, statistics, types, classes, cost, candidates, dict(starts),
                      SharonGraph([], {}), expand, subsets, max_options, max_vertices, injected)
        vertices, rest = [], []
        for (c, p), qs in candidates.items():
            v = Vertex(p, qs, problem.bvalue(p, qs), c)
            (vertices if v.weight > 0 else rest).append(v)
        problem.original = SharonGraph.build(vertices, problem.starts)
        problem.non_beneficial = rest
        if not expand:
            problem._graph = problem.original
        return problem

    @property
    def graph(self) -> SharonGraph:
        """The graph the methods search: the original Sharon graph, or the expanded graph (built on
        first use; the compact models never need it). Raises MethodLimitError when the expansion
        would exceed ``max_vertices`` options."""
        return self.graph_by(None)

    def graph_by(self, deadline: float | None) -> SharonGraph:
        """:attr:`graph`, with its build (when not built yet) and its cells and cliques stopped at
        ``deadline`` (a :func:`cepopt.clock.now` value; :class:`~cepopt.clock.TimeLimitReached`, a
        MethodLimitError; nothing half-built is kept)."""
        if self._graph is None:
            from cepopt.errors import MethodLimitError
            from cepopt.sharon.expansion import expanded_size

            all_subsets = self.subsets == "all"
            size = expanded_size(self.original, self.max_options, self.non_beneficial, all_subsets,
                                 stop_above=self.max_vertices)  # counting stops at the cap
            if self.max_vertices is not None and size > self.max_vertices:
                raise MethodLimitError(
                    f"the expanded graph would have more than max_vertices={self.max_vertices} options; "
                    "use cpsat-compact / milp-compact, or expand=false")
            self._graph, self.expansion_stats = expand_graph(
                self.original, lambda p, qs, c: self.bvalue(p, qs), max_options=self.max_options,
                extra=self.non_beneficial, all_subsets=all_subsets, deadline=deadline)
        self._graph.prepare(deadline)
        return self._graph

    def index_of(self, graph: SharonGraph) -> dict[tuple, int]:
        """Vertex key -> index in ``graph``."""
        return {v.key: i for i, v in enumerate(graph.vertices)}

    # ------------------------------------------------------------------ cost model
    def bvalue(self, pattern: tuple[str, ...], queries: frozenset[str]) -> float:
        """Eq. 8 for (pattern, queries), or the injected weight of a full candidate."""
        if pattern in self.injected:
            c = self.classes[next(iter(queries))]
            if self.candidates.get((c, pattern)) != frozenset(queries):
                raise CepoptError(f"params.weights: {','.join(pattern)} has an injected weight for "
                                  f"its full query set only; build with expand=false")
            return self.injected[pattern]
        return self.cost.bvalue(pattern, ((q, self.starts[q][pattern]) for q in queries))

    def check(self, plan: SharonPlan) -> None:
        """Raise CepoptError unless ``plan`` is a valid sharing plan of this workload (Defs. 3, 6, 7)."""
        if not isinstance(plan, SharonPlan):
            raise CepoptError(f"not a Sharon plan: {plan!r}")
        used: dict[str, list[tuple[int, int, tuple[str, ...]]]] = defaultdict(list)
        for pattern, queries in plan.shared:
            label = ",".join(pattern)
            if len(pattern) < 2:
                raise CepoptError(f"plan: pattern {label} is shorter than 2 (not sharable)")
            if len(queries) < 2:
                raise CepoptError(f"plan: pattern {label} is shared by fewer than 2 queries")
            cls_ids = set()
            for q in sorted(queries):
                if q not in self.types:
                    raise CepoptError(f"plan: unknown query {q!r}")
                if pattern not in self.starts.get(q, {}):
                    raise CepoptError(f"plan: pattern {label} does not occur exactly once in query {q} "
                                      "(or is shared by no other query of its class)")
                cls_ids.add(self.classes[q])
                s = self.starts[q][pattern]
                for s2, e2, p2 in used[q]:
                    if s < e2 and s2 < s + len(pattern):
                        raise CepoptError(f"plan is invalid: {label} and {','.join(p2)} overlap in query {q}")
                used[q].append((s, s + len(pattern), pattern))
            if len(cls_ids) > 1:
                raise CepoptError(f"plan: pattern {label} is shared by queries with different windows, "
                                  "predicates or grouping")

    def query_bound(self):
        """A loose upper bound on Score over every plan of every option set, in one pass over the
        candidates: an entry saves a query q at most NonShared(q) (its Shared part is >= 0, and the fixed
        charge only lowers BValue), and q holds at most len(q) // 2 entries (patterns of length >= 2,
        disjoint in q). The bound of last resort when no time is left for :meth:`cell_bound`. With
        injected weights (original graph only), the sum of the positive weights."""
        if self.injected:
            return sum((max(v.weight, 0) for v in self.original.vertices), 0)
        sharing = {q for qs in self.candidates.values() for q in qs}
        return sum((len(self.types[q]) // 2 * self.cost.nonshared(q) for q in sorted(sharing)), 0)

    def cell_bound(self, deadline: float | None = None):
        """An upper bound on Score over every plan of every option set (original, expanded, subsets=all):
        a plan's score is at most the sum of its entries' gains (fixed charges are >= 0), and the
        entries holding a query q are disjoint in q; so spreading gain(p, q) evenly over p's positions
        in q, the best share per position, summed, bounds it. Exact for integer rates (Fractions).
        None when ``deadline`` (a :func:`cepopt.clock.now` value) passes first (a partial sum bounds nothing)."""
        best: dict[tuple[str, int], tuple] = {}  # (q, position) -> (gain, length) of the best share
        for k, ((_, p), queries) in enumerate(self.candidates.items()):
            if k % 256 == 0 and passed(deadline):
                return None
            n = len(p)
            placed = [(q, self.starts[q][p]) for q in queries]
            for (q, s), g in zip(placed, self.cost.gains(n, placed), strict=True):
                for pos in range(s, s + n):
                    old = best.get((q, pos))
                    if g > 0 and (old is None or g * old[1] > old[0] * n):  # g/n > old share, exactly
                        best[(q, pos)] = (g, n)
        by_length: dict[int, object] = defaultdict(int)
        for g, n in best.values():
            by_length[n] += g
        if all(isinstance(total, int) for total in by_length.values()):
            return math.ceil(sum((Fraction(total, n) for n, total in by_length.items()), Fraction(0)))
        return sum(total / n for n, total in by_length.items()) * (1 + 1e-12)  # float rounding

    # ------------------------------------------------------------------ helpers for methods
    def plan_of(self, indices, graph: SharonGraph | None = None) -> SharonPlan:
        graph = self.graph if graph is None else graph
        return SharonPlan.of((graph.vertices[i].pattern, graph.vertices[i].queries) for i in indices)

    def summary(self) -> dict:
        out = {"queries": len(self.types), "sharable_patterns": len(self.candidates),
               "original_vertices": len(self.original), "expand": self.expand, "subsets": self.subsets}
        if self._graph is not None:
            out["vertices"] = len(self._graph)
        out.update({k: v for k, v in self.expansion_stats.items() if k != "max_options"})
        return out


def _finite(x: int | float) -> bool:
    """Is x a finite float? (An int beyond float range overflows, like an infinite weight would.)"""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _cap_option(value: Any, key: str) -> int | None:
    """A cap: an integer >= 1, or None / "none" / "inf" / "unlimited" for no cap."""
    if value is None or isinstance(value, str) and value.strip().lower() in ("none", "inf", "unlimited"):
        return None
    try:
        cap = int(value) if isinstance(value, str) else value
    except ValueError:
        cap = None
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise CepoptError(f"params.{key}: expected an integer >= 1 or none, got {value!r}")
    return cap


_UNSET: Any = object()  # an option not given (None given means "no cap")


def build(instance, expand: Any = None, subsets: Any = None, comb: Any = None, max_options: Any = _UNSET,
          max_vertices: Any = _UNSET) -> SharonProblem:
    """Family.build: the problem of a Sharon instance; explicit options override ``instance.params``."""
    params = dict(instance.params or {})
    check_keys(params, PARAM_KEYS, "Sharon parameter")
    expand = parse_bool(params.get("expand", True) if expand is None else expand, "expand")
    subsets = params.get("subsets", "cause") if subsets is None else subsets
    comb = params.get("comb", "both_required") if comb is None else comb
    max_options = _cap_option(params.get("max_options", DEFAULT_MAX_OPTIONS) if max_options is _UNSET
                              else max_options, "max_options")
    max_vertices = _cap_option(params.get("max_vertices", DEFAULT_MAX_VERTICES) if max_vertices is _UNSET
                               else max_vertices, "max_vertices")
    weights_raw = params.get("weights", {})
    if not isinstance(weights_raw, Mapping):
        raise CepoptError("params.weights: expected an object {\"A,B\": weight}")
    weights = {}
    for key, w in weights_raw.items():
        if isinstance(w, bool) or not isinstance(w, int | float):
            raise CepoptError(f"params.weights.{key}: expected a number, got {w!r}")
        if not _finite(w):
            got = repr(w) if isinstance(w, float) else "an integer beyond float range"
            raise CepoptError(f"params.weights.{key}: expected a finite number, got {got}")
        weights[tuple(t.strip() for t in str(key).split(","))] = w
    if not math.isfinite(sum(abs(float(w)) for w in weights.values())):
        raise CepoptError("params.weights: the weights sum beyond float range")
    return SharonProblem.from_workload(instance.workload, instance.statistics, expand=expand,
                                       subsets=subsets, comb=comb, max_options=max_options,
                                       max_vertices=max_vertices, weights=weights)
