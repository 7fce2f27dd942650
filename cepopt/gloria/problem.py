"""The Gloria problem: template, frequencies and the pool structure every method works on.

Built from an instance by :func:`build`. The decision is one annotated partition per template
transition (specs/gloria.md §7.1); the problem groups transitions into **pools**:

* a **SEQ pool** is one template transition ``(Ei, Ej)`` for the queries of one *sharing class* that
  use it as a SEQ transition (not inside one of their Kleene cycles);
* a **Kleene super-pool** is one *Kleene group*: the queries of one sharing class with the identical
  outermost Kleene sub-pattern (§6, §7.1 and spec §10 A12). It covers every transition of the cycle and
  has the options "all unshared" or "all queries shared with snapshot type X", X a type of the cycle
  (Lemmas 6.1 and 6.4).

Queries of different sharing classes never share (spec §10 A13, applied conservatively): a class is
the same GROUP-BY, equivalence predicates, local filters and conditions, and window slide (panes of a
common slide), and for MIN/MAX queries the same aggregates (A16).

The cost of a plan (cost.py) is a sum of terms over pools: a constant start term, a unary term per
pool (the internal cycle weight of a super-pool and the end edges) and a pairwise term per
:class:`PairTerm`: two consecutive transitions ``t = (Ei, Ej)`` and ``t2 = (Ej, Eh)`` of some query in
different pools, priced as the cost of ``Ej`` with predecessor ``Ei`` (§3.2). A pair term is
*primary* for the queries whose designated predecessor pool is ``a`` (derivability is enforced there,
§4.1); other queries (a SEQ transition that bypasses a single-type Kleene ``B+``) only add cost.

Problem options (``params.KEY`` / ``--param KEY=VALUE``; an unknown key or value is a CepoptError):
``cost_model`` = paper | physical (spec §10 A3), ``kleene_cycle_cost`` = V1 | V2 (§5) and
``fork_accounting`` = edge | once (A6; see :meth:`GloriaProblem.share` and cost.py). The *fan-out*
of a pool's transition ``t = (Ei, Ej)`` (:attr:`GloriaProblem.fanout`) lists the query sets of every
edge that prices ``Ej`` with predecessor ``Ei`` from that pool's blocks: the pair terms leaving the pool
from ``t``, its end edges on ``t`` and, inside a Kleene super-pool, the internal edges ``(t, t2)``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from cepopt.allocation import collector_paused
from cepopt.errors import CepoptError
from cepopt.gloria.template import KleeneCycle, QueryTemplate, Template, build_template, cycle_of_type
from cepopt.model import Aggregate, Condition, Equivalence, Filter, Kleene, Pattern, Query, Seq, Type
from cepopt.params import check_keys

__all__ = ["Cost", "Frequency", "GloriaProblem", "PairTerm", "Pool", "build", "PROBLEM_OPTIONS"]

Transition = tuple[str, str]
#: An event type's frequency: an int when integral (costs then stay exact ints), else a float.
Frequency = Any
#: A cost or distance: an int or a float, or an exact Fraction under ``fork_accounting="once"``
#: (:meth:`GloriaProblem.share`).
#:
#: Both are typed ``Any`` on purpose, for the compiled modules (cepopt/gloria/compiled.py): mypyc stores
#: a value annotated ``float`` as a C double (an int frequency would turn every cost into a float, 307 ->
#: 307.0 in JSON), and it checks results against mypy's inferred types, which for ``int * x`` with ``x``
#: of type ``Any`` or ``Fraction`` is ``int`` (a Fraction there raised TypeError). ``Any`` keeps Python's
#: own numeric tower.
Cost = Any

#: --param keys that shape the problem (the rest go to the methods).
PROBLEM_OPTIONS = frozenset({"cost_model", "kleene_cycle_cost", "fork_accounting"})
_CHOICES = {"cost_model": ("paper", "physical"), "kleene_cycle_cost": ("V1", "V2"),
            "fork_accounting": ("edge", "once")}
_DEFAULTS = {"cost_model": "paper", "kleene_cycle_cost": "V2", "fork_accounting": "edge"}


class Pool(NamedTuple):
    """One pool: a SEQ transition for one sharing class, or a Kleene super-pool (one group).

    Immutable, as a named tuple rather than a frozen dataclass (same fields, same repr): a frozen
    dataclass sets each of its 11 fields through ``object.__setattr__``, 1.3 us per pool against
    0.4 us, and the problem build makes one per transition and sharing class (172 on a published
    100-query workload)."""

    index: int  # type: ignore[assignment]  # the field shadows tuple.index, on purpose
    kind: str
    transitions: tuple[Transition, ...]
    queries: frozenset[str]
    source: str
    target: str
    types: frozenset[str]
    start_queries: frozenset[str]
    ends: tuple[tuple[Transition, frozenset[str]], ...]
    internal: tuple[tuple[Transition, Transition], ...]
    sharing_class: int

    @property
    def label(self) -> str:
        if self.kind == "seq":
            return f"{self.source}->{self.target}#{self.sharing_class}"
        return f"K[{self.source}..{self.target}]#{self.sharing_class}"


class PairTerm(NamedTuple):
    """Cost of ``t[1]`` with predecessor ``t[0]`` for ``queries`` under the options of pools a and b.

    A named tuple for the reason :class:`Pool` is one (0.9 us per frozen dataclass against 0.3, about
    180 terms per published workload)."""

    a: int
    b: int
    t: Transition
    t2: Transition
    queries: frozenset[str]
    primary: frozenset[str]
    entry: bool


@dataclass
class GloriaProblem:
    """Everything a Gloria method needs; see the module docstring."""

    name: str | None
    workload: Any
    template: Template
    freq: dict[str, Frequency]
    cost_model: str
    kleene_cycle_cost: str
    pools: list[Pool]
    terms: list[PairTerm]
    classes: dict[str, int]
    #: query -> each of its transitions -> the pool holding it
    pool_of: dict[str, dict[Transition, int]]
    edges: dict[tuple[int, int], tuple[PairTerm, ...]] = field(default_factory=dict)
    preds: dict[int, list[int]] = field(default_factory=dict)
    succs: dict[int, list[int]] = field(default_factory=dict)
    order: list[int] | None = None
    fork_accounting: str = "edge"
    #: cache of share() and start_share()
    _shares: dict = field(default_factory=dict, repr=False)
    # Caches filled on first use (fanout, _primary). Not functools.cached_property: compiled (mypyc) a
    # cached_property is a plain property, which would recompute the value on every use.
    _fanout: dict[tuple[int, Transition], tuple[frozenset[str], ...]] | None = field(
        default=None, repr=False, compare=False)
    _primary_of: dict[tuple[int, int], frozenset[str]] | None = field(default=None, repr=False, compare=False)

    @property
    def fanout(self) -> dict[tuple[int, Transition], tuple[frozenset[str], ...]]:
        """(pool, transition t) -> query sets of the edges that price t's target from the pool (module
        doc). Computed on first use: only ``fork_accounting="once"`` reads it."""
        if self._fanout is None:
            self._fanout = self._fanout_of()
        return self._fanout

    def _fanout_of(self) -> dict[tuple[int, Transition], tuple[frozenset[str], ...]]:
        fanout: dict[tuple[int, Transition], list[frozenset[str]]] = {}
        for term in self.terms:
            fanout.setdefault((term.a, term.t), []).append(term.queries)
        for pool in self.pools:
            for t, ending in pool.ends:
                fanout.setdefault((pool.index, t), []).append(ending)
            for t, _t2 in pool.internal:
                fanout.setdefault((pool.index, t), []).append(pool.queries)
        return {k: tuple(v) for k, v in fanout.items()}

    @property
    def unit_shares(self) -> bool:
        """Whether every :meth:`share` and :meth:`start_share` is 1 (``fork_accounting="edge"``): the cost
        functions then skip the calls."""
        return self.fork_accounting == "edge"

    def f(self, event_type: str) -> Frequency:
        return self.freq[event_type]

    def g(self, event_type: str) -> Frequency:
        """The |E| factor of Cost_share: 1 under the paper's Eq. 3, f(E) under cost_model=physical."""
        return 1 if self.cost_model == "paper" else self.freq[event_type]

    def share(self, p: int, t: Transition, queries: tuple[str, ...], successor: frozenset[str]) -> Cost:
        """The part of a block's propagation term charged on one edge of its fan-out (spec §10 A6).

        ``fork_accounting="edge"``: 1 (every edge pays the whole term). ``"once"``: the block ``S =
        queries`` of pool ``p`` on transition ``t`` pays its term once in all, split over the edges of
        the fan-out of ``(p, t)`` in proportion to the block's queries each carries,
        ``|S & successor| / sum over the fan-out of |S & Q_s|`` (the decision and its reasons: cost.py).
        Returns the int 1, or an exact :class:`~fractions.Fraction` (costs stay exact rationals)."""
        if self.unit_shares:
            return 1
        key = (p, t, queries, successor)
        value = self._shares.get(key)
        if value is None:
            block = frozenset(queries)
            n = len(block & successor)
            total = sum(len(block & s) for s in self.fanout.get((p, t), ()))
            value = 1 if n == total or total == 0 else Fraction(n, total)
            self._shares[key] = value
        return value

    def start_share(self, q: str) -> Cost:
        """Share of the start edge of query ``q`` into one pool: 1 under "edge"; under "once" 1 / the
        number of pools ``q`` starts in (two in ``SEQ(B+, C)``: the cycle of B and the SEQ pool of
        ``B -> C``), so ``f(Es)`` is charged once per query."""
        if self.unit_shares:
            return 1
        key = ("start", q)
        value = self._shares.get(key)
        if value is None:
            n = sum(1 for pool in self.pools if q in pool.start_queries)
            value = 1 if n <= 1 else Fraction(1, n)
            self._shares[key] = value
        return value

    def primary_preds(self, b: int) -> list[int]:
        """Pools that are some query's designated predecessor of pool b (derivability sources)."""
        return [a for a in self.preds.get(b, []) if self._primary[(a, b)]]

    def primary_queries(self, a: int, b: int) -> frozenset[str]:
        """The queries whose designated predecessor of pool b is pool a (their blocks derive from a's)."""
        return self._primary[(a, b)]

    @property
    def _primary(self) -> dict[tuple[int, int], frozenset[str]]:
        """:meth:`primary_queries` of every edge, computed once (node generation asks per pool)."""
        if self._primary_of is None:
            # one term per edge, as a rule: its set as it is (a union is a generic call, compiled)
            self._primary_of = {edge: terms[0].primary if len(terms) == 1
                                else frozenset().union(*(t.primary for t in terms))
                                for edge, terms in self.edges.items()}
        return self._primary_of

    def admissible_snapshots(self, pool: Pool, queries: frozenset[str]) -> list[str]:
        """Snapshot types a shared block of ``queries`` may carry in a SEQ pool: the source Ei or an
        upstream type common to all its queries (spec §7.2)."""
        common = None
        for q in queries:
            anc = self.template.queries[q].ancestors(pool.source)
            common = anc if common is None else common & anc
        out = {pool.source} | set(common or ())
        out.discard(pool.target)
        return sorted(out, key=lambda x: (x != pool.source, x))

    @property
    def num_queries(self) -> int:
        return len(self.workload)


def _class_key(q: Query) -> tuple:
    """The sharing class of a query (module docstring): one pass over its predicates and one over its
    RETURN items, each field read once (a read of a field of the model's Python objects is a generic
    attribute lookup from compiled code)."""
    def norm_ref(ref):  # "" for no reference (a GROUP-BY attribute of every event): sorts beside types
        return q.type_of(ref) if ref is not None else ""

    window = q.window
    slide = window.slide if window.slide is not None else window.length
    filters, conds, equivalences = [], [], []
    for p in q.where:
        if isinstance(p, Filter):
            filters.append((norm_ref(p.ref), p.attr, p.op, repr(p.value)))
        elif isinstance(p, Condition):
            left, right = p.left, p.right
            conds.append((norm_ref(left.ref), left.attr, p.op, norm_ref(right.ref), right.attr))
        elif isinstance(p, Equivalence):
            equivalences.append(p.attr)
    filters.sort()
    conds.sort()
    equivalences.sort()
    group = tuple(sorted([(norm_ref(a.ref), a.attr) for a in q.group_by]))
    aggs = []
    for item in q.returns:
        if isinstance(item, Aggregate):
            func = item.func
            if func in ("MIN", "MAX"):
                aggs.append((func, norm_ref(item.ref), item.attr or ""))
    aggs.sort()
    return (group, tuple(equivalences), slide, tuple(filters), tuple(conds), tuple(aggs))


def _options(instance_params: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, str]:
    out = dict(_DEFAULTS)
    check_keys(instance_params, _CHOICES, "Gloria parameter")
    for source in (instance_params, options):
        for key, value in source.items():
            if key not in _CHOICES:
                raise CepoptError(f"unknown Gloria problem option {key!r}")
            if value not in _CHOICES[key]:
                raise CepoptError(f"params.{key}: must be one of {', '.join(_CHOICES[key])}, got {value!r}")
            out[key] = value
    return out


def build(instance: Any, **options: Any) -> GloriaProblem:
    """Build the Gloria problem of an instance (family ``gloria``)."""
    with collector_paused():  # cepopt/allocation.py: templates, pools and terms hold no cycles
        return _build(instance, options)


def _build(instance: Any, options: dict[str, Any]) -> GloriaProblem:
    opts = _options(instance.params or {}, options)
    workload = instance.workload
    template = build_template(workload)
    freq = _frequencies(instance, template)
    keys: dict[tuple, int] = {}
    classes: dict[str, int] = {}
    for q in workload:
        classes[str(q.name)] = keys.setdefault(_class_key(q), len(keys))
    pools: list[Pool] = []
    pool_of: dict[str, dict[Transition, int]] = {name: {} for name in classes}
    _kleene_pools(workload, template, classes, pools, pool_of)
    _seq_pools(workload, template, classes, pools, pool_of)
    terms = _pair_terms(workload, template, pools, pool_of)
    problem = GloriaProblem(instance.name, workload, template, freq, opts["cost_model"],
                            opts["kleene_cycle_cost"], pools, terms, classes, pool_of,
                            fork_accounting=opts["fork_accounting"])
    _link(problem)
    _check_costs(problem)
    return problem


def _frequencies(instance: Any, template: Template) -> dict[str, Frequency]:
    """The frequency of every event type of the workload, in order of first use (the template's queries
    are the workload's, in order, each with its types in pattern order)."""
    freq: dict[str, Frequency] = {}
    rates = dict(instance.statistics.rate_map)
    for event_type in dict.fromkeys(t for qt in template.queries.values() for t in qt.order):
        if event_type not in rates:
            raise CepoptError(f"statistics.rates: no frequency for event type {event_type!r}")
        value = rates[event_type]
        if not value >= 0:
            raise CepoptError(f"statistics.rates.{event_type}: frequency must be >= 0, got {value!r}")
        freq[event_type] = int(value) if float(value).is_integer() else float(value)
    return freq


def _kleene_pools(workload, template: Template, classes: dict[str, int], pools: list[Pool],
                  pool_of: dict[str, dict[Transition, int]]) -> None:
    """Kleene groups: identical outermost Kleene sub-pattern within one sharing class."""
    groups: dict[tuple, tuple[KleeneCycle, list[str]]] = {}  # (class, pattern key) -> (first cycle, queries)
    for q in workload:
        qt = template.queries[str(q.name)]
        for cyc in qt.cycles:
            key = (classes[qt.name], _pattern_key(cyc.pattern))
            group = groups.get(key)
            if group is None:
                group = groups[key] = (cyc, [])
            group[1].append(qt.name)
    for (cls, _), (cyc, names) in sorted(groups.items(), key=lambda kv: (kv[0][0], sorted(kv[1][1]))):
        members = frozenset(names)
        internal = sorted({(t, t2) for t in cyc.transitions for t2 in cyc.transitions if t[1] == t2[0]})
        ends = []
        for t in sorted(cyc.transitions):
            ending = frozenset(n for n in names if template.end[n] == t[1])
            if ending:
                ends.append((t, ending))
        start = frozenset(n for n in names if template.start[n] == cyc.first)
        pool = Pool(len(pools), "kleene", tuple(sorted(cyc.transitions)), members, cyc.first, cyc.last,
                    cyc.types, start, tuple(ends), tuple(internal), cls)
        pools.append(pool)
        for n in names:
            pool_of[n].update(dict.fromkeys(cyc.transitions, pool.index))


def _pattern_key(p: Pattern) -> tuple:
    """A key that two patterns share exactly when they are equal, for the types, SEQs and Kleene
    sub-patterns a template holds (each node's class and fields, as dataclass equality compares them;
    any other node stands for itself). Why not the pattern: a frozen dataclass hashes through a
    Python ``__hash__`` per node, about 26,000 instructions per Kleene sub-pattern (callgrind,
    kleeneRatio workload_5); building this key and hashing it in C takes about half of that."""
    kind = type(p)  # exactly the class, as dataclass equality requires (isinstance for the type checker)
    if kind is Type and isinstance(p, Type):
        return ("type", p.name, p.var)
    if kind is Seq and isinstance(p, Seq):
        return ("seq", *[_pattern_key(item) for item in p.items])
    if kind is Kleene and isinstance(p, Kleene):
        return ("kleene", _pattern_key(p.inner))
    return ("other", p)


def _seq_pools(workload, template: Template, classes: dict[str, int], pools: list[Pool],
               pool_of: dict[str, dict[Transition, int]]) -> None:
    # (transition, class) -> [its queries, those ending at its target, those starting at its source]
    seq: dict[tuple[Transition, int], tuple[set[str], set[str], set[str]]] = {}
    for qt in template.queries.values():  # the workload's queries, in order
        name, cls, end, start_type = qt.name, classes[qt.name], qt.end, qt.start
        for t in _seq_transitions(qt):
            slot = seq.get((t, cls))
            if slot is None:
                slot = seq[(t, cls)] = (set(), set(), set())
            slot[0].add(name)
            if end == t[1]:
                slot[1].add(name)
            if start_type == t[0]:
                slot[2].add(name)
    for t, cls in sorted(seq):  # the keys alone: sorting items would compare each key twice
        names, ending, start = seq[(t, cls)]
        members = frozenset(names)
        pool = Pool(len(pools), "seq", (t,), members, t[0], t[1], frozenset(), frozenset(start),
                    ((t, frozenset(ending)),) if ending else (), (), cls)
        pools.append(pool)
        for n in names:
            pool_of[n][t] = pool.index


def _seq_transitions(qt: QueryTemplate) -> frozenset[Transition]:
    """The query's transitions outside its Kleene cycles (each cycle is one Kleene super-pool)."""
    if not qt.cycles:
        return qt.transitions
    return qt.transitions.difference(*(cyc.transitions for cyc in qt.cycles))


def _primary(qt: QueryTemplate, pools: list[Pool], pool_of: dict[str, dict[Transition, int]], a: int, ej: str) -> bool:
    """Is pool a the designated predecessor (derivability source) of the query's transition from Ej?"""
    if qt.start == ej:
        return False
    cyc = cycle_of_type(qt, ej)
    if cyc is None:
        return True
    return pools[a].kind == "kleene" and a == pool_of[qt.name][min(cyc.transitions)]


def _pair_terms(workload, template: Template, pools: list[Pool],
                pool_of: dict[str, dict[Transition, int]]) -> list[PairTerm]:
    """Pair terms: consecutive transitions of a query in different pools."""
    raw: dict[tuple[int, int, Transition, Transition], list[set[str]]] = {}
    for qt in template.queries.values():  # the workload's queries, in order
        name = qt.name
        at = pool_of[name]  # each of the query's transitions -> its pool
        leaving: dict[str, list[tuple[Transition, int]]] = {}  # the query's transitions (and pools) by source type
        for t2, b in at.items():
            leaving.setdefault(t2[0], []).append((t2, b))
        for t, a in at.items():
            for t2, b in leaving.get(t[1], ()):
                if a == b:
                    continue
                key = (a, b, t, t2)
                slot = raw.get(key)
                if slot is None:
                    slot = raw[key] = [set(), set()]
                slot[0].add(name)
                if pools[b].kind != "kleene" and _primary(qt, pools, pool_of, a, t2[0]):
                    slot[1].add(name)
    out = []
    for key in sorted(raw):  # the keys alone: sorting items would compare each key twice
        a, b, t, t2 = key
        qs, pr = raw[key]
        out.append(PairTerm(a, b, t, t2, frozenset(qs), frozenset(pr), pools[b].kind == "kleene"))
    return out


def _link(problem: GloriaProblem) -> None:
    """Edges, predecessors and successors, and a topological order of the pools (if any)."""
    edges: dict[tuple[int, int], list[PairTerm]] = {}
    for term in problem.terms:
        edges.setdefault((term.a, term.b), []).append(term)
    problem.edges = {k: tuple(v) for k, v in edges.items()}
    for a, b in problem.edges:
        problem.preds.setdefault(b, []).append(a)
        problem.succs.setdefault(a, []).append(b)
    problem.order = _lexicographic_order(len(problem.pools), problem.succs)


def _lexicographic_order(n: int, succs: dict[int, list[int]]) -> list[int] | None:
    """The lexicographically smallest topological order of pools 0..n-1 (Kahn's algorithm, smallest
    ready pool first), or None when the pool graph has a directed cycle."""
    indegree = [0] * n
    for targets in succs.values():
        for b in targets:
            indegree[b] += 1
    ready = [p for p in range(n) if indegree[p] == 0]
    order: list[int] = []
    while ready:
        a = heapq.heappop(ready)
        order.append(a)
        for b in succs.get(a, ()):
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, b)
    return order if len(order) == n else None


def _check_costs(problem: GloriaProblem) -> None:
    """Refuse frequencies whose plan costs leave floating point. Integral frequencies give exact int
    costs, which the methods' float arithmetic cannot convert beyond 1.8e308. On any start, pair,
    cycle or end edge (cost.py) a block costs at most 2 F^3 |Q| (F = max(1, max f)), and there are at
    most |Q| blocks."""
    top = max([1.0, *(float(v) for v in problem.freq.values())])
    edges = len(problem.terms) + sum(1 + len(p.internal) + len(p.ends) for p in problem.pools)
    n = problem.num_queries
    if not math.isfinite(2.0 * edges * n * n * top * top * top):
        raise CepoptError("statistics.rates: costs overflow: frequencies too large for the Gloria cost "
                          "model (an edge weight multiplies three frequencies)")
