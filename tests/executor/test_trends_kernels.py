"""GRETA and Hamlet kernels (every policy) against brute-force trend enumeration (hamlet.md §7 T10)."""

from __future__ import annotations

import itertools
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.executor import trend_exec
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.model import Aggregate, AttrRef, Condition, Equivalence, Filter, Kleene, Query, Seq, Type, Window, Workload
from cepopt.predicates import compare

TYPES = "ABCD"
POLICIES = ("dynamic", "static", "nonshared", "exhaustive", "random-3-75")


@st.composite
def streams(draw, max_events=11):
    n = draw(st.integers(0, max_events))
    ts = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    rows = []
    for t in ts:
        rows.append({"ts": t, "type": draw(st.sampled_from(TYPES)), "v": draw(st.integers(0, 4)),
                     "g": draw(st.sampled_from([0, 0, 1])), "e": draw(st.sampled_from(["x", "x", "y"]))})
    return pd.DataFrame(rows, columns=["ts", "type", "v", "g", "e"]).astype({"ts": "int64"})


@st.composite
def workloads(draw, conditions=True):
    window = draw(st.sampled_from([Window(20, 20), Window(6, 3), Window(8, 4)]))
    group = draw(st.sampled_from([(), (AttrRef("g"),)]))
    k = draw(st.integers(2, 4))
    kleene = draw(st.sampled_from("AB"))
    queries = []
    for _ in range(k):
        others = [t for t in TYPES if t != kleene]
        x = draw(st.sampled_from(others))
        y = draw(st.sampled_from([None] + [t for t in others if t != x]))
        items = [Type(x), Kleene(Type(kleene))] + ([Type(y)] if y else [])
        if draw(st.booleans()):
            items = items[1:] if draw(st.booleans()) else items
        where = []
        if draw(st.integers(0, 3)) == 0:
            where.append(Filter(kleene, "v", draw(st.sampled_from(["<", ">="])), draw(st.integers(1, 3))))
        if draw(st.integers(0, 4)) == 0:
            where.append(Filter(x, "v", "!=", draw(st.integers(0, 4))))
        if draw(st.integers(0, 4)) == 0:
            where.append(Equivalence("e"))  # a second partitioning key: the query leaves the class
        if conditions and items[0] == Type(x) and draw(st.integers(0, 4)) == 0:
            where.append(Condition(AttrRef("v", x), draw(st.sampled_from(["<=", ">"])), AttrRef("v", kleene)))
        aggs = [Aggregate("COUNT")]
        if draw(st.booleans()):
            aggs.append(draw(st.sampled_from([Aggregate("COUNT", kleene), Aggregate("SUM", kleene, "v"),
                                              Aggregate("AVG", kleene, "v"), Aggregate("SUM", x, "v")])))
        if draw(st.integers(0, 5)) == 0:
            aggs.append(draw(st.sampled_from([Aggregate("MIN", kleene, "v"), Aggregate("MAX", kleene, "v")])))
        if x not in [it.name for it in items if isinstance(it, Type)]:
            aggs = [a for a in aggs if a.ref != x]
            where = [w for w in where if not (isinstance(w, Filter) and w.ref == x)
                     and not isinstance(w, Condition)]
        queries.append(Query(Seq(tuple(items)), window, tuple(aggs), tuple(where), group))
    return Workload(tuple(queries))


def _check(wl, events, params=None, truth=None):
    truth = reference_results(wl, events, conditions="adjacent") if truth is None else truth
    got, _ = trend_exec.run_greta(wl, events, params)
    assert compare_results(got, truth) == []
    for pol in POLICIES:
        got, _ = trend_exec.run_hamlet(wl, events, pol, params)
        assert compare_results(got, truth) == [], pol


@settings(max_examples=120)
@given(workloads(), streams())
def test_kernels_equal_brute_force(wl, events):
    _check(wl, events)


def _graph_edges(q: Query, events: pd.DataFrame) -> int:
    """Brute force of hamlet.md §2.3: the edges (e', e) of q's GRETA graph summed over its partitions
    and windows -- e' and e matched by q, same GROUP-BY / equivalence key, both in window k,
    e'.ts < e.ts, e'.type in pt(e.type, q) and every condition on (e', e) holds (adjacent events)."""
    items = q.pattern.items
    names = [it.inner.name if isinstance(it, Kleene) else it.name for it in items]
    pt = {n: ({names[j - 1]} if j else set()) | ({n} if isinstance(items[j], Kleene) else set())
          for j, n in enumerate(names)}
    keys = [a.attr for a in q.group_by] + [w.attr for w in q.where if isinstance(w, Equivalence)]
    recs = [r for r in events.to_dict("records") if r["type"] in names
            and all(compare(f.op, r[f.attr], f.value) for f in q.where if isinstance(f, Filter) and f.ref == r["type"])]

    def edge_ok(a, b) -> bool:
        return all(compare(c.op, a[c.left.attr], b[c.right.attr]) for c in q.where if isinstance(c, Condition)
                   and (c.left.ref, c.right.ref) == (a["type"], b["type"]))

    w, s = q.window.length, q.window.slide
    total = 0
    for b in recs:
        for k in range(max(0, (b["ts"] - w) // s + 1), b["ts"] // s + 1):
            total += sum(1 for a in recs if a["ts"] < b["ts"] and a["ts"] >= k * s and a["type"] in pt[b["type"]]
                         and all(a[x] == b[x] for x in keys) and edge_ok(a, b))
    return total


@settings(max_examples=80)
@given(workloads(), streams())
def test_nonshared_operations_are_graph_edges(wl, events):
    """Non-shared operations = sum over queries of the predecessor edges of the brute-force graph
    (Eq. 4 units), for GRETA and for Hamlet's nonshared policy alike."""
    expected = sum(_graph_edges(q, events) for q in wl)
    assert trend_exec.run_greta(wl, events)[1]["operations"] == expected
    _, m = trend_exec.run_hamlet(wl, events, "nonshared")
    assert m["operations"] == m["pred_edges"] == expected


def _brute(wl, events, edges):
    """Tiny brute force with extra B->B edge predicates (params.edge_predicates), COUNT(*) only."""
    rows = []
    recs = events.to_dict("records")
    for q in wl:
        types = [it.inner.name + "+" if isinstance(it, Kleene) else it.name for it in q.pattern.items]
        rx = re.compile("".join(f"(?:{t[0]})+" if t.endswith("+") else t for t in types))
        w, s = q.window.length, q.window.slide
        counts = {}
        idx = range(len(recs))
        for size in range(1, len(recs) + 1):
            for comb in itertools.combinations(idx, size):
                evs = [recs[i] for i in comb]
                if any(not a["ts"] < b["ts"] for a, b in itertools.pairwise(evs)):
                    continue
                if not rx.fullmatch("".join(e["type"] for e in evs)):
                    continue
                if not all(f(a, b) for a, b in itertools.pairwise(evs) for f in edges.get(q.name, ())
                           if a["type"] == b["type"]):
                    continue
                t0, t1 = evs[0]["ts"], evs[-1]["ts"]
                for k in range(max(0, (t1 - w) // s + 1), t0 // s + 1):
                    counts[k] = counts.get(k, 0) + 1
        rows += [(q.name, "", k, "COUNT(*)", c) for k, c in counts.items()]
    from cepopt.executor.results import results_frame

    return results_frame(rows)


@settings(max_examples=60)
@given(streams(max_events=9), st.sampled_from(["<=", ">", "!="]), st.integers(0, 2))
def test_kleene_edge_predicates(events, op, which):
    w = Window(20, 20)
    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), w), Query(Seq((Type("C"), Kleene(Type("B")))), w),
                   Query(Seq((Type("D"), Kleene(Type("B")))), w)))
    name = f"q{which + 1}"
    params = {"edge_predicates": [{"query": name, "from": "B", "to": "B", "left": "v", "op": op, "right": "v"}]}
    from cepopt.hamlet.problem import EdgePredicate

    pred = EdgePredicate("B", "B", "v", op, "v")
    events = events.drop(columns=["g", "e"])
    truth = _brute(wl, events, {name: [pred.holds]})
    _check(wl, events, params, truth)


def test_big_integers_t11():
    """T11: a burst of 200 B events after one A: the last b counts 2^199; the total 2^200 - 1."""
    w = Window(1000, 1000)
    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), w), Query(Seq((Type("A"), Kleene(Type("B")))), w)))
    events = pd.DataFrame([{"ts": 0, "type": "A"}] + [{"ts": i + 1, "type": "B"} for i in range(200)])
    for run in (trend_exec.run_greta(wl, events)[0], trend_exec.run_hamlet(wl, events, "static")[0]):
        assert set(run["value"]) == {2 ** 200 - 1}


def test_other_aggregates_t9():
    """T9: SEQ(A,B+,C) with B values 3, 1, 2: COUNT(*) 10, COUNT(B) 16, SUM 32, AVG 2, MIN 1, MAX 3."""
    q = Query(Seq((Type("A"), Kleene(Type("B")), Type("C"))), Window(10, 10),
              (Aggregate("COUNT"), Aggregate("COUNT", "B"), Aggregate("SUM", "B", "v"), Aggregate("AVG", "B", "v"),
               Aggregate("MIN", "B", "v"), Aggregate("MAX", "B", "v")))
    events = pd.DataFrame([{"ts": 1, "type": "A"}, {"ts": 2, "type": "B", "v": 3}, {"ts": 3, "type": "B", "v": 1},
                           {"ts": 4, "type": "C"}, {"ts": 5, "type": "B", "v": 2}, {"ts": 6, "type": "C"}])
    got, _ = trend_exec.run_greta(Workload((q,)), events)
    values = dict(zip(got["aggregate"], got["value"], strict=True))
    assert values == {"COUNT(*)": 10, "COUNT(B)": 16, "SUM(B.v)": 32, "AVG(B.v)": 2, "MIN(B.v)": 1, "MAX(B.v)": 3}


def test_shared_sum_matches_greta():
    """§3.10: SUM/COUNT(E)/AVG shared through coefficient maps give GRETA's values."""
    w = Window(50, 50)
    aggs = (Aggregate("COUNT"), Aggregate("SUM", "B", "v"), Aggregate("AVG", "B", "v"), Aggregate("COUNT", "B"))
    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), w, aggs),
                   Query(Seq((Type("C"), Kleene(Type("B")))), w, aggs)))
    kinds = "A A C B B B B A A C C C B B".split()
    events = pd.DataFrame([{"ts": i + 1, "type": t, "v": (i * 7) % 5 + 0.5} for i, t in enumerate(kinds)])
    truth, _ = trend_exec.run_greta(wl, events)
    for pol in POLICIES:
        got, metrics = trend_exec.run_hamlet(wl, events, pol)
        assert compare_results(got, truth) == []
    assert metrics["shared_bursts"] == 2


@pytest.mark.parametrize("policy", POLICIES)
def test_policies_change_cost_not_results(policy):
    """T10: results do not depend on the decisions; only the measured operations do."""
    w = Window(100, 25)
    wl = Workload(tuple(Query(Seq((Type(x), Kleene(Type("B")))), w, where=(Filter("B", "v", "<", lim),))
                        for x, lim in (("A", 9), ("C", 9), ("A", 3))))
    rows = []
    for i in range(120):
        kind = "B" if (i // 6) % 3 else "AC"[i % 2]
        rows.append({"ts": i, "type": kind, "v": i % 10})
    events = pd.DataFrame(rows)
    truth, base = trend_exec.run_greta(wl, events)
    got, metrics = trend_exec.run_hamlet(wl, events, policy)
    assert compare_results(got, truth) == []
    if policy == "nonshared":
        assert metrics["operations"] == base["operations"]


# ---------------------------------------------------------------------------------------------
# Missing attribute values (None from JSON / Spark nulls, NaN from pandas CSV cells): a predicate
# with a missing value on either side is not true (cepopt.predicates), in the oracle and every kernel
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
@pytest.mark.parametrize("missing", [None, float("nan")], ids=["None", "nan"])
def test_an_edge_predicate_with_a_missing_value_never_holds(op, missing):
    from cepopt.hamlet.problem import EdgePredicate

    pred = EdgePredicate("B", "B", "v", op, "v")
    assert not pred.holds({"v": missing}, {"v": 1})
    assert not pred.holds({"v": 1}, {"v": missing})
    assert not pred.holds({"v": missing}, {"v": missing})
    assert not pred.holds({}, {"v": 1})


@st.composite
def streams_with_missing(draw, max_events=10):
    """``streams`` whose ``v`` has missing cells: NaN in a float column (pandas CSV), or None in an
    object column (JSON records)."""
    events = draw(streams(max_events))
    gaps = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    if draw(st.booleans()):
        events["v"] = [float("nan") if gap else float(v) for v, gap in zip(events["v"], gaps, strict=True)]
    else:
        events["v"] = pd.Series([None if gap else int(v) for v, gap in zip(events["v"], gaps, strict=True)],
                                dtype=object)
    return events


@settings(max_examples=80)
@given(workloads(), streams_with_missing())
def test_kernels_equal_brute_force_with_missing_values(wl, events):
    _check(wl, events)


@settings(max_examples=40)
@given(streams_with_missing(max_events=8), st.sampled_from(["=", "!=", "<", ">="]), st.integers(0, 2))
def test_kleene_edge_predicates_with_missing_values(events, op, which):
    """Edge predicates B -> B (params.edge_predicates) on missing values, against the tiny brute force."""
    w = Window(20, 20)
    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), w), Query(Seq((Type("C"), Kleene(Type("B")))), w)))
    name = f"q{which % 2 + 1}"
    params = {"edge_predicates": [{"query": name, "from": "B", "to": "B", "left": "v", "op": op, "right": "v"}]}
    def holds(a, b) -> bool:
        return compare(op, a["v"], b["v"])

    events = events.drop(columns=["g", "e"])
    truth = _brute(wl, events, {name: [holds]})
    _check(wl, events, params, truth)


def test_missing_filter_and_condition_values_by_hand():
    """SEQ(A, B+) with B.v != 2 and A.v < B.v: a B with a missing v is no match (neither != nor <
    holds), whatever the missing value looks like, in the oracle and the kernels."""
    w = Window(10, 10)
    q = Query(Seq((Type("A"), Kleene(Type("B")))), w, (Aggregate("COUNT"),),
              (Filter("B", "v", "!=", 2), Condition(AttrRef("v", "A"), "<", AttrRef("v", "B"))))
    for missing in (None, float("nan")):
        events = pd.DataFrame({"ts": [0, 1, 2, 3], "type": ["A", "B", "B", "B"],
                               "v": pd.Series([0, 5, missing, 7], dtype=object)})
        truth = reference_results(Workload((q,)), events, conditions="adjacent")
        assert truth["value"].tolist() == [3]  # {b1}, {b3}, {b1, b3}
        _check(Workload((q,)), events, truth=truth)


class _CountingPolicy:
    """A policy's decisions, counted; named ``name`` (a pure policy's name is memoized by the kernel)."""

    def __init__(self, inner: str, name: str):
        from cepopt.hamlet.policy import get_policy

        self.inner, self.name, self.calls = get_policy(inner), name, 0

    def decide(self, burst, state, t):
        self.calls += 1
        return self.inner.decide(burst, state, t)

    def finished(self, bursts):
        self.inner.finished(bursts)


@pytest.mark.parametrize("policy", ["dynamic", "static", "exhaustive"])
def test_memoized_decisions_equal_the_policy_asked_every_time(policy):
    """A pure policy is asked once per (burst, state) the kernel has not seen (executor/hamlet_kernel.py
    _decide): the decisions, the results and every counter equal those of the same policy asked about
    every burst, on a stream whose windows repeat (so the memo answers most bursts)."""
    w = Window(40, 10)
    wl = Workload(tuple(Query(Seq((Type(x), Kleene(Type("B")), Type("D"))), w,
                              where=(Filter("B", "v", "<", lim),))
                        for x, lim in (("A", 9), ("C", 9), ("A", 3))))
    pattern = ["A", "C", "B", "B", "B", "D", "B", "B", "A", "B", "B", "D", "C", "B", "B", "B", "B", "D", "A", "B"]
    events = pd.DataFrame([{"ts": i, "type": pattern[i % len(pattern)], "v": (i * 3) % 11} for i in range(400)])
    memo, every = _CountingPolicy(policy, policy), _CountingPolicy(policy, f"{policy}-every-time")
    made_memo, made_every = [], []
    got, metrics = trend_exec.run_hamlet(wl, events, memo, decisions=made_memo)
    want, base = trend_exec.run_hamlet(wl, events, every, decisions=made_every)
    assert made_memo == made_every and len(made_every) == every.calls
    assert memo.calls < every.calls / 2
    assert compare_results(got, want) == []
    counters = {k for k in base if k != "policy" and not k.endswith("_s")}
    assert {k: metrics[k] for k in counters} == {k: base[k] for k in counters}
    assert metrics["shared_bursts"] > 0
