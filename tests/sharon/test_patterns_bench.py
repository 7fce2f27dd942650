"""Benchmark (``pytest -m bench -s tests/sharon/test_patterns_bench.py``): sharable-pattern detection
on the generator's workloads, the issue's "500 queries of length 10 in about a second". Prints the
best of 3 wall times; checks the detected H: p -> Q_p against its definition."""

import time
from collections import Counter

import pytest

from cepopt.instances.sharon_generator import make_instance
from cepopt.sharon.patterns import detect_sharable_patterns, query_types


def _occurrences(p, q) -> int:
    return sum(q[i:i + len(p)] == p for i in range(len(q) - len(p) + 1))


@pytest.mark.bench
@pytest.mark.parametrize("queries", [500, 1000])
@pytest.mark.parametrize("preset", ["default", "stress"])
def test_detection_time(preset, queries):
    inst = make_instance(queries=queries, length=10, seed=0, preset=preset)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        found = detect_sharable_patterns(inst.workload)
        times.append(time.perf_counter() - start)
    print(f"\nsharable-pattern detection, {preset}, {queries} queries of length 10: {len(found)} patterns, "
          f"best of 3 {min(times):.3f} s")
    types = query_types(inst.workload)
    # Def. 3 with the module's rule: p (length >= 2) occurs exactly once in each query of Q_p, |Q_p| >= 2,
    # and Q_p holds every such query
    for p, qs in found.items():
        assert len(p) >= 2 and len(qs) >= 2
        assert qs == frozenset(q for q, t in types.items() if _occurrences(p, t) == 1)
    # and nothing is missed: every substring of length >= 2 of a query that occurs once in two queries
    holders = Counter(p for t in types.values()
                      for p in {t[i:j] for i in range(len(t)) for j in range(i + 2, len(t) + 1)}
                      if _occurrences(p, t) == 1)
    assert set(found) == {p for p, k in holders.items() if k >= 2}
