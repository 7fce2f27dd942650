"""The Hamlet problem: per-query templates, sharable sets, and the burst statistics the cost model reads.

A query is compiled into its GRETA template (specs/hamlet.md §1.7): states are event types,
``pt(E, q)`` the predecessor types, ``start(q)`` / ``end(q)`` the start and end types. The template is
the Glushkov automaton of the pattern; since every type occurs once per pattern (§1.2 [RESOLUTION])
the language of template paths is exactly the pattern's language, so the same template serves Kleene
patterns of single types (Hamlet's core shape) and of sub-sequences (Gloria).

Sharing (§1.6, §1.8): queries with the same window, GROUP-BY and equivalence attributes form a
*class* (they are evaluated on the same partitions and windows). Inside a class, the queries whose
pattern is the core shape ``SEQ(X1, .., E+, .., Xm)`` and whose aggregates are linear (COUNT, SUM, AVG;
MIN/MAX are not linear, §3.10) are the sharing candidates ``Q_E`` of the Kleene type E when there are
at least two of them (Def. 3.1/3.2).

Edge predicates (§2.3): the model's conditions between two references hold on *adjacent* events of a
trend (GRETA's edge predicates, the oracle's ``conditions="adjacent"``); predicates between two
consecutive events of the Kleene type itself cannot be written in the model (a condition relates two
different references), so they come from ``params.edge_predicates`` (§3.4 Table 5 needs one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cepopt.errors import CepoptError
from cepopt.hamlet.scope import pane_size
from cepopt.model import Kleene, Or, Query, Seq, Type, Workload
from cepopt.params import check_keys, parse_choice
from cepopt.predicates import OPS, compare

__all__ = [
    "CompiledQuery", "EdgePredicate", "HamletProblem", "SharingClass", "build", "compile_query",
    "compile_workload", "mean_t", "pane_size", "query_t",
]

@dataclass(frozen=True)
class EdgePredicate:
    """``prev.left op next.right`` on adjacent trend events prev (type ``src``) -> next (type ``dst``)."""

    src: str
    dst: str
    left: str
    op: str
    right: str

    def holds(self, prev: Mapping, nxt: Mapping) -> bool:
        """Whether it holds on the two events; not with a missing value (cepopt.predicates)."""
        return compare(self.op, prev.get(self.left), nxt.get(self.right))


@dataclass(frozen=True)
class CompiledQuery:
    """One query as the kernels run it (hamlet.md §1.7, §2.3)."""

    name: str
    query: Query
    types: frozenset[str]
    start: frozenset[str]
    end: frozenset[str]
    pt: tuple[tuple[str, frozenset[str]], ...]
    kleene: str | None                    # E of the core shape SEQ(.., E+, ..), else None
    length: float
    slide: float
    filters: tuple[tuple[str, str, str, Any], ...]      # (type, attr, op, value)
    edges: tuple[EdgePredicate, ...]
    targets: tuple[tuple[str, str | None], ...]          # (ref, attr) pairs the aggregates need
    target_types: tuple[str, ...]                        # event type of each target
    minmax: frozenset[tuple[str, str | None]]            # targets that need MIN or MAX
    partition: tuple[str, ...]
    group: tuple[str, ...]

    @property
    def pt_map(self) -> dict[str, frozenset[str]]:
        return dict(self.pt)

    @property
    def linear(self) -> bool:
        """True when every aggregate is COUNT/SUM/AVG (shareable with coefficient maps, §3.10)."""
        return not self.minmax

    def class_key(self) -> tuple:
        return (self.length, self.slide, self.partition, self.group)


def _glushkov(p) -> tuple[bool, set[str], set[str], set[tuple[str, str]]]:
    """(nullable, first, last, follow pairs) over type names."""
    if isinstance(p, Type):
        return False, {p.name}, {p.name}, set()
    if isinstance(p, Seq):
        nullable, first, last, follow = True, set(), set(), set()
        for item in p.items:
            n2, f2, l2, fo2 = _glushkov(item)
            follow |= fo2 | {(a, b) for a in last for b in f2}
            first = first | f2 if nullable else first
            last = (last | l2) if n2 else l2
            nullable = nullable and n2
        return nullable, first, last, follow
    if isinstance(p, Or):
        nullable, first, last, follow = False, set(), set(), set()
        for item in p.items:
            n2, f2, l2, fo2 = _glushkov(item)
            nullable, first, last, follow = nullable or n2, first | f2, last | l2, follow | fo2
        return nullable, first, last, follow
    if isinstance(p, Kleene):
        n2, f2, l2, fo2 = _glushkov(p.inner)
        return n2, f2, l2, fo2 | {(a, b) for a in l2 for b in f2}
    raise CepoptError(f"trend aggregation supports SEQ, OR, Kleene plus and event types, not "
                      f"{type(p).__name__.upper()} (hamlet.md §8.17)")


def _core_kleene(p) -> str | None:
    """E for the core shape SEQ(X1, .., E+, .., Xm) (or E+ alone), else None (hamlet.md §1.2)."""
    items = p.items if isinstance(p, Seq) else (p,)
    kleenes = [it for it in items if isinstance(it, Kleene)]
    if len(kleenes) != 1 or not isinstance(kleenes[0].inner, Type):
        return None
    if not all(isinstance(it, Type) or it is kleenes[0] for it in items):
        return None
    return kleenes[0].inner.name


def compile_query(query: Query, extra_edges: Sequence[EdgePredicate] = ()) -> CompiledQuery:
    """The template and predicates of one query; raises CepoptError for what the kernels cannot run."""
    name = query.name or "q"
    leaves = query.pattern.leaves()
    names = [leaf.name for leaf in leaves]
    if len(set(names)) != len(names):
        raise CepoptError(f"query {name}: an event type occurs twice in the pattern; trend aggregation "
                          "needs each type once (hamlet.md §1.2)")
    if query.window.slide is None:
        raise CepoptError(f"query {name}: trend aggregation needs WITHIN .. SLIDE .. (windows "
                          "[kS, kS+W), hamlet.md §8.9)")
    _, first, last, follow = _glushkov(query.pattern)
    types = frozenset(names)
    pt = {t: frozenset(a for a, b in follow if b == t) for t in sorted(types)}
    filters = tuple((query.type_of(f.ref), f.attr, f.op, f.value) for f in query.filters)
    edges = []
    for c in query.conditions:
        lt, rt = query.type_of(c.left.ref), query.type_of(c.right.ref)
        # adjacent-event semantics: the condition applies on template edges in either direction
        if lt in pt.get(rt, ()):
            edges.append(EdgePredicate(lt, rt, c.left.attr, c.op, c.right.attr))
        if rt in pt.get(lt, ()):
            flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(c.op, c.op)
            edges.append(EdgePredicate(rt, lt, c.right.attr, flipped, c.left.attr))
    edges.extend(extra_edges)
    targets = tuple(dict.fromkeys((a.ref, a.attr) for a in query.aggregates if a.ref is not None))
    minmax = frozenset((a.ref, a.attr) for a in query.aggregates if a.func in ("MIN", "MAX"))
    group = tuple(dict.fromkeys(k.attr for k in query.group_by))
    part = tuple(dict.fromkeys(group + query.equivalences))
    return CompiledQuery(
        name=name, query=query, types=types, start=frozenset(first), end=frozenset(last),
        pt=tuple(pt.items()), kleene=_core_kleene(query.pattern), length=query.window.length,
        slide=query.window.slide, filters=filters, edges=tuple(edges), targets=targets,
        target_types=tuple(query.type_of(r) for r, _ in targets), minmax=minmax, partition=part,
        group=group)


@dataclass(frozen=True)
class SharingClass:
    """Queries evaluated on the same partitions and windows (hamlet.md §1.8); ``groups`` maps each
    Kleene type E to its sharing candidates Q_E (at least two queries)."""

    queries: tuple[CompiledQuery, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]
    n_rule: str = "graph"   # n of Eq. 7 for its bursts (cepopt.hamlet.graphlets.N_RULES)
    t_rule: str = "types"   # t of Eq. 7 for its queries (T_RULES)

    @property
    def length(self) -> float:
        """The longest window: a class may hold pane-compatible windows of one slide (Gloria)."""
        return max(q.length for q in self.queries)

    @property
    def slide(self) -> float:
        return self.queries[0].slide

    @property
    def partition(self) -> tuple[str, ...]:
        return self.queries[0].partition

    @property
    def group(self) -> tuple[str, ...]:
        return self.queries[0].group

    @property
    def types(self) -> frozenset[str]:
        return frozenset().union(*(q.types for q in self.queries))

    def query(self, name: str) -> CompiledQuery:
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(name)


#: the keys of one ``params.edge_predicates`` item
EDGE_KEYS = ("query", "from", "to", "left", "op", "right")


def _parse_edges(params: Mapping, workload: Workload) -> dict[str, list[EdgePredicate]]:
    out: dict[str, list[EdgePredicate]] = {}
    items = params.get("edge_predicates", [])
    if not isinstance(items, list):
        raise CepoptError("params.edge_predicates: expected a list")
    for i, item in enumerate(items):
        where = f"params.edge_predicates[{i}]"
        if not isinstance(item, Mapping) or set(item) != set(EDGE_KEYS) or not all(
                isinstance(v, str) for v in item.values()):
            raise CepoptError(f"{where}: expected an object of text fields {', '.join(EDGE_KEYS)}")
        qname = item["query"]
        pred = EdgePredicate(item["from"], item["to"], item["left"], item["op"], item["right"])
        if pred.op not in OPS:
            raise CepoptError(f"{where}: unknown operator {pred.op!r}")
        if qname not in workload.names:
            raise CepoptError(f"{where}: unknown query {qname!r}")
        # a predicate off the template's edges would never be evaluated
        if (pred.src, pred.dst) not in _glushkov(workload[qname].pattern)[3]:
            raise CepoptError(f"{where}: {pred.src} -> {pred.dst} is no pair of adjacent event types in a "
                              f"trend of {qname}")
        out.setdefault(qname, []).append(pred)
    return out


def compile_workload(workload: Workload, params: Mapping | None = None, *,
                     mixed_lengths: bool = False) -> tuple[SharingClass, ...]:
    """Compile every query and group them into sharing classes with their candidates Q_E.

    ``mixed_lengths=True`` puts queries of one slide but different window lengths in one class (Gloria
    shares across pane-compatible windows, gloria.md §10 A13): its scopes are the longest windows, and
    each query's events are cut to its own window (the query masks of :func:`cepopt.hamlet.scope.class_layout`)."""
    edges = _parse_edges(params or {}, workload)
    n_rule, t_rule = _eq7_rules(params or {})
    compiled = [compile_query(q, edges.get(q.name, ())) for q in workload]
    by_key: dict[tuple, list[CompiledQuery]] = {}
    for cq in compiled:
        key = cq.class_key()
        by_key.setdefault(key[1:] if mixed_lengths else key, []).append(cq)
    classes = []
    for qs in by_key.values():
        cands: dict[str, list[str]] = {}
        for cq in qs:
            if cq.kleene is not None and cq.linear:
                cands.setdefault(cq.kleene, []).append(cq.name)
        groups = tuple((e, tuple(names)) for e, names in cands.items() if len(names) >= 2)
        classes.append(SharingClass(tuple(qs), groups, n_rule, t_rule))
    return tuple(classes)


#: what t of Eq. 7 counts per query (hamlet.md §8.8): "types", |T_q| (Table 2 and the paper's
#: examples: 2 for SEQ(A, B+); the default); "others", |T_q| - 1 (the text of Eq. 6: the graphlets of
#: the other types); "one", 1 (the authors' code)
T_RULES = ("types", "others", "one")


def query_t(types: int, rule: str) -> float:
    """t of Eq. 7 for a query with ``types`` event types under ``rule`` (:data:`T_RULES`)."""
    return {"types": types, "others": types - 1, "one": 1}[rule]


def mean_t(t_by_query: Mapping[str, float], queries: Sequence[str]) -> float:
    """t of Eq. 7 for a group of costed queries: the average of their t (§8.8); 0 for none."""
    return sum(t_by_query[q] for q in queries) / len(queries) if queries else 0.0


def _eq7_rules(params: Mapping) -> tuple[str, str]:
    """``params.eq7_n`` and ``params.eq7_t`` (defaults: the paper's "graph" and "types")."""
    from cepopt.hamlet.graphlets import N_RULES

    return (parse_choice("eq7_n", params.get("eq7_n", "graph"), N_RULES),
            parse_choice("eq7_t", params.get("eq7_t", "types"), T_RULES))


# ---------------------------------------------------------------------------------------------
# The optimizer's problem: burst statistics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HamletProblem:
    """What the Hamlet cost model needs: the workload's sharing classes, the per-query number of
    types t, and the bursts (in stream order) whose sharing is decided (hamlet.md §4);
    ``from_stream``: the bursts are the embedded stream's (decisions on them can be replayed there)."""

    workload: Workload
    classes: tuple[SharingClass, ...]
    bursts: tuple  # of cepopt.hamlet.graphlets.Burst
    types_per_query: tuple[tuple[str, float], ...]   # t of Eq. 7 per query, under the class's t_rule
    expected: dict = field(default_factory=dict, compare=False, hash=False)
    stream: tuple = field(default=(), compare=False, hash=False)
    name: str | None = None
    from_stream: bool = False

    def t_of(self, queries: Sequence[str]) -> float:
        """t of Eq. 7: the average of the costed queries' t (§8.8; by default their number of types)."""
        return mean_t(dict(self.types_per_query), queries)


#: the keys of a Hamlet instance's ``params``
PARAM_KEYS = frozenset({"bursts", "edge_predicates", "eq7_n", "eq7_t"})


def _check_groups(bursts: Sequence, classes: Sequence[SharingClass]) -> None:
    """Given bursts must be bursts of a sharing group: their type is the Kleene type E and their queries
    are candidates Q_E of one class (the cost model prices nothing else)."""
    groups = [(e, set(cands)) for cls in classes for e, cands in cls.groups]
    for i, burst in enumerate(bursts):
        if not any(e == burst.type and set(burst.queries) <= cands for e, cands in groups):
            known = "; ".join(f"{e}: {', '.join(sorted(c))}" for e, c in groups) or "none"
            raise CepoptError(f"params.bursts[{i}]: {', '.join(burst.queries)} are no sharing candidates of a "
                              f"Kleene type {burst.type!r} (sharing groups: {known})")


def build(instance: Any, eq7_n: str | None = None, eq7_t: str | None = None) -> HamletProblem:
    """The Hamlet problem of an instance: ``params.bursts`` (list of bursts, see
    :func:`cepopt.hamlet.graphlets.burst_from_json`) or, without it, the bursts of the embedded
    stream (:func:`cepopt.hamlet.graphlets.stream_bursts`); ``params.edge_predicates`` optional;
    ``eq7_n`` (or ``params.eq7_n``): what n of Eq. 7 counts, "graph" (default) or "before"
    (:data:`cepopt.hamlet.graphlets.N_RULES`); ``eq7_t`` (or ``params.eq7_t``): what t counts,
    "types" (default), "others" or "one" (:data:`T_RULES`). The executor's run-time decisions use
    both."""
    import dataclasses

    from cepopt.hamlet.graphlets import burst_from_json, stream_bursts

    params = dict(getattr(instance, "params", {}) or {})
    check_keys(params, PARAM_KEYS, "Hamlet parameter")
    for key, value in (("eq7_n", eq7_n), ("eq7_t", eq7_t)):
        if value is not None:
            params[key] = value
    workload = instance.workload
    classes = compile_workload(workload, params)
    names = set(workload.names)
    if "bursts" in params:
        if not isinstance(params["bursts"], list):
            raise CepoptError("params.bursts: expected a list of bursts")
        # No bursts means no decision: every method would score 0, and an embedded stream's bursts
        # would be hidden. The way to say "take the stream's bursts" is to leave the key out.
        if not params["bursts"]:
            raise CepoptError("params.bursts: empty; give at least one burst, or leave the key out to take "
                              "the bursts of the embedded stream")
        # given n are the paper's (graph events including the burst); the rule says how Eq. 7 reads them
        n_rule = _eq7_rules(params)[0]
        bursts = tuple(dataclasses.replace(burst_from_json(b, f"params.bursts[{i}]", names), n_rule=n_rule)
                       for i, b in enumerate(params["bursts"]))
        _check_groups(bursts, classes)
    elif getattr(instance, "stream", None):
        bursts = tuple(stream_bursts(classes, instance.stream))
    else:
        raise CepoptError("params.bursts: a hamlet instance needs burst statistics or an embedded stream")
    tpq = tuple((cq.name, query_t(len(cq.types), cls.t_rule)) for cls in classes for cq in cls.queries)
    return HamletProblem(workload, classes, bursts, tpq, dict(getattr(instance, "expected", {}) or {}),
                         tuple(getattr(instance, "stream", None) or ()), getattr(instance, "name", None),
                         "bursts" not in params)
