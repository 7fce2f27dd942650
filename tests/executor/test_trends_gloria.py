"""The Gloria kernel: any plan (optimizer's, random, non-shared) gives the brute-force results."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import cepopt.gloria.plan as gplan
from cepopt.executor import trend_exec
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.model import Kleene, Query, Seq, Type, Window, Workload

TYPES = "ABCD"


@st.composite
def cases(draw):
    # one slide per case; lengths may differ (pane-compatible windows share one class in Gloria)
    windows = draw(st.sampled_from([[Window(30, 30)], [Window(8, 4)], [Window(8, 4), Window(12, 4), Window(4, 4)]]))
    k = draw(st.integers(2, 3))
    queries = []
    for _ in range(k):
        w = draw(st.sampled_from(windows))
        shape = draw(st.sampled_from(["seq", "kleene", "kleene_seq"]))
        a, b, c = draw(st.permutations(list(TYPES)))[:3]
        if shape == "seq":
            items = (Type(a), Type(b), Type(c))
        elif shape == "kleene":
            items = (Type(a), Kleene(Type(b)), Type(c))
        else:
            items = (Type(c), Kleene(Seq((Type(a), Type(b)))))
        queries.append(Query(Seq(items), w))
    wl = Workload(tuple(queries))
    from cepopt.hamlet.problem import compile_query

    trans: dict[tuple[str, str], list[str]] = {}
    for q in wl:
        cq = compile_query(q)
        for tj, srcs in cq.pt:
            for ti in srcs:
                trans.setdefault((ti, tj), []).append(q.name)
    blocks = {}
    for (ti, tj), qs in sorted(trans.items()):
        labels = draw(st.lists(st.integers(0, 1), min_size=len(qs), max_size=len(qs)))
        parts: dict[int, list[str]] = {}
        for q, lab in zip(qs, labels, strict=True):
            parts.setdefault(lab, []).append(q)
        bl = []
        for members in parts.values():
            if len(members) >= 2 and draw(st.booleans()):
                bl.append(gplan.Block(tuple(members), draw(st.sampled_from([ti, ti, tj, "A", "B"]))))
            else:
                bl.extend(gplan.Block((m,)) for m in members)
        blocks[(ti, tj)] = bl
    plan = gplan.GloriaPlan.from_blocks(blocks)
    n = draw(st.integers(0, 11))
    ts = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    events = pd.DataFrame([{"ts": t, "type": draw(st.sampled_from(TYPES))} for t in ts], columns=["ts", "type"])
    return wl, plan, events


@settings(max_examples=200)
@given(cases())
def test_any_plan_equals_brute_force(case):
    wl, plan, events = case
    truth = reference_results(wl, events)
    got, _ = trend_exec.run_gloria(wl, plan, events)
    assert compare_results(got, truth) == []
    base, _ = trend_exec.run_gloria(wl, None, events)
    assert compare_results(base, truth) == []


def test_fig7_plan_shares_and_matches():
    from cepopt.instance import load
    from cepopt.registry import solve

    inst = load("gloria-fig7")
    sol = solve(inst, "gloria")
    rows = []
    seq = "F A E B C A B C D E C D F A B C D".split()
    for i, t in enumerate(seq):
        rows.append({"ts": i, "type": t})
    events = pd.DataFrame(rows)
    truth = reference_results(inst.workload, events)
    got, metrics = trend_exec.run_gloria(inst.workload, sol.plan, events)
    assert compare_results(got, truth) == []
    _, base = trend_exec.run_gloria(inst.workload, None, events)
    assert metrics["snapshots"] > 0 and base["snapshots"] == 0
    assert metrics["reused"] > 0


def _e1():
    """Spec §9 E1: q1 = SEQ(C,SEQ(A,B)+,D), q2 = SEQ(C,SEQ(A,B)+), stream c0 a1 b2 a3 b4 d5."""
    from cepopt.syntax import parse_queries

    wl = parse_queries("q1: RETURN COUNT(*) PATTERN SEQ(C, SEQ(A, B)+, D) WITHIN 100 SLIDE 100\n"
                       "q2: RETURN COUNT(*) PATTERN SEQ(C, SEQ(A, B)+) WITHIN 100 SLIDE 100")
    events = pd.DataFrame({"ts": range(6), "type": list("CABABD")})
    shared = gplan.Block(("q1", "q2"), "C")
    plan = gplan.GloriaPlan.from_blocks({("C", "A"): [shared], ("A", "B"): [shared], ("B", "A"): [shared],
                                         ("B", "D"): [gplan.Block(("q1",))]})
    return wl, events, plan


def test_e1_operation_counts_follow_eqs_2_to_4():
    """Non-shared: one propagation per (earlier predecessor, event, query): 2+2+4+4+2 = 14. Shared
    (1,2)^C: each predecessor is folded once into its block's running expression (Eq. 3, no |E|
    factor): c0, a1, b2, a3, b4 = 5 (expressions of length 1: a1 and a3 reuse sp_c0), plus 2 for d5
    reading q1's unshared B->D sum; 4 evaluations (b2 and b4 for q2's result and for q1's unshared
    B->D): 7 + 4 = 11."""
    wl, events, plan = _e1()
    got, shared = trend_exec.run_gloria(wl, plan, events)
    assert compare_results(got, reference_results(wl, events)) == []
    assert dict(zip(got["query"], got["value"], strict=True)) == {"q1": 4, "q2": 4}
    assert (shared["propagations"], shared["evaluations"], shared["snapshots"]) == (7, 4, 1)
    assert shared["reused"] == 4  # a1, b2, a3, b4 hand on expressions over sp_c0
    _, base = trend_exec.run_gloria(wl, None, events)
    assert (base["propagations"], base["evaluations"], base["snapshots"]) == (14, 0, 0)


def test_windows_of_one_slide_share_and_expired_queries_do_not_block_reuse():
    """q1 (window 8) and q2 (window 12), slide 4, share SEQ(A,B,C) with snapshot A: they run in one
    scope per window, and after q1's window closes its B events still hand on expressions."""
    from cepopt.syntax import parse_queries

    wl = parse_queries("q1: RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 8 SLIDE 4\n"
                       "q2: RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 12 SLIDE 4")
    shared = gplan.Block(("q1", "q2"), "A")
    plan = gplan.GloriaPlan.from_blocks({("A", "B"): [shared], ("B", "C"): [shared]})
    events = pd.DataFrame({"ts": [0, 1, 2, 3, 5, 7, 9, 10, 11, 13, 15],
                           "type": list("ABCABCBCABC")})
    got, metrics = trend_exec.run_gloria(wl, plan, events)
    assert compare_results(got, reference_results(wl, events)) == []
    # windows k = 0..3 span [4k, 4k + 12): A snapshots at (k=0: 0, 3, 11), (k=1: 11), (k=2: 11); every B
    # event of every window hands on its expression, also B9 and B13 after q1's window [0, 8) closed
    assert metrics["snapshots"] == 5
    assert metrics["reused"] == 3 + 3 + 2 + 1
