"""The Gloria kernel: any plan (optimizer's, random, non-shared) gives the brute-force results."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.executor import gloria_kernel
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.model import Kleene, Query, Seq, Type, Window, Workload

gplan = pytest.importorskip("cepopt.gloria.plan")

TYPES = "ABCD"


@st.composite
def cases(draw):
    w = draw(st.sampled_from([Window(30, 30), Window(8, 4)]))
    k = draw(st.integers(2, 3))
    queries = []
    for _ in range(k):
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


@settings(max_examples=120)
@given(cases())
def test_any_plan_equals_brute_force(case):
    wl, plan, events = case
    truth = reference_results(wl, events)
    got, _ = gloria_kernel.run_local(wl, plan, events)
    assert compare_results(got, truth) == []
    base, _ = gloria_kernel.run_local(wl, None, events)
    assert compare_results(base, truth) == []


def test_fig7_plan_shares_and_matches():
    from cepopt.instance import load
    from cepopt.solve import solve

    inst = load("gloria-fig7")
    sol = solve(inst, "gloria")
    rows = []
    seq = "F A E B C A B C D E C D F A B C D".split()
    for i, t in enumerate(seq):
        rows.append({"ts": i, "type": t})
    events = pd.DataFrame(rows)
    truth = reference_results(inst.workload, events)
    got, metrics = gloria_kernel.run_local(inst.workload, sol.plan, events)
    assert compare_results(got, truth) == []
    _, base = gloria_kernel.run_local(inst.workload, None, events)
    assert metrics["snapshots"] > 0 and base["snapshots"] == 0
    assert metrics["reused"] > 0
