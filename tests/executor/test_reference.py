"""The brute-force oracle against the papers' worked examples (sharon.md §9.3, hamlet.md §7,
gloria.md §9 E1) and window/negation/group semantics."""

from __future__ import annotations

import pytest

from cepopt.executor.reference import enumerate_trends, reference_results, window_range
from cepopt.executor.results import compare_results, digest, format_group, format_value, results_frame
from cepopt.model import (
    Aggregate,
    And,
    AttrRef,
    Condition,
    Equivalence,
    Filter,
    Kleene,
    Not,
    Or,
    Query,
    Seq,
    Type,
    Window,
    Workload,
)

SHARON_STREAM = [("A", 1), ("A", 2), ("B", 2), ("C", 3), ("B", 4), ("D", 5), ("B", 6), ("C", 7), ("D", 8)]


def sharon_events():
    return [{"ts": t, "type": ty, "v": 10 * t} for ty, t in SHARON_STREAM]


def seq(*types):
    return Seq(tuple(Type(t) for t in types))


def table(df):
    return {(q, g, w, a): v for q, g, w, a, v in df.itertuples(index=False)}


def test_sharon_example3_and_window_vectors():
    aggs = (Aggregate("COUNT"), Aggregate("SUM", "A", "v"))
    w = Workload((
        Query(seq("A", "B", "C", "D"), Window(100, 100), aggs + (Aggregate("SUM", "D", "v"),
              Aggregate("MIN", "D", "v"), Aggregate("MAX", "D", "v")), name="abcd"),
        Query(seq("A", "B"), Window(100, 100), aggs, name="ab"),
        Query(seq("A", "B"), Window(4, 1), aggs, name="ab41"),
        Query(seq("A", "B", "C", "D"), Window(4, 1), aggs, name="abcd41"),
        Query(seq("A", "B", "C", "D"), Window(6, 2), aggs, name="abcd62"),
        Query(seq("A", "B"), Window(6, 2), aggs, name="ab62"),
        Query(seq("A", "B", "C", "D"), Window(8, 8), aggs, name="abcd88"),
        Query(seq("A", "B"), Window(8, 8), aggs, name="ab88"),
    ))
    got = table(reference_results(w, sharon_events()))
    expected = {
        ("abcd", "", 0, "COUNT(*)"): 7, ("abcd", "", 0, "SUM(A.v)"): 90, ("abcd", "", 0, "SUM(D.v)"): 530,
        ("abcd", "", 0, "MIN(D.v)"): 50, ("abcd", "", 0, "MAX(D.v)"): 80,
        ("ab", "", 0, "COUNT(*)"): 5, ("ab", "", 0, "SUM(A.v)"): 70,
        ("ab41", "", 0, "COUNT(*)"): 1, ("ab41", "", 0, "SUM(A.v)"): 10,
        ("ab41", "", 1, "COUNT(*)"): 3, ("ab41", "", 1, "SUM(A.v)"): 40,
        ("ab41", "", 2, "COUNT(*)"): 1, ("ab41", "", 2, "SUM(A.v)"): 20,
        ("abcd62", "", 0, "COUNT(*)"): 1, ("abcd62", "", 0, "SUM(A.v)"): 10,
        ("ab62", "", 0, "COUNT(*)"): 3, ("ab62", "", 0, "SUM(A.v)"): 40,
        ("ab62", "", 1, "COUNT(*)"): 2, ("ab62", "", 1, "SUM(A.v)"): 40,
        ("abcd88", "", 0, "COUNT(*)"): 1, ("abcd88", "", 0, "SUM(A.v)"): 10,
        ("ab88", "", 0, "COUNT(*)"): 5, ("ab88", "", 0, "SUM(A.v)"): 70,
    }
    assert got == expected
    assert all(type(v) is int for v in got.values())


def test_hamlet_t3_t5_and_t9():
    q1 = Query(Seq((Type("A"), Kleene(Type("B")))), Window(100, 100), name="q1")
    q2 = Query(Seq((Type("C"), Kleene(Type("B")))), Window(100, 100), name="q2")
    t3 = [{"ts": i, "type": t} for i, t in enumerate("AACBBBB")]
    assert table(reference_results(Workload((q1, q2)), t3)) == {
        ("q1", "", 0, "COUNT(*)"): 30, ("q2", "", 0, "COUNT(*)"): 15}
    t5 = t3 + [{"ts": 7 + i, "type": t} for i, t in enumerate("AACCCB")]
    assert table(reference_results(Workload((q1, q2)), t5)) == {
        ("q1", "", 0, "COUNT(*)"): 64, ("q2", "", 0, "COUNT(*)"): 34}
    q = Query(Seq((Type("A"), Kleene(Type("B")), Type("C"))), Window(100, 100),
              (Aggregate("COUNT"), Aggregate("COUNT", "B"), Aggregate("SUM", "B", "v"),
               Aggregate("AVG", "B", "v"), Aggregate("MIN", "B", "v"), Aggregate("MAX", "B", "v")), name="q")
    t9 = [{"ts": 1, "type": "A"}, {"ts": 2, "type": "B", "v": 3}, {"ts": 3, "type": "B", "v": 1},
          {"ts": 4, "type": "C"}, {"ts": 5, "type": "B", "v": 2}, {"ts": 6, "type": "C"}]
    assert table(reference_results(q, t9)) == {
        ("q", "", 0, "COUNT(*)"): 10, ("q", "", 0, "COUNT(B)"): 16, ("q", "", 0, "SUM(B.v)"): 32,
        ("q", "", 0, "AVG(B.v)"): 2.0, ("q", "", 0, "MIN(B.v)"): 1, ("q", "", 0, "MAX(B.v)"): 3}


def test_gloria_e1_nested_kleene():
    ab = Kleene(Seq((Type("A"), Type("B"))))
    q1 = Query(Seq((Type("C"), ab, Type("D"))), Window(100, 100), name="q1")
    q2 = Query(Seq((Type("C"), ab)), Window(100, 100), name="q2")
    ev = [{"ts": i, "type": t} for i, t in enumerate("CABABD")]
    assert table(reference_results(Workload((q1, q2)), ev)) == {
        ("q1", "", 0, "COUNT(*)"): 4, ("q2", "", 0, "COUNT(*)"): 4}
    ends = sorted(m.events[-1] for m in enumerate_trends(q2, ev))
    assert ends == [2, 4, 4, 4]


def test_equal_timestamps_never_follow_each_other():
    q = Query(seq("A", "B"), Window(10, 10))
    ev = [{"ts": 1, "type": "A"}, {"ts": 1, "type": "B"}, {"ts": 2, "type": "B"}]
    assert table(reference_results(q, ev)) == {("q1", "", 0, "COUNT(*)"): 1}


def test_groups_equivalence_and_filters():
    q = Query(seq("A", "B"), Window(10, 10), where=(Equivalence("car"), Filter("B", "x", ">", 0)),
              group_by=(AttrRef("lane"),), name="q")
    ev = [{"ts": 1, "type": "A", "car": 1, "lane": 1, "x": 0},
          {"ts": 2, "type": "A", "car": 2, "lane": 1, "x": 0},
          {"ts": 3, "type": "B", "car": 1, "lane": 1, "x": 5},
          {"ts": 4, "type": "B", "car": 2, "lane": 1, "x": 0},
          {"ts": 5, "type": "B", "car": 2, "lane": 1, "x": 1},
          {"ts": 6, "type": "B", "car": 1, "lane": 2, "x": 1}]
    # car 1 lane 1: (a1,b3); car 2 lane 1: (a2,b5); the lane-2 B has no A in its partition
    assert table(reference_results(q, ev)) == {("q", "lane=1", 0, "COUNT(*)"): 2}


def test_negation_between_and_trailing():
    ev = [{"ts": 1, "type": "A"}, {"ts": 2, "type": "N"}, {"ts": 3, "type": "B"}, {"ts": 4, "type": "A"},
          {"ts": 5, "type": "B"}, {"ts": 7, "type": "N"}]
    mid = Query(Seq((Type("A"), Not(Type("N")), Type("B"))), Window(100, 100), name="mid")
    # (a1,b3) and (a1,b5) are cut by n2; (a4,b5) stays
    assert table(reference_results(mid, ev)) == {("mid", "", 0, "COUNT(*)"): 1}
    trail = Query(Seq((Type("A"), Type("B"), Not(Type("N")))), Window(6, 6), name="trail")
    # window 0 = [0,6): no N after b3 or b5 before 6 -> (a1,b3),(a1,b5),(a4,b5)
    assert table(reference_results(trail, ev)) == {("trail", "", 0, "COUNT(*)"): 3}


def test_or_and_and_conditions():
    ev = [{"ts": 1, "type": "A", "x": 1}, {"ts": 2, "type": "B", "x": 0}, {"ts": 3, "type": "B", "x": 2}]
    q_or = Query(Or((Type("A"), Type("B"))), Window(10, 10), name="o")
    q_and = Query(And((Type("B"), Type("A"))), Window(10, 10), name="n")
    q_cond = Query(seq("A", "B"), Window(10, 10), where=(Condition(AttrRef("x", "A"), "<", AttrRef("x", "B")),),
                   name="c")
    got = table(reference_results(Workload((q_or, q_and, q_cond)), ev))
    assert got == {("o", "", 0, "COUNT(*)"): 3, ("n", "", 0, "COUNT(*)"): 2, ("c", "", 0, "COUNT(*)"): 1}


def test_ambiguous_pattern_counts_event_sequences_once():
    q = Query(Seq((Kleene(Type("A")), Kleene(Type("A")))), Window(10, 10))
    ev = [{"ts": i, "type": "A"} for i in range(3)]
    # event sequences of length >= 2 over 3 ordered events: 3 + 1
    assert table(reference_results(q, ev)) == {("q1", "", 0, "COUNT(*)"): 4}


def test_window_range_and_no_slide():
    assert list(window_range(3, 5, 4, 1)) == [2, 3]
    assert list(window_range(0, 3, 4, 1)) == [0]
    assert list(window_range(1, 9, 8, None)) == [0]
    assert list(window_range(1, 10, 8, None)) == []


def test_results_format_and_digest():
    df = results_frame([("q", "", 0, "COUNT(*)", 2 ** 70), ("q", "", 0, "AVG(B.v)", 0.1 + 0.2)])
    assert list(df.columns) == ["query", "group", "window", "aggregate", "value"]
    assert df["value"].iloc[1] == 2 ** 70
    other = results_frame([("q", "", 0, "AVG(B.v)", 0.3), ("q", "", 0, "COUNT(*)", 2 ** 70)])
    assert digest(df) == digest(other)
    assert compare_results(df, other) == []
    assert format_value(2 ** 70) == str(2 ** 70)
    assert format_value(90.0) == "90"
    assert format_group(["lane", "car"], [1.0, "x"]) == "lane=1,car=x"
    with pytest.raises(AssertionError):
        assert compare_results(df, results_frame([("q", "", 0, "COUNT(*)", 1)])) == []


def test_hamlet_published_counts(shared_dir):
    """The Hamlet authors' test streams, read by the hamlet stream reader: SEQ(A,B+) = 132 and
    SEQ(C,B+) = 72 on Paper_TestStream; SEQ(2+,12,4,1) = 3875 on Syn_TestStream (anchors README)."""
    from cepopt.instances.streams import generate

    big = Window(10 ** 6, 10 ** 6)
    paper = generate("hamlet", file="Paper_TestStream")
    w = Workload((Query(Seq((Type("T1"), Kleene(Type("T2")))), big, name="q1"),
                  Query(Seq((Type("T3"), Kleene(Type("T2")))), big, name="q2")))
    assert table(reference_results(w, paper)) == {("q1", "", 0, "COUNT(*)"): 132, ("q2", "", 0, "COUNT(*)"): 72}
    syn = generate("hamlet", file="Syn_TestStream")
    q = Query(Seq((Kleene(Type("T2")), Type("T12"), Type("T4"), Type("T1"))), big, name="q")
    assert table(reference_results(q, syn)) == {("q", "", 0, "COUNT(*)"): 3875}
