"""Sharing-conflict resolution: graph expansion (§7.1, Def. 16, Alg. 5-6).

Each candidate v = (p, Q_p) of the Sharon graph becomes a set of *options* (p, Q') with Q' ⊆ Q_p and
|Q'| >= 2: an option does not share p in some of the queries that cause v's conflicts.

Alg. 5 (cleaned, spec §6.1) grows a BFS tree of options by dropping, from the current option, non-empty
sets of queries that cause a conflict with one of v's neighbours. Its closed form, used here, is

    O(v) = { Q' ⊆ Q_p : |Q'| >= 2 and Q_p \\ Q' ⊆ Q_cause(v) }

where Q_cause(v) is the set of queries in which v's pattern overlaps the pattern of some neighbour.
Options are enumerated in BFS order of Alg. 5 (fewest dropped queries first, then lexicographically),
so the cap keeps the options closest to the original candidate. The number of options is exponential
in |Q_cause(v)|; beyond ``max_options`` per candidate the enumeration stops and the expansion reports
it (``options_cut``): the expanded graph is then a sub-graph of the full one.

Alg. 6: the expanded graph has every option with BValue > 0 (rule R1, spec B7) and an edge between any
two options in conflict (Def. 6), including options of the same pattern that share a query.

``subsets="all"`` (ours) lets every query of Q_p be dropped and expands every sharable pattern, also
those whose full candidate is non-beneficial: its MWIS is the true optimum over per-query sharing
decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import combinations

from cepopt.clock import check
from cepopt.sharon.graph import SharonGraph, Vertex

__all__ = ["causing_all", "causing_queries", "enumerate_options", "count_options", "expand", "expanded_size"]


def causing_queries(graph: SharonGraph, i: int) -> frozenset[str]:
    """Q_cause(v): the queries of v in which v overlaps another vertex of ``graph``."""
    v = graph.vertices[i]
    cells = graph.cells
    out = set()
    for q in v.queries:
        s = graph.starts[q][v.pattern]
        if any(len(cells[(q, pos)]) > 1 for pos in range(s, s + len(v.pattern))):
            out.add(q)
    return frozenset(out)


def causing_all(graph: SharonGraph, only: frozenset[str] | None = None) -> list[frozenset[str]]:
    """Q_cause(v) for every vertex at once: positions counted per query, then a slice per (v, q). With
    ``only``: Q_cause(v) among those queries (the others are not looked at)."""
    counts: dict[str, list[int]] = {}
    starts = graph.starts
    for v in graph.vertices:
        n = len(v.pattern)
        for q in (v.queries if only is None else v.queries & only):
            row = counts.get(q)
            if row is None:
                row = counts[q] = [0] * (max(starts[q].values(), default=0) + 64)
            s = starts[q][v.pattern]
            if s + n > len(row):
                row.extend([0] * (s + n - len(row)))
            for pos in range(s, s + n):
                row[pos] += 1
    out = []
    for v in graph.vertices:
        n = len(v.pattern)
        out.append(frozenset(q for q in (v.queries if only is None else v.queries & only)
                             if max(counts[q][starts[q][v.pattern]:starts[q][v.pattern] + n]) > 1))
    return out


def count_options(n_queries: int, n_droppable: int, cap: int | None = None) -> int:
    """|O(v)|: subsets of the droppable queries whose removal leaves >= 2 queries. With ``cap`` the sum
    stops once it passes ``cap`` (the value returned is then some number above it): a candidate with
    thousands of droppable queries has astronomically many options, and summing them exactly is what
    made refusing a large expanded graph cost a minute."""
    total, term = 0, 1  # term = comb(n_droppable, j)
    for j in range(0, min(n_droppable, n_queries - 2) + 1):
        total += term
        if cap is not None and total > cap:
            return total
        term = term * (n_droppable - j) // (j + 1)
    return total


def enumerate_options(queries: frozenset[str], droppable: frozenset[str], cap: int | None = None
                      ) -> Iterator[frozenset[str]]:
    """The option query sets of Alg. 5 in BFS order (fewest dropped first); at most ``cap`` of them."""
    order = sorted(droppable)
    produced = 0
    for j in range(0, len(order) + 1):
        if len(queries) - j < 2:
            return
        for drop in combinations(order, j):
            if cap is not None and produced >= cap:
                return
            produced += 1
            yield queries - frozenset(drop)


def expanded_size(graph: SharonGraph, max_options: int | None, extra: Sequence[Vertex] = (),
                  all_subsets: bool = False, stop_above: int | None = None) -> int:
    """Number of options the expansion would enumerate (before the BValue filter), without doing it.
    With ``stop_above`` the count stops once it passes that many (a refusal costs no more than counting)."""
    total = 0
    causing = None if all_subsets else causing_all(graph)
    sources = [(v, v.queries if all_subsets else causing[i]) for i, v in enumerate(graph.vertices)]
    if all_subsets:
        sources += [(v, v.queries) for v in extra]
    for v, droppable in sources:
        n = count_options(len(v.queries), len(droppable), max_options if max_options is not None else stop_above)
        total += n if max_options is None else min(n, max_options)
        if stop_above is not None and total > stop_above:
            return total
    return total


def expand(graph: SharonGraph, weigh: Callable[[tuple[str, ...], frozenset[str], int], float], *,
           max_options: int | None = 256, extra: Sequence[Vertex] = (), all_subsets: bool = False,
           deadline: float | None = None) -> tuple[SharonGraph, dict]:
    """Alg. 5-6: the expanded graph of ``graph`` and statistics.

    ``weigh(pattern, queries, cls)`` gives BValue of an option. ``extra`` are further candidates
    (non-beneficial full candidates) expanded only when ``all_subsets`` is set, with every query
    droppable. Returns (expanded graph, stats) with stats ``options`` (before the BValue filter),
    ``options_kept``, ``options_cut`` (candidates whose options the cap truncated) and
    ``options_not_enumerated``. Past ``deadline`` (a :func:`cepopt.clock.now` value) it stops with
    :class:`~cepopt.clock.TimeLimitReached`.
    """
    stats = {"options": 0, "options_kept": 0, "options_cut": 0, "options_not_enumerated": 0,
             "max_options": max_options}
    out: list[Vertex] = []
    seen: set[tuple] = set()
    causing = None if all_subsets else causing_all(graph)
    sources = [(v, causing[i] if not all_subsets else v.queries) for i, v in enumerate(graph.vertices)]
    if all_subsets:
        sources += [(v, v.queries) for v in extra]
    for k, (v, droppable) in enumerate(sources):
        if k % 16 == 0:
            check(deadline, "building the expanded graph")
        total = count_options(len(v.queries), len(droppable))
        if max_options is not None and total > max_options:
            stats["options_cut"] += 1
            stats["options_not_enumerated"] += total - max_options
        for qs in enumerate_options(v.queries, droppable, max_options):
            key = (v.pattern, qs, v.cls)
            if key in seen:
                continue
            seen.add(key)
            stats["options"] += 1
            w = v.weight if qs == v.queries else weigh(v.pattern, qs, v.cls)
            if w > 0:
                out.append(Vertex(v.pattern, qs, w, v.cls))
    stats["options_kept"] = len(out)
    return SharonGraph.build(out, graph.starts), stats
