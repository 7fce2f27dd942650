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


@settings(max_examples=50, deadline=None)
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


def test_prime_passes_are_exact():
    """With prime passes forced beside the int64 one, every kernel path (level updates, boundary maps,
    combinations, min/max, float sums) goes through the Chinese remainder theorem and still agrees with
    brute force."""
    import random

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
        for jit in (False, True):
            accs, _ = sharon_partition(w.queries, plan, ev, jit=jit, extra_primes=2)
            got = results_frame([r for a in accs.values() for r in a.rows()])
            assert compare_results(expected, got) == [], str(plan)


@st.composite
def count_workloads(draw):
    """COUNT(*)-only workloads (repeated types, filters, windows)."""
    w = draw(workloads())
    return Workload(tuple(Query(q.pattern, q.window, where=q.where, name=q.name) for q in w.queries))


def _compiled_vs_oracle(workload, plan, events, *, brute=True, extra_primes=0):
    """The compiled loops = the same loops run as Python = brute force, with the same operation counts."""
    fa, fops = sharon_partition(workload.queries, plan, events, jit=True, extra_primes=extra_primes)
    ga, gops = sharon_partition(workload.queries, plan, events, jit=False, extra_primes=extra_primes)
    got = results_frame([r for a in fa.values() for r in a.rows()])
    python = results_frame([r for a in ga.values() for r in a.rows()])
    assert compare_results(python, got) == [], str(plan)
    if brute:
        assert compare_results(reference_results(workload, events), got) == [], str(plan)
    assert fops == gops


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_compiled_kernel_equals_python_kernel_and_brute_force(data):
    """The numba-compiled loops = the plain Python ones = brute force, same operation counts, under
    random plans, every aggregate."""
    workload = data.draw(workloads() if data.draw(st.booleans()) else count_workloads())
    events = data.draw(streams(max_events=14))
    plan = data.draw(plans(workload))
    _compiled_vs_oracle(workload, plan, events)


def test_flush_does_not_reuse_reads_of_the_last_batch():
    """Regression: a kernel cached first-segment reads per batch; at the end of the partition a query
    whose whole pattern is the shared one reused a snapshot read taken before the last batch's updates."""
    w = Workload((Query(Seq((Type("C"), Type("D"))), Window(10, 10), name="q1"),
                  Query(Seq((Type("C"), Type("D"), Type("E"))), Window(10, 10), name="q2")))
    ev = pd.DataFrame({"ts": [1, 3, 3], "type": ["C", "D", "E"]})
    plan = SharonPlan.of([(("C", "D"), {"q1", "q2"})])
    for jit in (False, True):
        accs, _ = sharon_partition(w.queries, plan, ev, jit=jit)
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


@settings(max_examples=40, deadline=None)
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
    _compiled_vs_oracle(workload, SharonPlan.empty(), events)
    head = tuple(t.name for t in queries[0].pattern.items[:2])

    def once(q):
        names = [t.name for t in q.pattern.items]
        return sum(tuple(names[i:i + 2]) == head for i in range(len(names) - 1)) == 1

    same = [q for q in queries if q.window == queries[0].window and not q.where and once(q)
            and tuple(t.name for t in q.pattern.items[:2]) == head]
    if len(same) >= 2:
        _compiled_vs_oracle(workload, SharonPlan.of([(head, {q.name for q in same})]), events)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_forced_prime_passes(data):
    """With prime passes forced, the results joined by the Chinese remainder theorem stay exact."""
    workload = data.draw(workloads())
    events = data.draw(streams(max_events=14))
    plan = data.draw(plans(workload))
    _compiled_vs_oracle(workload, plan, events, extra_primes=data.draw(st.integers(1, 3)))


def test_counts_past_int64_take_prime_passes():
    """SEQ of 12 A over 300 A events counts C(300, 12) > 2^63: the bounds ask for prime passes and the
    counts are exact; a count past 2^200 too."""
    import math

    from cepopt.executor.sharon_kernel import compile_plan, run_partition

    ev = pd.DataFrame({"ts": range(302), "type": ["A"] * 300 + ["B"] * 2})
    a12 = tuple(Type("A") for _ in range(12))
    w = Workload((Query(Seq(a12), Window(1000, 1000), name="q1"),
                  Query(Seq(a12 + (Type("B"),)), Window(1000, 1000), name="q2")))
    plan = SharonPlan.of([(tuple("A" for _ in range(12)), {"q1", "q2"})])
    for p in (SharonPlan.empty(), plan):
        res = run_partition(compile_plan(w.queries, p), ev, jit=False)
        assert res.passes > 1
        got, _ = run(w.queries, p, ev)
        assert sorted(got["value"].tolist()) == [math.comb(300, 12), 2 * math.comb(300, 12)]
    ev = pd.DataFrame({"ts": range(400), "type": ["A"] * 400, "v": [3] * 400})
    from cepopt.model import Aggregate

    q = Query(Seq(tuple(Type("A") for _ in range(60))), Window(1000, 1000),
              (Aggregate("COUNT"), Aggregate("SUM", "A", "v")), name="q")
    for jit in (False, True):
        accs, _ = sharon_partition([q], None, ev, jit=jit)
        got = dict(zip(*[results_frame(accs["q"].rows())[c] for c in ("aggregate", "value")], strict=True))
        assert got["COUNT(*)"] == math.comb(400, 60) > 2 ** 200
        assert got["SUM(A.v)"] == 3 * 60 * math.comb(400, 60)


@pytest.mark.parametrize("slide", [50, 200])
def test_long_partition_ring_wraps(slide):
    """A partition of a few thousand batches (START records wrapping around their ring buffers, expiry,
    boundary maps across many windows): compiled = Python, results and operation counts."""
    import random

    rnd = random.Random(slide)
    n = 2500
    ev = pd.DataFrame({"ts": sorted(rnd.randrange(3000) for _ in range(n)),
                       "type": [rnd.choice(TYPES) for _ in range(n)], "v": [rnd.randrange(-4, 9) for _ in range(n)]})
    rows = [("A", "B", "C", "D"), ("A", "B", "C"), ("B", "C", "D"), ("A", "B", "D"), ("C", "A", "B"), ("D", "C")]
    window = Window(200, slide)
    w = Workload(tuple(Query(Seq(tuple(Type(t) for t in r)), window, aggregates(r), name=f"q{i + 1}")
                       for i, r in enumerate(rows)))
    for plan in (SharonPlan.empty(), SharonPlan.of([(("A", "B"), {"q1", "q2", "q4", "q5"})]),
                 SharonPlan.of([(("B", "C"), {"q1", "q2", "q3"})])):
        _compiled_vs_oracle(w, plan, ev, brute=False)
