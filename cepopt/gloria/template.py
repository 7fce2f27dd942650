"""The GLORIA template: a GRETA-style automaton over event types (paper §2.2, specs/gloria.md §1.4).

One state per event type; a transition ``(Ei, Ej)`` for every pair of consecutive types in some query,
labelled with the queries that use it. Construction (reproduces the paper's Figs 2, 4, 8a and 9a):

* a type ``E``: ``first = last = {E}``, no transitions;
* ``SEQ(P1..Pn)``: the children's transitions plus ``last(Pi) x first(Pi+1)``;
* ``P+``: P's transitions plus the Kleene *feedback* transitions ``last(P) x first(P)``.

Kleene sub-graphs are the strongly connected components of the template (§6). Per query the template
also records the query's outermost Kleene sub-patterns (its cycles): the optimizer shares a cycle only
among queries with the identical Kleene sub-pattern (§7.1, spec §10 A12).

Only SEQ, Kleene plus and event types reach the optimizer; NOT, OR and AND are rejected (spec §10 A1),
and so is a type that occurs twice in one query's pattern (A15).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import networkx as nx

from cepopt.errors import CepoptError
from cepopt.model import Kleene, Pattern, Query, Seq, Type, Workload, iter_types

__all__ = ["KleeneCycle", "QueryTemplate", "Template", "build_template", "cycle_of_type", "query_template"]

Transition = tuple[str, str]


class KleeneCycle(NamedTuple):
    """One outermost Kleene sub-pattern of a query: its types, transitions, first and last type.

    Immutable as a named tuple, like :class:`QueryTemplate` (see there why not a frozen dataclass)."""

    pattern: Pattern
    types: frozenset[str]
    transitions: frozenset[Transition]
    first: str
    last: str
    feedback: frozenset[Transition]


class QueryTemplate(NamedTuple):
    """The template of one query: transitions, start/end types, outermost Kleene cycles.

    Immutable as a named tuple rather than a frozen dataclass (as :class:`~cepopt.gloria.problem.Pool`):
    a frozen dataclass sets each field through ``object.__setattr__`` in a Python ``__init__``, about
    10,000 instructions per query, 1.5 % of the compiled search (callgrind, kleeneRatio workload_5)."""

    name: str
    transitions: frozenset[Transition]
    start: str
    end: str
    cycles: tuple[KleeneCycle, ...]
    feedback: frozenset[Transition]
    order: tuple[str, ...]

    def cycle_of(self, transition: Transition) -> KleeneCycle | None:
        """The outermost Kleene cycle containing ``transition``, or None for a SEQ transition."""
        for cyc in self.cycles:
            if transition in cyc.transitions:
                return cyc
        return None

    def cycle_of_type(self, event_type: str) -> KleeneCycle | None:
        return cycle_of_type(self, event_type)

    def predecessors(self, event_type: str) -> tuple[str, ...]:
        """pe(E, q): the predecessor types of ``event_type`` in this query."""
        return tuple(sorted(a for a, b in self.transitions if b == event_type))

    def ancestors(self, event_type: str) -> frozenset[str]:
        """Every type from which ``event_type`` is reachable in the query's template (itself included
        only on a cycle)."""
        seen: set[str] = set()
        stack = [event_type]
        while stack:
            cur = stack.pop()
            for a, b in self.transitions:
                if b == cur and a not in seen:
                    seen.add(a)
                    stack.append(a)
        return frozenset(seen)


def cycle_of_type(qt: QueryTemplate, event_type: str) -> KleeneCycle | None:
    """The query's outermost Kleene cycle through ``event_type``, or None. A function beside the method
    :meth:`QueryTemplate.cycle_of_type`: compiled code calls a function natively and a named tuple's
    method as a Python method."""
    for cyc in qt.cycles:
        if event_type in cyc.types:
            return cyc
    return None


@dataclass(frozen=True)
class Template:
    """The workload template.

    ``transitions`` maps ``(from_type, to_type)`` to the frozenset of query names using it; ``start``
    and ``end`` map each query to its start and end type; ``kleene`` is the set of Kleene feedback
    transitions; ``sccs`` lists the strongly connected components with at least one transition (the
    Kleene sub-graphs), each a frozenset of types; ``queries`` holds the per-query templates.
    """

    transitions: dict[Transition, frozenset[str]]
    start: dict[str, str]
    end: dict[str, str]
    kleene: frozenset[Transition]
    queries: dict[str, QueryTemplate] = field(default_factory=dict)

    @property
    def sccs(self) -> tuple[frozenset[str], ...]:
        """The Kleene sub-graphs, computed on each use: the optimizer itself reads the per-query cycles
        (and a compiled, mypyc, frozen class could not cache it)."""
        graph = nx.DiGraph()
        graph.add_nodes_from(t for qt in self.queries.values() for t in qt.order)
        graph.add_edges_from(self.transitions)
        sccs = [frozenset(comp) for comp in nx.strongly_connected_components(graph)
                if len(comp) > 1 or any(graph.has_edge(x, x) for x in comp)]
        return tuple(sorted(sccs, key=sorted))

    def queries_on(self, transition: Transition) -> frozenset[str]:
        return self.transitions.get(transition, frozenset())

    def scc_of(self, event_type: str) -> frozenset[str] | None:
        for scc in self.sccs:
            if event_type in scc:
                return scc
        return None


def _walk(p: Pattern, outermost: bool, leaves: list[str], trans: set[Transition], feedback: set[Transition],
          cycles: list[KleeneCycle]) -> tuple[str, str]:
    """(first, last type) of a pattern, whose leaves, transitions, Kleene feedback transitions and
    outermost Kleene cycles are added to the given collections (one pass over the pattern). Every
    supported pattern has one first and one last type: a type is its own, a SEQ (never empty) takes its
    first item's first and its last item's last, a Kleene sub-pattern its inner pattern's. Inside a
    Kleene sub-pattern (``outermost`` false) no cycle is recorded (only the outermost ones are kept)."""
    if isinstance(p, Type):
        leaves.append(p.name)
        return p.name, p.name
    if isinstance(p, Seq):
        first: str | None = None
        last: str | None = None
        for item in p.items:
            if isinstance(item, Type):  # a leaf read in place, most items are (build_template 0.78 -> 0.71 ms)
                f = l_ = item.name
                leaves.append(f)
            else:
                f, l_ = _walk(item, outermost, leaves, trans, feedback, cycles)
            if last is None:
                first = f
            else:
                trans.add((last, f))
            last = l_
        assert first is not None and last is not None  # a SEQ is never empty (model.Seq)
        return first, last
    if isinstance(p, Kleene):
        if not outermost:
            f, l_ = _walk(p.inner, False, leaves, trans, feedback, cycles)
            trans.add((l_, f))
            feedback.add((l_, f))
            return f, l_
        inner: set[Transition] = set()
        inner_feedback: set[Transition] = set()
        f, l_ = _walk(p.inner, False, leaves, inner, inner_feedback, cycles)
        inner.add((l_, f))
        inner_feedback.add((l_, f))
        types = frozenset(x for tr in inner for x in tr) | {f, l_}
        cycles.append(KleeneCycle(p, types, frozenset(inner), f, l_, frozenset(inner_feedback)))
        trans |= inner
        feedback |= inner_feedback
        return f, l_
    raise CepoptError(f"Gloria supports SEQ and Kleene plus only, not {type(p).__name__.upper()} "
                      "(specs/gloria.md §10 A1)")


def _check_repeats(query: Query, leaves: list[str]) -> None:
    if len(set(leaves)) != len(leaves):
        dupes = sorted({t for t in leaves if leaves.count(t) > 1})
        raise CepoptError(f"query {query.name}: event type {dupes[0]!r} occurs twice in the pattern; "
                          "Gloria needs each type once per query (specs/gloria.md §10 A15)")


def query_template(query: Query) -> QueryTemplate:
    """The template of one query; raises CepoptError on unsupported operators or repeated types (the
    repeated type first)."""
    leaves: list[str] = []
    trans: set[Transition] = set()
    feedback: set[Transition] = set()
    cycles: list[KleeneCycle] = []
    try:
        first, last = _walk(query.pattern, True, leaves, trans, feedback, cycles)
    except CepoptError:
        _check_repeats(query, [leaf.name for leaf in iter_types(query.pattern)])
        raise
    _check_repeats(query, leaves)
    return QueryTemplate(str(query.name), frozenset(trans), first, last, tuple(cycles), frozenset(feedback),
                         tuple(leaves))


def build_template(workload: Workload | Iterable[Query]) -> Template:
    """The GRETA-style template of a workload (paper §2.2)."""
    per_query = {str(q.name): query_template(q) for q in workload}
    trans: dict[Transition, set[str]] = {}
    kleene: set[Transition] = set()
    for name, qt in per_query.items():
        for t in qt.transitions:
            trans.setdefault(t, set()).add(name)
        kleene |= qt.feedback
    return Template({t: frozenset(trans[t]) for t in sorted(trans)},
                    {n: qt.start for n, qt in per_query.items()},
                    {n: qt.end for n, qt in per_query.items()},
                    frozenset(kleene), per_query)
