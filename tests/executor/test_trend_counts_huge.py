"""Trend counts exact at any size (issue 30, item 1): COUNT(*), COUNT(E), SUM and AVG of Kleene
patterns far past 2^1000 (where the float shadow lane stops bounding the results) equal plain Python
big-integer arithmetic, under every plan of every trend family, on both engines.

The references here are closed forms (one A then k B events: 2^k - 1 trends) and
:func:`greta_ints`, GRETA's recurrence in Python ints (linear, so it runs at 20,000 events where
enumerating trends cannot), itself checked against the brute-force oracle on small streams.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepopt.gloria.plan as gplan
from cepopt.executor.reference import reference_results
from cepopt.executor.results import aggregate_label
from cepopt.executor.trend_exec import run_gloria, run_greta, run_hamlet
from cepopt.model import Aggregate, Kleene, Query, Seq, Type, Window, Workload
from tests.executor.test_trends_kernels import streams, workloads

#: one window over every stream here
WINDOW = Window(10 ** 7, 10 ** 7)
#: the largest k of the closed-form test (CEPOPT_HUGE_K sets another)
K_MAX = int(os.environ.get("CEPOPT_HUGE_K", "20000"))


def greta_ints(types: list[str], kleene: list[bool], events: pd.DataFrame, target: str | None = None,
               attr: str = "v") -> tuple[int, int, int]:
    """(COUNT(*), COUNT(target), SUM(target.attr)) of SEQ over distinct ``types`` (``kleene[i]``: the
    i-th is T+) in one window holding every event: per event, the sum over its predecessors (strictly
    earlier events of the previous position, or of its own when it is Kleene) plus 1 at the first
    position; a target event adds its count to COUNT(E) and value x count to SUM."""
    pos = {t: i for i, t in enumerate(types)}
    done = [[0, 0, 0] for _ in types]     # per position: sums over events of earlier time stamps
    now = [[0, 0, 0] for _ in types]      # ... of the current time stamp
    total = [0, 0, 0]
    last = None
    ordered = events.sort_values("ts", kind="stable")
    values = ordered[attr].tolist() if attr in ordered.columns else [0] * len(ordered)
    for ts, typ, v in zip(ordered["ts"].tolist(), ordered["type"].tolist(), values, strict=True):
        if ts != last:
            for i in range(len(types)):
                done[i] = [a + b for a, b in zip(done[i], now[i], strict=True)]
                now[i] = [0, 0, 0]
            last = ts
        i = pos.get(typ)
        if i is None:
            continue
        val = [0, 0, 0]
        for p in ([i - 1] if i else []) + ([i] if kleene[i] else []):
            val = [a + b for a, b in zip(val, done[p], strict=True)]
        if i == 0:
            val[0] += 1
        if typ == target:
            val[1] += val[0]
            val[2] += int(v) * val[0]
        now[i] = [a + b for a, b in zip(now[i], val, strict=True)]
        if i == len(types) - 1:
            total = [a + b for a, b in zip(total, val, strict=True)]
    return total[0], total[1], total[2]


def _values(frame: pd.DataFrame) -> dict:
    return {(q, a): v for q, a, v in zip(frame["query"], frame["aggregate"], frame["value"], strict=True)}


def _expected(wl: Workload, events: pd.DataFrame) -> dict:
    """The results of ``wl`` (queries SEQ over T / T+ items; aggregates of AGGS) by :func:`greta_ints`."""
    out = {}
    for q in wl:
        items = q.pattern.items
        types = [it.inner.name if isinstance(it, Kleene) else it.name for it in items]
        count, count_b, sum_b = greta_ints(types, [isinstance(it, Kleene) for it in items], events, "B")
        if not count:
            continue
        for agg in q.aggregates:
            label = aggregate_label(agg)
            out[(q.name, label)] = {"COUNT(*)": count, "COUNT(B)": count_b, "SUM(B.v)": sum_b,
                                    "AVG(B.v)": float(Fraction(sum_b, max(count_b, 1)))}[label]
    return out


#: two queries sharing B+ (Hamlet's bursts, Gloria's (B, B) transition); the first with every
#: aggregate (Gloria runs it with GRETA), the second COUNT(*) only (Gloria's own kernel)
KLEENE_QUERIES = ["q1: RETURN COUNT(*), COUNT(B), SUM(B.v), AVG(B.v) PATTERN SEQ(A, B+) WITHIN 10000000 SLIDE 10000000",
                  "q2: RETURN COUNT(*) PATTERN SEQ(C, B+) WITHIN 10000000 SLIDE 10000000",
                  "q3: RETURN COUNT(*) PATTERN SEQ(A, B+) WITHIN 10000000 SLIDE 10000000",
                  "q4: RETURN COUNT(*) PATTERN SEQ(A, B+, D) WITHIN 10000000 SLIDE 10000000"]


def _instance(problem: str, queries: list[str]):
    from cepopt.instance import from_json

    return from_json({"problem": problem, "name": "huge", "event_types": ["A", "B", "C", "D"], "queries": queries,
                      "statistics": {"rates": {"A": 1.0, "B": 50.0, "C": 1.0, "D": 1.0}}})


def _gloria_plans(queries: list[str]) -> dict:
    """Gloria's plans: unshared, and those of its optimizers (on the instance's rates)."""
    from cepopt.registry import solve

    inst = _instance("gloria", queries)
    from cepopt.hamlet.problem import compile_query

    blocks: dict = {}
    for q in inst.workload:
        for target, sources in compile_query(q).pt:
            for source in sources:
                blocks.setdefault((source, target), []).append(gplan.Block((q.name,)))
    # the B+ cycle shared by all its queries (Lemma 6.1: all or none), with a B snapshot
    blocks[("B", "B")] = [gplan.Block(tuple(b.queries[0] for b in blocks[("B", "B")]), "B")]
    shared = gplan.GloriaPlan.from_blocks(blocks)
    plans = {"unshared": None, "shared": shared}
    for method in ("gloria", "greedy", "cpsat"):
        plans[method] = solve(inst, method).plan
    return plans


def _every_plan(queries: list[str], events: pd.DataFrame) -> dict:
    """Results per (family, plan)."""
    wl = _instance("hamlet", queries).workload
    runs = {("greta", "-"): run_greta(wl, events)}
    for policy in ("nonshared", "static", "dynamic"):
        runs[("hamlet", policy)] = run_hamlet(wl, events, policy)
    for name, plan in _gloria_plans(queries).items():
        runs[("gloria", name)] = run_gloria(wl, plan, events)
    return runs


def _a_then_bs(k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    head = pd.DataFrame({"ts": [1, 1], "type": ["A", "C"], "v": [0, 0]})
    tail = pd.DataFrame({"ts": np.arange(2, k + 2), "type": "B", "v": rng.integers(-9, 10, k)})
    return pd.concat([head, tail], ignore_index=True)


@pytest.mark.parametrize("k", sorted({1100, 3001, K_MAX}))
def test_counts_2_to_the_k_minus_1_every_plan(k):
    """One A, one C, then k B events: COUNT(*) = 2^k - 1, COUNT(B) = k 2^(k-1), SUM(B.v) = 2^(k-1)
    times the sum of v, AVG their ratio; under GRETA, Hamlet's three plans and Gloria's plans."""
    queries, events = KLEENE_QUERIES[:3], _a_then_bs(k)
    wl = _instance("hamlet", queries).workload
    s = int(events["v"].sum())
    want = {("q1", "COUNT(*)"): 2 ** k - 1, ("q1", "COUNT(B)"): k * 2 ** (k - 1), ("q1", "SUM(B.v)"): s * 2 ** (k - 1),
            ("q1", "AVG(B.v)"): float(Fraction(s, k)), ("q2", "COUNT(*)"): 2 ** k - 1, ("q3", "COUNT(*)"): 2 ** k - 1}
    assert _expected(wl, events) == want
    runs = _every_plan(queries, events)
    for key, (got, _metrics) in runs.items():
        assert _values(got) == want, key
    assert runs[("hamlet", "static")][1]["shared_bursts"] == 1
    assert runs[("gloria", "shared")][1]["snapshots"] > 0


@pytest.mark.parametrize("seed,n", [(1, 5000), (2, 12000), (3, 20000)])
def test_random_kleene_streams_equal_big_int_greta(seed, n):
    """Random streams (B-heavy, time stamps with ties): every plan equals :func:`greta_ints`."""
    rng = np.random.default_rng(seed)
    events = pd.DataFrame({"ts": np.sort(rng.integers(0, n // 2, n)), "type": rng.choice(list("ABBBCD"), n),
                           "v": rng.integers(-5, 6, n)})
    want = _expected(_instance("hamlet", KLEENE_QUERIES).workload, events)
    assert max(abs(v) for v in want.values()).bit_length() > 1100  # past the float shadow's range
    for key, (got, _metrics) in _every_plan(KLEENE_QUERIES, events).items():
        assert _values(got) == want, key


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from("ABCD"), st.integers(-3, 3)), max_size=9),
       st.sampled_from([(["A", "B"], [False, True]), (["A", "B", "D"], [False, True, False]),
                        (["B", "C"], [True, True]), (["C"], [True])]))
def test_greta_ints_equals_brute_force(rows, pattern):
    """The big-int reference itself against the oracle's enumeration of every trend."""
    types, kleene = pattern
    events = pd.DataFrame(rows, columns=["ts", "type", "v"])
    items = tuple(Kleene(Type(t)) if k else Type(t) for t, k in zip(types, kleene, strict=True))
    aggs = (Aggregate("COUNT"), Aggregate("COUNT", "B"), Aggregate("SUM", "B", "v")) if "B" in types else \
        (Aggregate("COUNT"),)
    q = Query(Seq(items), WINDOW, aggs, name="q")
    oracle = _values(reference_results(Workload((q,)), events))
    count, count_b, sum_b = greta_ints(types, kleene, events, "B")
    want = {("q", "COUNT(*)"): count} if count else {}
    if count and "B" in types:
        want.update({("q", "COUNT(B)"): count_b, ("q", "SUM(B.v)"): sum_b})
    assert oracle == want


def _read_stream(path: Path, limit: int) -> pd.DataFrame:
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            ts, typ = line.split(",")[:2]
            rows.append((int(ts), f"T{int(typ)}"))
            if len(rows) >= limit:
                break
    return pd.DataFrame(rows, columns=["ts", "type"])


@pytest.mark.parametrize("n", [30000])
def test_hamlet_synthetic_stream_past_600_digits(shared_dir, n):
    """The Hamlet authors' synthetic stream and workload (anchors-data/hamlet, README) in one window:
    at 30,000 events the counts have over 610 digits (past 2^2024, where the old scaled shadow
    failed); GRETA, Hamlet's plans and Gloria equal big-int GRETA."""
    base = shared_dir / "anchors-data/hamlet/oldSubmission/Synthetic"
    events = _read_stream(base / "Streams/Stream_shared_5.txt", n)
    lines = (base / "Queries/HamletGretaQueries/Workload_size_10_len_3_pos_2.txt").read_text().split()
    queries, want = [], {}
    for i, line in enumerate(lines):
        toks = line.split(",")
        types = [f"T{int(t.rstrip('+'))}" for t in toks]
        kleene = [t.endswith("+") for t in toks]
        items = tuple(Kleene(Type(t)) if k else Type(t) for t, k in zip(types, kleene, strict=True))
        queries.append(Query(Seq(items), WINDOW, name=f"q{i + 1}"))
        count = greta_ints(types, kleene, events)[0]
        if count:
            want[(f"q{i + 1}", "COUNT(*)")] = count
    wl = Workload(tuple(queries))
    assert max(len(str(v)) for v in want.values()) > 610
    runs = {"greta": run_greta(wl, events), "gloria": run_gloria(wl, None, events)}
    runs.update({p: run_hamlet(wl, events, p) for p in ("static", "dynamic")})
    for key, (got, _metrics) in runs.items():
        assert _values(got) == want, key
    assert runs["dynamic"][1]["shared_bursts"] > 0


@pytest.mark.spark
def test_counts_past_4300_digits_on_spark(spark):
    """On Spark (partitions by window block, partials as text, merged on the executors), one A, one
    C, then 14,500 B events (counts of 4,366 digits: past 2^3000 and past Python's 4,300-digit limit
    of str(int)), as a Hamlet instance under its three plans and a Gloria instance under a plan that
    shares B+: every result equals the closed form."""
    from cepopt.hamlet.plan import HamletPlan
    from cepopt.pipeline import execute

    k = 14500
    queries, events = KLEENE_QUERIES[:3], _a_then_bs(k, seed=5)
    s = int(events["v"].sum())
    want = {("q1", "COUNT(*)"): 2 ** k - 1, ("q1", "COUNT(B)"): k * 2 ** (k - 1), ("q1", "SUM(B.v)"): s * 2 ** (k - 1),
            ("q1", "AVG(B.v)"): float(Fraction(s, k)), ("q2", "COUNT(*)"): 2 ** k - 1, ("q3", "COUNT(*)"): 2 ** k - 1}
    sdf = spark.createDataFrame(events).cache()
    runs = {("hamlet", p): (_instance("hamlet", queries), HamletPlan(p)) for p in ("nonshared", "static", "dynamic")}
    runs.update({("gloria", name): (_instance("gloria", queries), plan) for name, plan in _gloria_plans(queries).items()
                 if name == "shared"})
    for key, (inst, plan) in runs.items():
        res = execute(inst, plan, sdf, spark=spark)
        assert _values(res.to_pandas()) == want, key
        if key == ("gloria", "shared"):
            assert res.metrics["snapshots"] > 0


# ---------------------------------------------------------------------------------------------
# The log-space bound (executor/trend_bound.py): never below a result, and tight
# ---------------------------------------------------------------------------------------------


def _class_bounds(wl: Workload, events: pd.DataFrame) -> dict:
    """Per query name: the log2 bound of its class and the units (2^emin) of its SUM columns."""
    from cepopt.executor.trend_bound import results_log2_bound
    from cepopt.executor.trend_inputs import kernel_inputs
    from cepopt.hamlet.problem import compile_workload
    from cepopt.hamlet.scope import class_layout

    out = {}
    for cls in compile_workload(wl):
        inp = kernel_inputs(class_layout(cls, events))
        bound = results_log2_bound(inp)
        for cq in cls.queries:
            out[cq.name] = (bound, {attr: col.emin for attr, col in zip(inp.attrs, inp.cols, strict=True)})
    return out


@settings(max_examples=120, deadline=None)
@given(workloads(), streams(max_events=10), st.data())
def test_log_bound_is_never_below_a_result(wl, events, data):
    """Random workloads (filters, edge predicates, GROUP-BY, equivalences, sliding windows, ties)
    and streams with negative and fractional values: every COUNT(*), COUNT(E) and |SUM| (in its
    column's units) of the brute-force oracle is at most 2^bound."""
    if len(events):
        events["v"] = data.draw(st.lists(st.sampled_from([0, 1, -3, 4, 0.5, -2.25, 1e-300, 3e300]),
                                         min_size=len(events), max_size=len(events)))
    bounds = _class_bounds(wl, events) if len(events) else {}
    truth = reference_results(wl, events, conditions="adjacent")
    for q, agg, value in zip(truth["query"], truth["aggregate"], truth["value"], strict=True):
        if agg.startswith(("AVG", "MIN", "MAX")):
            continue
        bound, emin = bounds[q]
        units = Fraction(value) / Fraction(2) ** emin.get("v", 0) if agg.startswith("SUM") else Fraction(value)
        assert units == 0 or math.log2(abs(units.numerator)) - math.log2(units.denominator) <= bound, (q, agg, bound)


def test_log_bound_is_tight_on_big_counts():
    """On the streams above the bound is within a few bits of the largest result, so the lanes it
    asks for are those the results need (factor 1.00)."""
    from cepopt.executor.exact import needed_lanes

    cases = [(KLEENE_QUERIES[:3], _a_then_bs(3000)), (KLEENE_QUERIES[1:2], _a_then_bs(20000))]
    rng = np.random.default_rng(4)
    cases.append((KLEENE_QUERIES, pd.DataFrame({"ts": np.sort(rng.integers(0, 6000, 12000)),
                                                "type": rng.choice(list("ABBBCD"), 12000),
                                                "v": rng.integers(-5, 6, 12000)})))
    for queries, events in cases:
        wl = _instance("hamlet", queries).workload
        bits = max(abs(v).bit_length() for (_q, a), v in _expected(wl, events).items() if not a.startswith("AVG"))
        bound = max(b for b, _e in _class_bounds(wl, events).values())
        assert bits <= bound <= bits + 4
        assert needed_lanes(bound) == needed_lanes(bits)


# ---------------------------------------------------------------------------------------------
# Sharon / A-Seq (executor/aseq.py, sharon_kernel.py): prime passes from log2 bounds
# ---------------------------------------------------------------------------------------------


def _sharon_values(queries, events) -> dict:
    from cepopt.executor.results import results_frame
    from cepopt.executor.sharon_kernel import sharon_partition

    accs, _ops = sharon_partition(queries, None, events)
    return _values(results_frame([r for a in accs.values() for r in a.rows()]))


def test_sequence_counts_past_the_float_range():
    """SEQ(T0, ..., T399) over 6 events of each type in order: 6^400 matches (past 2^1024, where
    the kernel's float count bound overflows) and SUM(T0.v) over values near 2^62: exact."""
    from cepopt.model import Aggregate

    length, n = 400, 6
    types = [f"T{i}" for i in range(length)]
    q = Query(Seq(tuple(Type(t) for t in types)), WINDOW, (Aggregate("COUNT"), Aggregate("SUM", "T0", "v")), name="q")
    events = pd.DataFrame({"ts": np.arange(length * n), "type": np.repeat(types, n),
                           "v": [2 ** 62 - 1 - j % n for j in range(length * n)]})
    total = sum(2 ** 62 - 1 - j for j in range(n))
    want = {("q", "COUNT(*)"): n ** length, ("q", "SUM(T0.v)"): total * n ** (length - 1)}
    assert _sharon_values([q], events) == want


def test_sequence_sum_of_floats_spanning_the_exponent_range():
    """A float column with 1e300 and 1e-300: its exact integer scale is about 2^2000, past the float
    range of the old bound (an OverflowError); the sum is the correctly rounded float."""
    from cepopt.model import Aggregate

    q = Query(Seq((Type("A"), Type("B"))), WINDOW, (Aggregate("COUNT"), Aggregate("SUM", "A", "v")), name="q")
    events = pd.DataFrame({"ts": [1, 2, 3], "type": ["A", "A", "B"], "v": [1e300, 1e-300, 0.0]})
    want = {("q", "COUNT(*)"): 2, ("q", "SUM(A.v)"): float(Fraction(1e300) + Fraction(1e-300))}
    assert _sharon_values([q], events) == want


def test_cli_writes_and_prints_counts_of_6000_digits(tmp_path, capsys):
    """``cepopt execute`` on the local engine at k = 20,000: the output CSV holds 2^k - 1 exactly (6,021
    digits, past Python's 4,300-digit limit of str(int), which stays in place) and so does the preview."""
    import json
    from decimal import Decimal

    from cepopt.cli import main

    k = 20000
    inst, stream, out = tmp_path / "kleene.json", tmp_path / "s.csv", tmp_path / "r.csv"
    inst.write_text(json.dumps({"problem": "hamlet", "name": "kleene", "event_types": ["A", "B", "C", "D"],
                                "queries": KLEENE_QUERIES[:2]}))
    _a_then_bs(k).to_csv(stream, index=False)
    assert main(["execute", str(inst), "--plan", "dynamic", "--engine", "local", "--stream", str(stream),
                 "--output", str(out)]) in (0, None)
    rows = pd.read_csv(out, dtype=str)
    got = {(q, a): v for q, a, v in zip(rows["query"], rows["aggregate"], rows["value"], strict=True)}
    want = str(Decimal(2 ** k - 1))
    assert got[("q1", "COUNT(*)")] == got[("q2", "COUNT(*)")] == want
    assert Decimal(got[("q1", "COUNT(B)")]) == Decimal(k * 2 ** (k - 1))
    assert want in capsys.readouterr().out


def test_float_column_past_the_float_range():
    """SUM over a float column whose exact sum over 2^3000 trends is past the float range is the
    float it rounds to (inf, with its sign); AVG over it is refused with one clear error (the old
    code raised an OverflowError traceback for both)."""
    from cepopt.errors import CepoptError

    events = _a_then_bs(3000)
    events["v"] = events["v"] / 4.0
    q = "q1: RETURN COUNT(*), SUM(B.v) PATTERN SEQ(A, B+) WITHIN 10000000 SLIDE 10000000"
    got = _values(run_greta(_instance("hamlet", [q]).workload, events)[0])
    assert got == {("q1", "COUNT(*)"): 2 ** 3000 - 1, ("q1", "SUM(B.v)"): math.copysign(math.inf, events["v"].sum())}
    with pytest.raises(CepoptError, match=r"AVG\(B.v\): the sum of a float column .* past the float range"):
        run_greta(_instance("hamlet", [q.replace("SUM", "AVG")]).workload, events)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-(2 ** 6000), 2 ** 6000), min_size=1, max_size=6), st.integers(0, 3))
def test_crt_by_coefficients_past_garner_lanes(xs, extra):
    """Past GARNER_LANES lanes the CRT sums precomputed coefficients: every row comes back exactly."""
    from cepopt.executor.exact import GARNER_LANES, crt, moduli, needed_lanes

    lanes = max(needed_lanes(max(abs(x) for x in xs).bit_length()), GARNER_LANES + 1) + extra
    residues = np.array([[x % int(p) for p in moduli(lanes)[1:]] for x in xs], dtype=np.float64)
    assert crt(residues) == xs
