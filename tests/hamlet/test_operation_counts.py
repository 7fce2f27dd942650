"""The Hamlet kernel's operation counts in the cost model's unit (Eq. 7), checked by hand.

Unit (executor/hamlet_kernel.py docstring): one operation per predecessor edge read, times the
width of what is read. Non-shared: |pe(e, q)| per event and query. Shared: |pe(e)| (the union over
the sharing queries that match e) times the number of snapshots of the graphlet so far, once for
all queries; graphlet-level snapshot x per query: 1 read of q's previous x (if any) + q's matched
predecessor-type events since it; event-level snapshot z per matching query: 1 read of x (or, with
an edge predicate into B, the external predecessor edges) + the in-graphlet predecessors; and per
graphlet close, per sharing query, one evaluation per snapshot of the graphlet.
"""

from __future__ import annotations

import pandas as pd
import pytest

from cepopt.executor import trend_exec
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.hamlet.decide import run_policy
from cepopt.hamlet.graphlets import Burst
from cepopt.hamlet.plan import HamletPlan
from cepopt.hamlet.policy import GroupState, RandomPolicy, get_policy, option_cost
from cepopt.model import Filter, Kleene, Query, Seq, Type, Window, Workload

# q1 = SEQ(A, B+); q2 = SEQ(C, B+) WHERE B.v < 5. b5 (v = 7) is matched by q1 only, so static sharing
# gives it an event-level snapshot; c7 ends the first B graphlet (C is a type of q2, which has B).
EVENTS = [(1, "A", 0), (2, "C", 0), (3, "A", 0), (4, "B", 1), (5, "B", 7), (6, "B", 2), (7, "C", 0),
          (8, "B", 3), (9, "B", 4)]
START = {"q1": "A", "q2": "C"}


def _workload() -> Workload:
    w = Window(100, 100)
    return Workload((Query(Seq((Type("A"), Kleene(Type("B")))), w, name="q1"),
                     Query(Seq((Type("C"), Kleene(Type("B")))), w, where=(Filter("B", "v", "<", 5),), name="q2")))


def _frame() -> pd.DataFrame:
    return pd.DataFrame(EVENTS, columns=["ts", "type", "v"])


def _matched(ev, q) -> bool:
    _ts, t, v = ev
    return t == START[q] or (t == "B" and (q == "q1" or v < 5))


def _pe(ev, q) -> set:
    """pe(e, q) straight from hamlet.md §2.3: earlier events matched by q of a type in pt(B, q)."""
    if ev[1] != "B" or not _matched(ev, q):
        return set()
    return {o for o in EVENTS if o[0] < ev[0] and _matched(o, q) and o[1] in (START[q], "B")}


def _expected_nonshared() -> int:
    return sum(len(_pe(ev, q)) for ev in EVENTS for q in START)


def _expected_static() -> dict:
    """Static sharing by {q1, q2}: the B runs (bursts) between other events are the graphlets."""
    graphlets, run = [], []
    for ev in EVENTS:
        if ev[1] == "B":
            run.append(ev)
        elif run:
            graphlets.append(run)
            run = []
    graphlets.append(run)
    shared = snap = evals = 0
    last_x: dict = {}
    for g in graphlets:
        first = g[0]
        for q in START:  # graphlet-level snapshot x
            since = [o for o in EVENTS if o[0] < first[0] and _matched(o, q) and o[1] in (START[q], "B")
                     and (q not in last_x or o[0] >= last_x[q])]
            snap += len(since) + (q in last_x)
            last_x[q] = first[0]
        width = 1
        for ev in g:
            matching = [q for q in START if _matched(ev, q)]
            if len(matching) < len(START):  # not matched by every sharing query: z
                width += 1
                snap += sum(1 + len(_pe(ev, q) & set(g)) for q in matching)
            shared += len(set().union(*(_pe(ev, q) for q in matching))) * width
        evals += len(START) * width
    return {"shared_edges": shared, "snapshot_edges": snap, "evaluations": evals, "pred_edges": 0,
            "operations": shared + snap + evals}


def test_hand_counts_nonshared():
    # q1: b4 2 + b5 3 + b6 4 + b8 5 + b9 6 = 20; q2: b4 1 + b6 2 + b8 4 + b9 5 = 12
    assert _expected_nonshared() == 32
    _, m = trend_exec.run_hamlet(_workload(), _frame(), "nonshared")
    assert (m["operations"], m["pred_edges"], m["snapshot_edges"], m["shared_edges"]) == (32, 32, 0, 0)
    assert trend_exec.run_greta(_workload(), _frame())[1]["operations"] == 32


def test_hand_counts_static():
    # graphlet 1: x 2 + 1; b4 3*1; b5 (z, q1 only) 3*2 and z = x + b4 = 2; b6 5*2; close 2 queries * 2 snapshots
    # graphlet 2: x (1 + 3) + (1 + 3); b8 7*1; b9 8*1; close 2 * 1
    exp = _expected_static()
    assert exp == {"shared_edges": 3 + 6 + 10 + 7 + 8, "snapshot_edges": 3 + 2 + 8, "evaluations": 4 + 2,
                   "pred_edges": 0, "operations": 53}
    got, m = trend_exec.run_hamlet(_workload(), _frame(), "static")
    assert {k: m[k] for k in exp} == exp
    assert m["snapshots"] == 3 and m["shared_bursts"] == 2
    assert compare_results(got, reference_results(_workload(), _frame())) == []
    # the running-sum count is kept: one x term per event + in-graphlet terms, x and z reads, evaluations
    assert m["fastpath_operations"] == m["propagations"] + m["snapshot_reads"] + m["evaluations"]


def test_example_counts_in_eq7_units():
    """The paper's example (Tables 3-4): the per-query edges are those of its GRETA graphs."""
    from cepopt.instance import load

    inst = load("hamlet-example")
    events = pd.DataFrame(list(inst.stream))
    _, m = trend_exec.run_hamlet(inst.workload, events, "nonshared")
    # q1: 2+3+4+5 over b3..b6, 8+9 over the last two B; q2: 1+2+3+4, 8+9
    assert m["operations"] == 31 + 27


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_policy_is_valid_and_deterministic(seed):
    pol = get_policy(f"random-{seed}-60")
    assert isinstance(pol, RandomPolicy) and pol.name == f"random-{seed}-60"
    bursts = [Burst("B", ("q1", "q2", "q3"), b, 10 * (i + 1)) for i, b in enumerate((2, 3, 1, 4, 2, 5))]
    d1, cost1 = run_policy(bursts, pol)
    d2, cost2 = run_policy(bursts, get_policy(f"random-{seed}-60"))
    assert d1 == d2 and cost1 == cost2
    assert all(len(d.queries) in (0, 2, 3) for d in d1)
    # priced by the same Eq. 7 code path as every policy
    replay, total = run_policy(bursts, "nonshared", decisions=d1)
    assert total == cost1 and [d.cost for d in replay] == [d.cost for d in d1]
    assert d1[0].cost == option_cost(bursts[0], GroupState(), d1[0].queries, lambda _q: 2)
    assert HamletPlan(pol.name).policy == pol.name


def test_random_policy_results_equal_brute_force():
    got, m = trend_exec.run_hamlet(_workload(), _frame(), "random-5-80")
    assert compare_results(got, reference_results(_workload(), _frame())) == []


def test_example_edge_predicate_counts_by_hand():
    """Table 5 (the first 13 events, q2's edge B -> B only if v <= v'): the scan path's counts.
    Events a1 a2 c3 b4(1) b5(5) b6(2) b7(6) a8 a9 c10 c11 c12 b13(10)."""
    from cepopt.instance import load

    inst = load("hamlet-example")
    spec = inst.expected["with_predicates"]
    events = pd.DataFrame(list(inst.stream)).iloc[:spec["events"]]
    params = {"edge_predicates": spec["edge_predicates"]}
    _, m = trend_exec.run_hamlet(inst.workload, events, "nonshared", params)
    # q1: b4 2, b5 3, b6 4, b7 5, b13 8; q2 (b5 -> b6 blocked): b4 1, b5 2, b6 2, b7 4, b13 8
    assert m["operations"] == (2 + 3 + 4 + 5 + 8) + (1 + 2 + 2 + 4 + 8)
    _, m = trend_exec.run_hamlet(inst.workload, events, "static", params)
    # graphlet b4..b7: x = 2 + 1; b4 3*1, b5 4*1, b6 gets z (q2's b5 -> b6 is blocked): union
    # {a1 a2 c3 b4 b5} 5*2, z reads q1 x + b4 b5 = 3, q2 (edge predicate: scan) c3 + b4 = 2; b7 6*2;
    # close 2 queries * 2 snapshots.
    # graphlet b13: x = (1 + b4..b7 a8 a9) + (1 + b4..b7 c10 c11 c12); b13 12*1; close 2 * 1
    assert (m["shared_edges"], m["snapshot_edges"], m["evaluations"]) == (
        3 + 4 + 10 + 12 + 12, 3 + 5 + 7 + 8, 4 + 2)
    assert m["operations"] == 41 + 23 + 6 and m["snapshots"] == 3
