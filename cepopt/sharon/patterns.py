"""Sharable-pattern detection (Def. 3; App. A, Alg. 7, the "modified CCSpan").

A pattern p is *sharable* in a workload iff it is a contiguous sub-pattern (substring) of length >= 2
of the SEQ patterns of at least two queries. Detection grows the substrings level by level (length 1,
2, 3, ...): a substring is a (shorter substring, next type) pair numbered once per level, and only
positions whose substring still occurs in two queries of the class go on to the next level (a longer
substring of two queries has a prefix in both). Time and memory per level are linear in the positions
that survive, so a workload costs its total length times the length of its longest shared substring,
not the cube of its query length (6 queries of length 2,000 were killed at 20 GB by the former
all-substrings table). The result ``H: (class, p) -> Q_p`` and each query's start of each p come out
together (:func:`detect_with_starts`).

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

from collections import Counter
from collections.abc import Mapping, Sequence

from cepopt.errors import CepoptError
from cepopt.model import Seq, Type, Workload, is_flat_seq

__all__ = ["query_types", "sharing_classes", "detect", "detect_sharable_patterns", "detect_with_starts",
           "occurrences"]

Pattern = tuple[str, ...]

#: Largest sum over the sharable patterns of (length x queries sharing it): the query positions the
#: Sharon graph's cells hold. Queries with long common stretches (identical queries of length 2,000
#: have 2 million sharable patterns) are refused with a CepoptError instead of exhausting memory.
MAX_CANDIDATE_CELLS = 20_000_000


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
    """Counter of every contiguous sub-pattern of length >= min_length of one query (quadratic: for tests
    and small queries only)."""
    n = len(types)
    return Counter(tuple(types[s:e]) for s in range(n) for e in range(s + min_length, n + 1))


def detect_with_starts(types: Mapping[str, Sequence[str]], classes: Mapping[str, int] | None = None
                       ) -> tuple[dict[tuple[int, Pattern], frozenset[str]], dict[str, dict[Pattern, int]]]:
    """Alg. 7: ``({(class, p): Q_p}, {q: {p: start of p in q}})`` for every sharable p (length >= 2, in >= 2
    queries of the class, exactly once in each query of Q_p).

    Keys are in order of first appearance (query order, then start, then length), which fixes the
    vertex order of the Sharon graph and so the tie-breaking of GWMIN and the reduction.
    """
    import numpy as np

    names = list(types)
    seqs = [tuple(types[q]) for q in names]
    cls_of = [classes[q] if classes is not None else 0 for q in names]
    tokens: dict = {}
    # every position of every query, flat: its token (class, type), query and start
    tok = np.fromiter((tokens.setdefault((cls_of[qi], t), len(tokens)) for qi, seq in enumerate(seqs) for t in seq),
                      dtype=np.int64)
    lengths = np.fromiter((len(seq) for seq in seqs), dtype=np.int64, count=len(seqs))
    qidx = np.repeat(np.arange(len(seqs), dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths  # flat position of each query's first type
    qend = np.repeat(first + lengths, lengths)  # per position: one past the last flat position of its query
    alive = np.arange(len(tok), dtype=np.int64)
    ids = tok.copy()
    found = []
    cells = 0
    length = 1
    while len(alive):
        keep = _in_two_queries(ids, qidx[alive])
        alive, ids = alive[keep], ids[keep]
        if length >= 2:
            level = _candidates(alive, ids, qidx, first, length)
            found += level
            cells += length * sum(len(f[3]) for f in level)
            if cells > MAX_CANDIDATE_CELLS:
                raise CepoptError(f"the queries share too much: their sharable patterns (counted up to length "
                                  f"{length}) cover more than {MAX_CANDIDATE_CELLS:,} query positions; Sharon's "
                                  "graph would not fit in memory (long identical stretches across queries?)")
        grow = alive + length < qend[alive]
        alive, ids = alive[grow], ids[grow]
        _, ids = np.unique(ids * (len(tokens) + 1) + tok[alive + length], return_inverse=True)
        ids = ids.reshape(-1)
        length += 1
    return _tables(found, names, seqs, cls_of)


def _tables(found: list, names: list[str], seqs: list[tuple[str, ...]], cls_of: list[int]):
    found.sort(key=lambda f: f[:3])
    table: dict[tuple[int, Pattern], frozenset[str]] = {}
    starts: dict[str, dict[Pattern, int]] = {q: {} for q in names}
    for qi, s, n, holders in found:
        p = seqs[qi][s:s + n]
        table[(cls_of[qi], p)] = frozenset(names[h] for h, _ in holders)
        for h, hs in holders:
            starts[names[h]][p] = hs
    return table, {q: st for q, st in starts.items() if st}


def _in_two_queries(ids, queries):
    """Mask of the positions whose substring (``ids``) occurs in at least two queries."""
    import numpy as np

    if not len(ids):
        return np.zeros(0, dtype=bool)
    pairs = np.unique(ids * (int(queries.max()) + 1) + queries)
    per_id = np.bincount(pairs // (int(queries.max()) + 1), minlength=int(ids.max()) + 1)
    return per_id[ids] >= 2


def _candidates(alive, ids, qidx, first, length: int) -> list:
    """Sharable patterns of this level: per substring, the queries where it occurs exactly once (>= 2).
    Returns (first query, its start, length, [(query, start), ...]) per pattern."""
    import numpy as np

    if not len(alive):
        return []
    q = qidx[alive]
    base = int(q.max()) + 1
    key = ids * base + q
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    once = counts[inverse.reshape(-1)] == 1
    hid, hq, hs = ids[once], q[once], alive[once]
    per_id = np.bincount(hid, minlength=int(ids.max()) + 1)
    shared = per_id[hid] >= 2
    hid, hq, hs = hid[shared], hq[shared], hs[shared]
    if not len(hid):
        return []
    order = np.lexsort((hq, hid))  # by pattern, then query
    hid, hq, hs = hid[order], hq[order], hs[order]
    starts = hs - first[hq]  # start within the query
    out = []
    bounds = np.flatnonzero(np.diff(hid)) + 1
    for grp_q, grp_s in zip(np.split(hq, bounds), np.split(starts, bounds), strict=True):
        holders = list(zip(grp_q.tolist(), grp_s.tolist(), strict=True))
        qi, s = holders[0]
        out.append((qi, s, length, holders))
    return out


def detect(types: Mapping[str, Sequence[str]], classes: Mapping[str, int] | None = None
           ) -> dict[tuple[int, Pattern], frozenset[str]]:
    """Alg. 7: ``{(class, p): Q_p}`` for every sharable p (:func:`detect_with_starts`)."""
    return detect_with_starts(types, classes)[0]


def detect_sharable_patterns(workload: Workload) -> dict[Pattern, frozenset[str]]:
    """Alg. 7 on a workload: ``{p: Q_p}``. Requires a single sharing class (else use :func:`detect`)."""
    classes = sharing_classes(workload)
    if len(set(classes.values())) > 1:
        raise CepoptError("queries differ in window, predicates or grouping; use detect() per class")
    return {p: qs for (_, p), qs in detect(query_types(workload), classes).items()}
