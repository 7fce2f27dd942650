"""A-Seq (the non-shared plan of the Sharon kernel) = brute force, on the paper's example and random small streams."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results, results_frame
from cepopt.executor.sharon_kernel import sharon_partition
from cepopt.model import Aggregate, Filter, Query, Seq, Type, Window, Workload

TYPES = "ABCD"


def run(queries, events, jit=False):
    accs, ops = sharon_partition(queries, None, events, jit=jit)
    return results_frame([r for a in accs.values() for r in a.rows()]), ops


def aggregates(types):
    out = [Aggregate("COUNT")]
    for t in sorted(set(types)):
        out += [Aggregate("COUNT", t), Aggregate("SUM", t, "v"), Aggregate("AVG", t, "v"),
                Aggregate("MIN", t, "v"), Aggregate("MAX", t, "f"), Aggregate("SUM", t, "f")]
    return tuple(out)


@st.composite
def streams(draw, max_events=12):
    n = draw(st.integers(0, max_events))
    ts = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    rows = []
    for t in ts:
        rows.append({"ts": t, "type": draw(st.sampled_from(TYPES)), "v": draw(st.integers(-5, 9)),
                     "f": draw(st.sampled_from([0.5, 1.25, -2.0, 3.0]))})
    return pd.DataFrame(rows, columns=["ts", "type", "v", "f"]).astype({"ts": "int64", "v": "int64"})


@st.composite
def query_sets(draw, max_queries=4):
    k = draw(st.integers(1, max_queries))
    queries = []
    for i in range(k):
        types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=4))
        w = draw(st.integers(1, 14))
        s = draw(st.integers(1, w))
        where = ()
        if draw(st.booleans()):
            where = (Filter(types[0], "v", ">", draw(st.integers(-3, 5))),)
        queries.append(Query(Seq(tuple(Type(t) for t in types)), Window(w, s), aggregates(types), where,
                             name=f"q{i + 1}"))
    return Workload(tuple(queries))


def test_sharon_example_stream():
    ev = pd.DataFrame([{"ts": t, "type": ty, "v": 10 * t, "f": 0.5 * t}
                       for ty, t in [("A", 1), ("A", 2), ("B", 2), ("C", 3), ("B", 4), ("D", 5), ("B", 6),
                                     ("C", 7), ("D", 8)]])
    q = Query(Seq(tuple(Type(t) for t in "ABCD")), Window(100, 100), aggregates("ABCD"), name="q")
    got, ops = run([q], ev)
    assert compare_results(reference_results(q, ev), got) == []
    row = got[got["aggregate"] == "COUNT(*)"]
    assert row["value"].tolist() == [7]
    assert ops["update"] > 0


@settings(max_examples=50)
@given(query_sets(), streams())
def test_aseq_equals_brute_force(workload, events):
    got, _ = run(workload.queries, events)
    assert compare_results(reference_results(workload, events), got) == []


def test_big_counts_stay_exact():
    # 70 A then 70 B then 70 C: COUNT(A,B,C) = 70^3; with length-5 patterns the count of SEQ(A,A,A,A,A)
    # over 200 A events is C(200, 5) -- and a 12-long pattern would exceed int64, so the kernel
    # switches to Python ints
    ev = pd.DataFrame({"ts": range(300), "type": ["A"] * 300, "v": [1] * 300})
    q = Query(Seq(tuple(Type("A") for _ in range(12))), Window(1000, 1000), (Aggregate("COUNT"),), name="q")
    got, _ = run([q], ev)
    import math
    assert got["value"].tolist() == [math.comb(300, 12)]
    assert math.comb(300, 12) > 2 ** 63


@settings(max_examples=60)
@given(query_sets(), streams(), st.data())
def test_aseq_filters_on_missing_and_mixed_values_equal_brute_force(workload, events, data):
    """Filters on a numeric attribute with missing values (None, NaN) and on a text attribute that also
    holds numbers and missing values, with every operator: A-Seq's vectorised filter masks are the
    oracle's comparison (cepopt.predicates): missing is never a hit, "3" != "x" is."""
    from cepopt.model import COMPARISON_OPS

    n = len(events)
    events["m"] = pd.Series(data.draw(st.lists(st.sampled_from([None, float("nan"), 0, 1, 2]), min_size=n,
                                               max_size=n)), dtype=object)
    events["s"] = pd.Series(data.draw(st.lists(st.sampled_from([None, "x", "y", 3]), min_size=n, max_size=n)),
                            dtype=object)
    queries = []
    for q in workload.queries:
        ref = q.pattern.items[-1].name
        extra = data.draw(st.sampled_from([Filter(ref, "m", op, 1) for op in COMPARISON_OPS]
                                          + [Filter(ref, "s", op, "x") for op in COMPARISON_OPS]))
        queries.append(Query(q.pattern, q.window, q.aggregates, q.where + (extra,), name=q.name))
    got, _ = run(queries, events)
    assert compare_results(reference_results(Workload(tuple(queries)), events), got) == []
