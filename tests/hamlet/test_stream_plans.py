"""Plans on an embedded stream: the optimizer prices the executor's bursts (edge predicates included,
hamlet.md §4.3 step 1, §8.14), the executor replays the ``optimal`` plan's decisions, and ``optimal``
honours its time limit."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.executor import trend_exec
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.hamlet.decide import run_policy
from cepopt.hamlet.plan import HamletPlan, plan_from_json, plan_policy, plan_to_json
from cepopt.instance import from_json, load
from cepopt.registry import build_problem, solve

POLICIES = ("dynamic", "static", "nonshared", "exhaustive", "random-3-75")
Q1 = "q1: RETURN COUNT(*) PATTERN SEQ(A, B+) WITHIN 100 SLIDE 100"
Q2 = "q2: RETURN COUNT(*) PATTERN SEQ(C, B+) WITHIN 100 SLIDE 100"


def _instance(queries, stream, params=None):
    return from_json({"problem": "hamlet", "name": "t", "queries": list(queries), "params": params or {},
                      "stream": stream})


def _run(inst, policy):
    """The executor's decisions, results and snapshots on the instance's stream."""
    decisions, trace = [], []
    got, _ = trend_exec.run_hamlet(inst.workload, pd.DataFrame(list(inst.stream)), policy, inst.params,
                                     decisions=decisions, trace=trace)
    return decisions, got, sum(1 for kind, *_ in trace if kind == "event")


# the first 13 events of the paper's example, B's v increasing; q2 has prev.v > next.v on B -> B:
# every B -> B edge is blocked for q2
EDGE_STREAM = ([{"ts": 1, "type": "A"}, {"ts": 2, "type": "A"}, {"ts": 3, "type": "C"}]
               + [{"ts": t, "type": "B", "v": t} for t in (4, 5, 6, 7)]
               + [{"ts": t, "type": "A" if t < 10 else "C"} for t in (8, 9, 10, 11, 12)]
               + [{"ts": 13, "type": "B", "v": 13}])
EDGE = {"edge_predicates": [{"query": "q2", "from": "B", "to": "B", "left": "v", "op": ">", "right": "v"}]}


def test_edge_predicates_are_priced_as_the_executor_prices_them():
    inst = _instance([Q1, Q2], EDGE_STREAM, EDGE)
    _, problem, _ = build_problem(inst)
    # b5, b6, b7 have a blocked in-burst predecessor for q2 only; b13's external edges from b4..b7 are
    # blocked for q2: one event-level snapshot each when shared
    assert [(b.b, b.n, b.snapshot_events(("q1", "q2"))) for b in problem.bursts] == [(4, 7, 3), (1, 13, 1)]
    # static: 4*7*4 + 4*2*4*2 = 176 and 13*2 + 2*2*1*2 = 34; not sharing: 2*4*7 + 2*1*13 = 82
    assert solve(inst, "static").objective == 176 + 34
    opt = solve(inst, "optimal")
    assert (opt.status, opt.objective) == ("optimal", 82)
    for method in ("dynamic", "static", "optimal"):
        sol = solve(inst, method)
        decisions, _, _ = _run(inst, plan_policy(problem, sol.plan))
        assert [d.cost for d in decisions] == [d.cost for d in sol.plan.decisions], method
        assert sum(d.cost for d in decisions) == sol.objective


def test_an_external_edge_blocked_for_every_sharing_query_needs_a_snapshot():
    """[DECISION] §3.7: b3's edges from a and c are blocked for both queries alike; the graphlet-level
    snapshot cannot give its value, so sharing it costs (and creates) an event-level snapshot."""
    inst = _instance(["q1: RETURN COUNT(*) PATTERN SEQ(A a, KL(B b)) WHERE a.v < b.v WITHIN 100 SLIDE 100",
                      "q2: RETURN COUNT(*) PATTERN SEQ(C c, KL(B b)) WHERE c.v < b.v WITHIN 100 SLIDE 100"],
                     [{"ts": 1, "type": "A", "v": 5}, {"ts": 2, "type": "C", "v": 5},
                      {"ts": 3, "type": "B", "v": 3}, {"ts": 4, "type": "B", "v": 7}])
    _, problem, _ = build_problem(inst)
    assert problem.bursts[0].snapshot_events(("q1", "q2")) == 1
    decisions, got, snapshots = _run(inst, "static")
    assert snapshots == 1 and decisions[0].cost == solve(inst, "static").objective
    assert compare_results(got, reference_results(inst.workload, pd.DataFrame(list(inst.stream)))) == []


@st.composite
def cases(draw):
    """Queries SEQ(X, B+[, D]) with B filters, X -> B conditions and B -> B edge predicates."""
    window = draw(st.sampled_from([(100, 100), (8, 4), (6, 3)]))
    queries, edges = [], []
    for i in range(draw(st.integers(2, 3))):
        name, x = f"q{i + 1}", draw(st.sampled_from("AC"))
        where = []
        if draw(st.booleans()):
            where.append(f"B.v < {draw(st.integers(1, 4))}")
        if draw(st.booleans()):
            where.append(f"{x.lower()}.v {draw(st.sampled_from(['<', '<=']))} b.v")
        if draw(st.booleans()):
            edges.append({"query": name, "from": "B", "to": "B", "left": "v",
                          "op": draw(st.sampled_from(["<", "<=", ">="])), "right": "v"})
        end = ", D d" if draw(st.booleans()) else ""
        queries.append(f"{name}: RETURN COUNT(*), SUM(B.v) PATTERN SEQ({x} {x.lower()}, KL(B b){end})"
                       + (f" WHERE {' AND '.join(where)}" if where else "") + " WITHIN {} SLIDE {}".format(*window))
    ts, stream = 0, []
    for _ in range(draw(st.integers(4, 12))):
        ts += draw(st.sampled_from([0, 1, 1, 2]))
        stream.append({"ts": ts, "type": draw(st.sampled_from("AABBBBBCD")), "v": draw(st.integers(0, 5))})
    return _instance(queries, stream, {"edge_predicates": edges} if edges else {})


@settings(max_examples=60)
@given(cases())
def test_optimizer_prices_every_policy_as_the_executor_runs_it(inst):
    """The same bursts: every policy decides alike at plan and run time, at the same Eq. 7 cost, and
    the executor creates exactly the event-level snapshots the decisions priced."""
    _, problem, _ = build_problem(inst)
    for policy in POLICIES:
        planned, total = run_policy(problem.bursts, policy, problem.t_of)
        decisions, _, snapshots = _run(inst, policy)
        assert decisions == planned, policy
        assert sum(d.cost for d in decisions) == pytest.approx(total)
        assert snapshots == sum(b.snapshot_events(d.queries) for b, d in zip(problem.bursts, planned, strict=True)
                                if d.queries)
    opt = solve(inst, "optimal")
    decisions, got, _ = _run(inst, plan_policy(problem, opt.plan))
    assert sum(d.cost for d in decisions) == pytest.approx(opt.objective)
    assert compare_results(got, _run(inst, "nonshared")[1]) == []


# ---------------------------------------------------------------------------------------------
# The optimal plan is replayed (on its own stream only)
# ---------------------------------------------------------------------------------------------


# SEQ(A, B+) and SEQ(C, B+) in windows of 8 sliding by 4: bursts b2 b3 | b4..b7 (pane 4) | b4..b7 again
# in window 1. Sharing the first and extending into the second (80) beats every per-burst policy (96).
OPT_STREAM = [{"ts": 0, "type": "A"}, {"ts": 1, "type": "C"}] + [{"ts": t, "type": "B"} for t in range(2, 8)]
OPT_QUERIES = [q.replace("WITHIN 100 SLIDE 100", "WITHIN 8 SLIDE 4") for q in (Q1, Q2)]


def test_optimal_plan_is_replayed_by_the_executor():
    inst = _instance(OPT_QUERIES, OPT_STREAM)
    _, problem, _ = build_problem(inst)
    opt = solve(inst, "optimal")
    assert (opt.status, opt.objective, opt.plan.policy) == ("optimal", 80, "replay")
    assert solve(inst, "exhaustive").objective == 96
    assert plan_from_json(problem, plan_to_json(opt.plan)) == opt.plan
    decisions, got, _ = _run(inst, plan_policy(problem, opt.plan))
    assert [(d.action, d.queries) for d in decisions] == [("share", ("q1", "q2")), ("extend", ("q1", "q2")),
                                                          ("none", ())]
    assert sum(d.cost for d in decisions) == 80
    assert compare_results(got, _run(inst, "nonshared")[1]) == []


@pytest.mark.parametrize("stream, message", [
    (OPT_STREAM[:-1], "burst 2 of B .* is not a burst the plan decided"),   # another second burst
    (OPT_STREAM[:4], "the plan decides 3 bursts, the stream has 1"),        # only the first burst
])
def test_a_replayed_plan_refuses_another_stream(stream, message):
    _, problem, _ = build_problem(_instance(OPT_QUERIES, OPT_STREAM))
    plan = solve(_instance(OPT_QUERIES, OPT_STREAM), "optimal").plan
    with pytest.raises(CepoptError, match=message):
        _run(_instance(OPT_QUERIES, stream), plan_policy(problem, plan))


def test_plans_of_policies_and_of_burst_statistics_run_their_policy():
    """A policy adapts to any stream; burst statistics (params.bursts) are no stream to replay on."""
    inst = load("hamlet-example")
    _, problem, _ = build_problem(inst)
    assert solve(inst, "optimal").plan.policy == "exhaustive"
    assert plan_policy(problem, solve(inst, "dynamic").plan).name == "dynamic"
    assert plan_policy(problem, "static").name == "static"
    with pytest.raises(CepoptError, match="0 decisions for 3 bursts"):
        plan_policy(problem, HamletPlan("replay"))


# ---------------------------------------------------------------------------------------------
# Time limit
# ---------------------------------------------------------------------------------------------


def _bursts(scope: str, count: int = 17) -> list[dict]:
    return [{"type": "B", "queries": ["q1", "q2"], "b": 4, "n": 7 + 4 * i, "continues": i > 0, "scope": scope,
             **({"classes": [[0, 0], [0, 1], [0, 0], [0, 0]]} if i % 3 == 1 else {})} for i in range(count)]


def test_optimal_honours_its_time_limit():
    """2^17 sequences per scope take seconds: out of time, the first scope keeps the better of the
    dynamic sequence and the sequences tried, the second the dynamic one; status feasible."""
    inst = from_json({"problem": "hamlet", "name": "tl", "queries": [Q1, Q2],
                      "params": {"bursts": _bursts("s1") + _bursts("s2")}})
    sol = solve(inst, "optimal", time_limit=0.05)
    assert sol.status == "feasible" and sol.stats["timed_out"]  # no wall-clock assertion: load varies
    dynamic = solve(inst, "dynamic")
    assert sol.objective <= dynamic.objective
    assert sol.plan.decisions[17:] == dynamic.plan.decisions[17:]
    small = from_json({"problem": "hamlet", "name": "tl", "queries": [Q1, Q2], "params": {"bursts": _bursts("s", 6)}})
    assert solve(small, "optimal", time_limit=60).status == "optimal"
