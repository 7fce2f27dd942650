"""Long queries (issue 21 part 5): pattern detection is linear in memory per level, so 6 queries of
length 2,000 (a 60 KB workload that exhausted 20 GB before) are detected in a fraction of a second, and
queries with long identical stretches (millions of sharable patterns) are refused with one line."""

from __future__ import annotations

import random
import resource

import pytest

from cepopt.errors import CepoptError
from cepopt.sharon.patterns import detect_with_starts, occurrences


def _random(n_queries: int, length: int, seed: int = 0) -> dict[str, list[str]]:
    rng = random.Random(seed)
    return {f"q{i}": [f"E{rng.randrange(12)}" for _ in range(length)] for i in range(n_queries)}


def test_six_queries_of_length_2000():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    table, starts = detect_with_starts(_random(6, 2000))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert table and grown_mb < 500
    for (_, p), queries in table.items():
        for q in queries:
            assert starts[q][p] >= 0


def test_matches_the_definition_on_short_queries():
    types = _random(8, 30, seed=3)
    table, starts = detect_with_starts(types)
    counts = {q: occurrences(tuple(t)) for q, t in types.items()}
    expected = {}
    for q, c in counts.items():
        for p, k in c.items():
            if k == 1:
                expected.setdefault(p, set()).add(q)
    assert {p: qs for (_, p), qs in table.items()} == {p: frozenset(qs) for p, qs in expected.items() if len(qs) > 1}
    for (_, p), qs in table.items():
        for q in qs:
            s = starts[q][p]
            assert tuple(types[q][s:s + len(p)]) == p


def test_identical_long_queries_are_refused():
    base = _random(1, 2000)["q0"]
    with pytest.raises(CepoptError, match="the queries share too much"):
        detect_with_starts({f"q{i}": list(base) for i in range(3)})
