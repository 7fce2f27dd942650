"""Issue 21 part 5: parsing and loading take linear time (benchmarks: ``pytest -m bench``).

Before: 40,000 one-line queries took 17.8 s of CPU and 32,000 declared event types 9.8 s (``list.count``
in loops). Now 100,000 queries parse in under 5 s of CPU on an idle machine. The figures are printed
(``pytest -m bench -s``); CPU time, not wall time, is compared.
"""

from __future__ import annotations

import time

import pytest

from cepopt.instance import from_json
from cepopt.syntax import parse_queries

pytestmark = pytest.mark.bench


def _cpu(fn):
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def test_bench_parse_100000_queries():
    n = 100_000
    text = "\n".join(f"q{i}: PATTERN SEQ(A{i % 50}, B b, C+) WHERE b.x > 3 WITHIN 10 SLIDE 5" for i in range(n))
    workload, seconds = _cpu(lambda: parse_queries(text))
    print(f"\nparse {n} queries: {seconds:.2f} s CPU")
    assert len(workload) == n
    assert seconds < 5.0


def test_bench_load_32000_declared_event_types():
    n = 32_000
    types = [f"T{i}" for i in range(n)]
    data = {"problem": "sharon", "event_types": types, "statistics": {"rates": dict.fromkeys(types, 1.0)},
            "queries": "\n".join(f"q{i}: PATTERN SEQ(T{i}, T{(i + 1) % n}) WITHIN 10" for i in range(0, n, 2))}
    instance, seconds = _cpu(lambda: from_json(data))
    print(f"\nload {n} declared event types, {n // 2} queries: {seconds:.2f} s CPU")
    assert len(instance.event_types) == n
    assert seconds < 5.0
