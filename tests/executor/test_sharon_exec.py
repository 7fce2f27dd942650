"""Sharon shared execution = brute force under every plan (non-shared, greedy, optimal, random
valid plans), for every aggregate; Example 3 = 7."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results, results_frame
from cepopt.executor.sharon_kernel import plan_segments, sharon_partition
from cepopt.model import Filter, Query, Seq, Statistics, Type, Window, Workload
from cepopt.sharon.plan import SharonPlan

from .test_aseq import aggregates, streams

TYPES = "ABCD"


def run(queries, plan, events):
    accs, ops = sharon_partition(queries, plan, events)
    return results_frame([r for a in accs.values() for r in a.rows()]), ops


def candidates(workload):
    out = {}
    for q in workload:
        types = tuple(leaf.name for leaf in q.pattern.items)
        for s in range(len(types)):
            for e in range(s + 2, len(types) + 1):
                p = types[s:e]
                hits = sum(1 for i in range(len(types) - len(p) + 1) if types[i:i + len(p)] == p)
                if hits == 1:
                    out.setdefault(p, set()).add(q.name)
    return {p: qs for p, qs in out.items() if len(qs) > 1}


@st.composite
def workloads(draw):
    k = draw(st.integers(2, 5))
    w = draw(st.integers(1, 14))
    s = draw(st.integers(1, w))
    window = Window(w, s)
    base = draw(st.lists(st.sampled_from(TYPES), min_size=2, max_size=3))
    queries = []
    for i in range(k):
        pre = draw(st.lists(st.sampled_from(TYPES), max_size=2))
        post = draw(st.lists(st.sampled_from(TYPES), max_size=2))
        types = pre + base + post if draw(st.booleans()) else draw(
            st.lists(st.sampled_from(TYPES), min_size=1, max_size=4))
        where = tuple(Filter("A", "v", ">", -3) for _ in range(1) if "A" in types)
        queries.append(Query(Seq(tuple(Type(t) for t in types)), window, aggregates(types), where,
                             name=f"q{i + 1}"))
    return Workload(tuple(queries))


@st.composite
def plans(draw, workload):
    cands = sorted((p, tuple(sorted(qs))) for p, qs in candidates(workload).items())
    entries = []
    for p, qs in draw(st.lists(st.sampled_from(cands), max_size=4, unique=True)) if cands else []:
        members = draw(st.sets(st.sampled_from(qs), min_size=2, max_size=len(qs)))
        used = {q for _, m in entries for q in m if _ == p}
        members = members - used
        if len(members) < 2:
            continue
        trial = SharonPlan.of(entries + [(p, members)])
        try:
            plan_segments(workload.queries, trial)
        except CepoptError:
            continue
        entries.append((p, members))
    return SharonPlan.of(entries)


@settings(max_examples=50)
@given(st.data())
def test_every_random_plan_equals_brute_force(data):
    workload = data.draw(workloads())
    events = data.draw(streams(max_events=11))
    plan = data.draw(plans(workload))
    expected = reference_results(workload, events)
    got, _ = run(workload.queries, plan, events)
    assert compare_results(expected, got) == [], str(plan)
    nonshared, _ = run(workload.queries, SharonPlan.empty(), events)
    assert compare_results(expected, nonshared) == []


def test_example3_shared_and_windows():
    ev = pd.DataFrame([{"ts": t, "type": ty, "v": 10 * t}
                       for ty, t in [("A", 1), ("A", 2), ("B", 2), ("C", 3), ("B", 4), ("D", 5), ("B", 6),
                                     ("C", 7), ("D", 8)]])
    for window in (Window(1000), Window(100, 100), Window(4, 1), Window(6, 2)):
        w = Workload((Query(Seq(tuple(Type(t) for t in "ABCD")), window, name="q1"),
                      Query(Seq(tuple(Type(t) for t in "AB")), window, name="q2"),
                      Query(Seq(tuple(Type(t) for t in "ABC")), window, name="q3")))
        for plan in (SharonPlan.empty(), SharonPlan.of([(("A", "B"), {"q1", "q2", "q3"})]),
                     SharonPlan.of([(("A", "B", "C"), {"q1", "q3"})])):
            got, ops = run(w.queries, plan, ev)
            assert compare_results(reference_results(w, ev), got) == []
            if window.length >= 100:
                assert got[(got["query"] == "q1")]["value"].tolist() == [7]


def test_bundled_instance_stream_if_present():
    from cepopt.instances import load

    inst = load("sharon-example3")  # bundled: a failure to load it is a failure, not a skip
    ev = pd.DataFrame(list(inst.stream))
    expected = reference_results(inst.workload, ev)
    for plan in (SharonPlan.empty(), SharonPlan.of([(("A", "B"), set(inst.workload.names))])):
        got, _ = run(inst.workload.queries, plan, ev)
        assert compare_results(expected, got) == []
    q1 = got[(got["query"] == "q1") & (got["aggregate"] == "COUNT(*)")]
    assert q1["value"].tolist() == [7]


def test_greedy_and_optimal_plans_equal_brute_force():
    from cepopt.sharon.methods import greedy, sharon
    from cepopt.sharon.problem import SharonProblem

    rows = [("A", "B", "C", "D"), ("A", "B", "C"), ("B", "C", "D"), ("A", "B", "D"), ("C", "A", "B"),
            ("B", "C", "A")]
    window = Window(6, 2)
    w = Workload(tuple(Query(Seq(tuple(Type(t) for t in r)), window, aggregates(r), name=f"q{i + 1}")
                       for i, r in enumerate(rows)))
    stats = Statistics(rates={t: 1 for t in TYPES})
    problem = SharonProblem.from_workload(w, stats)
    import random

    rnd = random.Random(3)
    ev = pd.DataFrame({"ts": sorted(rnd.randrange(30) for _ in range(40)),
                       "type": [rnd.choice(TYPES) for _ in range(40)],
                       "v": [rnd.randrange(-4, 9) for _ in range(40)],
                       "f": [rnd.choice([0.5, 2.25]) for _ in range(40)]})
    expected = reference_results(w, ev)
    plans = [SharonPlan.empty(), greedy(problem).plan, sharon(problem).plan]
    for plan in plans:
        got, _ = run(w.queries, plan, ev)
        assert compare_results(expected, got) == [], str(plan)


def test_different_filters_on_a_shared_pattern_are_refused():
    w = Workload((Query(Seq((Type("A"), Type("B"))), Window(5, 5), where=(Filter("A", "v", ">", 1),), name="q1"),
                  Query(Seq((Type("A"), Type("B"), Type("C"))), Window(5, 5), name="q2")))
    ev = pd.DataFrame({"ts": [1, 2], "type": ["A", "B"], "v": [3, 3]})
    with pytest.raises(CepoptError, match="different filters"):
        run(w.queries, SharonPlan.of([(("A", "B"), {"q1", "q2"})]), ev)


@pytest.mark.spark
def test_experiment_quick(spark, tmp_path):
    from cepopt.experiments.framework import run_experiment
    from cepopt.experiments.sharon_executor import EXPERIMENT

    out = run_experiment(EXPERIMENT, quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert set(df["plan"]) == {"nonshared", "greedy", "optimal"}
    assert df["digest"].nunique() == 1 and (df["results_rows"] > 0).all()
    assert (df["operations"] > 0).all()
    assert out.markdown_path is not None and (tmp_path / "sharon-executor.png").is_file()


def test_int64_overflow_guard_switches_to_python_ints(monkeypatch):
    """With the int64 headroom shrunk to 50, every kernel path (level updates, boundary maps,
    combinations) must switch to Python ints and still agree with brute force."""
    import random

    import cepopt.executor.aseq as aseq
    import cepopt.executor.sharon_kernel as sk

    monkeypatch.setattr(aseq, "_INT64_SAFE", 50)
    monkeypatch.setattr(sk, "_INT64_SAFE", 50)
    rnd = random.Random(5)
    ev = pd.DataFrame({"ts": sorted(rnd.randrange(25) for _ in range(45)),
                       "type": [rnd.choice(TYPES) for _ in range(45)],
                       "v": [rnd.randrange(-4, 30) for _ in range(45)],
                       "f": [rnd.choice([0.5, 2.25]) for _ in range(45)]})
    rows = [("A", "B", "C", "D"), ("A", "B", "C"), ("D", "A", "B", "C"), ("B", "C", "D")]
    w = Workload(tuple(Query(Seq(tuple(Type(t) for t in r)), Window(12, 4), aggregates(r), name=f"q{i + 1}")
                       for i, r in enumerate(rows)))
    expected = reference_results(w, ev)
    for plan in (SharonPlan.empty(), SharonPlan.of([(("A", "B", "C"), {"q1", "q2", "q3"})]),
                 SharonPlan.of([(("B", "C"), {"q1", "q2", "q3", "q4"})])):
        got, _ = run(w.queries, plan, ev)
        assert compare_results(expected, got) == [], str(plan)
    from cepopt.executor.aseq import aseq_partition

    accs, _ = aseq_partition(w.queries, ev)
    assert compare_results(expected, results_frame([r for a in accs.values() for r in a.rows()])) == []


@st.composite
def count_workloads(draw):
    """COUNT(*)-only workloads: the vectorized kernel's domain (repeated types, filters, windows)."""
    w = draw(workloads())
    return Workload(tuple(Query(q.pattern, q.window, where=q.where, name=q.name) for q in w.queries))


@settings(max_examples=60)
@given(st.data())
def test_vectorized_kernel_equals_general_kernel_and_brute_force(data):
    """aseq_fast = brute force, and its operation counts equal the general kernel's, under random plans."""
    from cepopt.executor.aseq_fast import eligible, fast_partition
    from cepopt.executor.sharon_kernel import general_partition

    workload = data.draw(count_workloads())
    events = data.draw(streams(max_events=14))
    plan = data.draw(plans(workload))
    assert eligible(workload.queries)
    expected = reference_results(workload, events)
    fa, fops = fast_partition(workload.queries, plan, events)
    ga, gops = general_partition(workload.queries, plan, events)
    got = results_frame([r for a in fa.values() for r in a.rows()])
    assert compare_results(expected, got) == [], str(plan)
    assert compare_results(expected, results_frame([r for a in ga.values() for r in a.rows()])) == []
    assert fops == gops


def test_flush_does_not_reuse_reads_of_the_last_batch():
    """Regression: the general kernel cached Seg_1 reads per batch; at the end of the partition a query
    whose whole pattern is the shared one reused a snapshot read taken before the last batch's updates."""
    from cepopt.executor.sharon_kernel import general_partition

    w = Workload((Query(Seq((Type("C"), Type("D"))), Window(10, 10), name="q1"),
                  Query(Seq((Type("C"), Type("D"), Type("E"))), Window(10, 10), name="q2")))
    ev = pd.DataFrame({"ts": [1, 3, 3], "type": ["C", "D", "E"]})
    plan = SharonPlan.of([(("C", "D"), {"q1", "q2"})])
    for fn in (general_partition, sharon_partition):
        accs, _ = fn(w.queries, plan, ev)
        got = results_frame([r for a in accs.values() for r in a.rows()])
        assert compare_results(reference_results(w, ev), got) == []


def test_ec_shared_workload_is_in_the_papers_sharing_regime():
    """The benchmark's ec-shared workload: the cost model predicts non-shared/shared >= 5 at 120 queries
    (greedy is a lower bound of the optimal plan's score), and the plan leaves no query unshared."""
    from cepopt.experiments.sharon_executor import make_instance
    from cepopt.solve import build_problem, solve

    inst = make_instance(120, 0, workload="ec-shared")
    _, problem, _ = build_problem(inst, {"expand": False})
    g = solve(inst, "greedy", seed=0, problem=problem)
    total = problem.cost.total_nonshared()
    assert total / (total - g.objective) >= 5
    assert {q for _, qs in g.plan.shared for q in qs} == set(inst.workload.names)


def _fast_vs_oracle(workload, plan, events, *, min_events=None, max_batches=None, brute=True):
    """fast_partition (chunk sizes patched) = brute force and the general kernel, same operation counts."""
    from cepopt.executor import aseq_fast
    from cepopt.executor.sharon_kernel import general_partition

    saved = aseq_fast.MIN_EVENTS, aseq_fast.MAX_BATCHES
    try:
        if min_events is not None:
            aseq_fast.MIN_EVENTS, aseq_fast.MAX_BATCHES = min_events, max_batches
        fa, fops = aseq_fast.fast_partition(workload.queries, plan, events)
    finally:
        aseq_fast.MIN_EVENTS, aseq_fast.MAX_BATCHES = saved
    ga, gops = general_partition(workload.queries, plan, events)
    got = results_frame([r for a in fa.values() for r in a.rows()])
    general = results_frame([r for a in ga.values() for r in a.rows()])
    assert compare_results(general, got) == [], str(plan)
    if brute:
        assert compare_results(reference_results(workload, events), got) == [], str(plan)
    assert fops == gops


@settings(max_examples=60)
@given(st.data())
def test_chunk_boundaries_anywhere(data):
    """Chunks of 1-3 batches (cut inside windows, between equal-time-stamp neighbours' slides) give
    the brute-force results and the general kernel's operation counts, under random plans."""
    workload = data.draw(count_workloads())
    events = data.draw(streams(max_events=14))
    plan = data.draw(plans(workload))
    lo = data.draw(st.integers(1, 3))
    _fast_vs_oracle(workload, plan, events, min_events=lo, max_batches=data.draw(st.integers(lo, 4)))


@settings(max_examples=40)
@given(st.data())
def test_mixed_windows_and_filters(data):
    """Queries with different windows (one frame each) and filters, non-shared and shared among equal windows."""
    k = data.draw(st.integers(2, 4))
    queries = []
    for i in range(k):
        types = data.draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=4))
        w = data.draw(st.integers(1, 9))
        window = Window(w, data.draw(st.integers(1, w)))
        where = (Filter(types[0], "v", "<", data.draw(st.integers(-2, 6))),) if data.draw(st.booleans()) else ()
        if i and data.draw(st.booleans()):
            # same window and first two types as q1: a candidate for sharing
            window, where = queries[0].window, ()
            types = [t.name for t in queries[0].pattern.items[:2]] + types[:2]
        queries.append(Query(Seq(tuple(Type(t) for t in types)), window, where=where, name=f"q{i + 1}"))
    workload = Workload(tuple(queries))
    events = data.draw(streams(max_events=14))
    _fast_vs_oracle(workload, SharonPlan.empty(), events, min_events=data.draw(st.integers(1, 64)),
                    max_batches=4096)
    head = tuple(t.name for t in queries[0].pattern.items[:2])

    def once(q):
        names = [t.name for t in q.pattern.items]
        return sum(tuple(names[i:i + 2]) == head for i in range(len(names) - 1)) == 1

    same = [q for q in queries if q.window == queries[0].window and not q.where and once(q)
            and tuple(t.name for t in q.pattern.items[:2]) == head]
    if len(same) >= 2:
        _fast_vs_oracle(workload, SharonPlan.of([(head, {q.name for q in same})]), events)


@settings(max_examples=40)
@given(st.data())
def test_fast_kernel_int64_guard(data):
    """With the int64 headroom shrunk, the fast kernel is exact or hands over (Fallback), and
    sharon_partition is always exact."""
    import cepopt.executor.aseq as aseq
    from cepopt.executor.aseq_fast import Fallback, fast_partition

    workload = data.draw(count_workloads())
    events = data.draw(streams(max_events=14))
    plan = data.draw(plans(workload))
    expected = reference_results(workload, events)
    saved = aseq._INT64_SAFE
    aseq._INT64_SAFE = data.draw(st.sampled_from([2, 5, 20, 100]))
    try:
        try:
            fa, _ = fast_partition(workload.queries, plan, events)
            got = results_frame([r for a in fa.values() for r in a.rows()])
            assert compare_results(expected, got) == []
        except Fallback:
            pass
        got, _ = run(workload.queries, plan, events)
        assert compare_results(expected, got) == []
    finally:
        aseq._INT64_SAFE = saved


def test_fast_kernel_hands_over_past_int64():
    """SEQ of 12 A over 300 A events counts C(300, 12) > 2^63: the fast kernel refuses, the caller is exact."""
    import math

    from cepopt.executor.aseq_fast import Fallback, fast_partition

    ev = pd.DataFrame({"ts": range(302), "type": ["A"] * 300 + ["B"] * 2})
    a12 = tuple(Type("A") for _ in range(12))
    w = Workload((Query(Seq(a12), Window(1000, 1000), name="q1"),
                  Query(Seq(a12 + (Type("B"),)), Window(1000, 1000), name="q2")))
    plan = SharonPlan.of([(tuple("A" for _ in range(12)), {"q1", "q2"})])
    for p in (SharonPlan.empty(), plan):
        with pytest.raises(Fallback):
            fast_partition(w.queries, p, ev)
        got, _ = run(w.queries, p, ev)
        assert sorted(got["value"].tolist()) == [math.comb(300, 12), 2 * math.comb(300, 12)]


@pytest.mark.parametrize("slide", [50, 200])
def test_long_partition_many_chunks(slide):
    """A partition of a few thousand batches (many chunks, expiry, boundary maps across chunks):
    the fast kernel = the general kernel, results and operation counts, default and tiny chunk sizes."""
    import random

    rnd = random.Random(slide)
    n = 2500
    ev = pd.DataFrame({"ts": sorted(rnd.randrange(3000) for _ in range(n)),
                       "type": [rnd.choice(TYPES) for _ in range(n)], "v": [rnd.randrange(-4, 9) for _ in range(n)]})
    rows = [("A", "B", "C", "D"), ("A", "B", "C"), ("B", "C", "D"), ("A", "B", "D"), ("C", "A", "B"), ("D", "C")]
    window = Window(200, slide)
    w = Workload(tuple(Query(Seq(tuple(Type(t) for t in r)), window, name=f"q{i + 1}") for i, r in enumerate(rows)))
    for plan in (SharonPlan.empty(), SharonPlan.of([(("A", "B"), {"q1", "q2", "q4", "q5"})]),
                 SharonPlan.of([(("B", "C"), {"q1", "q2", "q3"})])):
        _fast_vs_oracle(w, plan, ev, brute=False)
        _fast_vs_oracle(w, plan, ev, min_events=7, max_batches=30, brute=False)
