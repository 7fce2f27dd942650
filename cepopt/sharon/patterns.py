"""Sharable-pattern detection (Def. 3; App. A, Alg. 7, the "modified CCSpan").

A pattern p is *sharable* in a workload iff it is a contiguous sub-pattern (substring) of length >= 2
of the SEQ patterns of at least two queries. Detection hashes every substring of every query into a
dict ``H: (class, p) -> Q_p``: O(n * l^2) time for n queries of length <= l, no all-pairs scan.

Decisions (spec §1.6, §6.3, §10):

* Queries share only within a *sharing class*: same window (WITHIN/SLIDE), same WHERE predicates and
  same GROUP-BY (Assumption 2). Classes are numbered in order of first appearance.
* Only flat SEQ patterns (or a single type) are accepted; anything else raises a CepoptError.
* A query may repeat an event type (§7.3): its costs count every position. A sub-pattern that occurs
  more than once in one query is *not* sharable by that query (which occurrence would be shared is
  ambiguous, and the executor computes a shared pattern once per query); it stays sharable by the
  queries where it occurs once. So every (p, q) pair of a candidate has a unique start position.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from cepopt.errors import CepoptError
from cepopt.model import Seq, Type, Workload, is_flat_seq

__all__ = ["query_types", "sharing_classes", "detect", "detect_sharable_patterns", "occurrences"]

Pattern = tuple[str, ...]


def query_types(workload: Workload) -> dict[str, tuple[str, ...]]:
    """Each query's pattern as a tuple of event-type names; raises for non-SEQ patterns."""
    out: dict[str, tuple[str, ...]] = {}
    for query in workload:
        pattern = query.pattern
        if not is_flat_seq(pattern):
            raise CepoptError(f"query {query.name}: Sharon handles SEQ patterns of plain event types only "
                              "(no Kleene, AND, OR, NOT or nesting)")
        if isinstance(pattern, Type):
            out[query.name] = (pattern.name,)
        else:
            assert isinstance(pattern, Seq)
            out[query.name] = tuple(item.name for item in pattern.items)
    return out


def sharing_classes(workload: Workload) -> dict[str, int]:
    """Query name -> sharing class id: queries with equal window, predicates and grouping (§7.2)."""
    ids: dict[tuple, int] = {}
    out: dict[str, int] = {}
    for query in workload:
        key = (query.window, tuple(sorted(map(repr, query.where))), tuple(sorted(map(repr, query.group_by))))
        out[query.name] = ids.setdefault(key, len(ids))
    return out


def occurrences(types: Sequence[str], min_length: int = 2) -> Counter:
    """Counter of every contiguous sub-pattern of length >= min_length of one query."""
    n = len(types)
    return Counter(tuple(types[s:e]) for s in range(n) for e in range(s + min_length, n + 1))


def detect(types: Mapping[str, Sequence[str]], classes: Mapping[str, int] | None = None
           ) -> dict[tuple[int, Pattern], frozenset[str]]:
    """Alg. 7: ``{(class, p): Q_p}`` for every sharable p (length >= 2, in >= 2 queries of the class).

    Keys are in order of first appearance (query order, then start, then length), which fixes the
    vertex order of the Sharon graph and so the tie-breaking of GWMIN and the reduction.
    """
    table: dict[tuple[int, Pattern], list[str]] = defaultdict(list)
    for name, seq in types.items():
        cls = classes[name] if classes is not None else 0
        counts = occurrences(tuple(seq))
        n = len(seq)
        for s in range(n):
            for e in range(s + 2, n + 1):
                p = tuple(seq[s:e])
                if counts[p] == 1:
                    table[(cls, p)].append(name)
    return {key: frozenset(qs) for key, qs in table.items() if len(qs) > 1}


def detect_sharable_patterns(workload: Workload) -> dict[Pattern, frozenset[str]]:
    """Alg. 7 on a workload: ``{p: Q_p}``. Requires a single sharing class (else use :func:`detect`)."""
    classes = sharing_classes(workload)
    if len(set(classes.values())) > 1:
        raise CepoptError("queries differ in window, predicates or grouping; use detect() per class")
    return {p: qs for (_, p), qs in detect(query_types(workload), classes).items()}
