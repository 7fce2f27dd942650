"""Property tests on random small workloads (hypothesis):

* every exact method equals brute force on the graph it works on (original, expanded, subsets=all);
* the compact models equal brute force over the matching expanded graph (Alg. 5 option set, or every
  subset), and the original graph when expand=false;
* greedy <= optimum and >= its guaranteed weight (Eq. 10); every plan is valid (the cost model checks);
* original optimum <= expanded optimum <= subsets=all optimum;
* CP-SAT / MILP objectives are cross-checked against the cost model by solve().
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.instance import Instance
from cepopt.model import Query, Seq, Statistics, Type, Window, Workload
from cepopt.registry import solve
from cepopt.sharon.dominance import undominated
from cepopt.sharon.exhaustive import bruteforce
from cepopt.sharon.graph import SharonGraph
from cepopt.sharon.problem import SharonProblem

LETTERS = "ABCDEF"


@st.composite
def workloads(draw):
    """3-6 queries built from a pool of 2-4 short pieces (so that patterns are shared and conflict)
    plus random single types; rates 1-3 leave real sharing decisions."""
    alphabet = LETTERS[:draw(st.integers(4, 6))]
    piece = st.lists(st.sampled_from(alphabet), min_size=2, max_size=3).map(tuple)
    pool = draw(st.lists(piece, min_size=2, max_size=4))
    item = st.one_of(st.sampled_from(pool), st.sampled_from(alphabet).map(lambda t: (t,)))
    patterns = []
    for _ in range(draw(st.integers(3, 6))):
        seq = [t for part in draw(st.lists(item, min_size=1, max_size=3)) for t in part]
        if len(seq) < 2:
            seq.append(draw(st.sampled_from(alphabet)))
        patterns.append(seq[:7])
    rates = {t: draw(st.integers(1, 3)) for t in alphabet}
    comb = draw(st.sampled_from(["both_required", "missing_as_one"]))
    w = Workload(tuple(Query(Seq(tuple(Type(t) for t in p)), Window(10)) for p in patterns))
    return w, Statistics(rates=rates), comb


# cpsat/milp run the LP tree first (it closes on most of these graphs): lp_nodes=0 keeps the solvers
# themselves under test, lp_nodes=1 the hand-over of an unclosed tree's incumbent
EXACT_GRAPH = [("bruteforce", {}), ("sharon", {}), ("sharon", {"reduction": "recompute", "per_component": True}),
               ("cpsat", {}), ("cpsat", {"lp_nodes": 1}), ("cpsat", {"lp_nodes": 0}),
               ("cpsat", {"reduce": False, "lp_nodes": 0}), ("cpsat", {"extend": True, "split": False, "lp_nodes": 0}),
               ("cpsat", {"cuts": True, "lp_nodes": 0}), ("milp", {}), ("milp", {"lp_nodes": 1}),
               ("milp", {"lp_nodes": 0}), ("milp", {"cuts": True, "extend": False, "lp_nodes": 0}),
               ("milp", {"backend": "cbc", "lp_nodes": 0}),
               ("milp", {"extend": True, "backend": "highs", "lp_nodes": 0})]


def _run(inst, problem, method, params=None):
    sol = solve(inst, method, params=params, problem=problem)
    assert sol.status == "optimal" or method == "greedy", (method, sol.status, sol.message)
    return sol


@settings(max_examples=30, derandomize=True)
@given(workloads())
def test_exact_methods_agree(data):
    w, stats, comb = data
    inst = Instance("sharon", w, stats)
    optimum = {}
    for label, opts in (("original", {"expand": False}), ("expanded", {"expand": True}),
                        ("all", {"expand": True, "subsets": "all"})):
        problem = SharonProblem.from_workload(w, stats, comb=comb, max_options=None, **opts)
        assert problem.expansion_stats.get("options_cut", 0) == 0
        if len(problem.graph) > 60:
            continue
        best = _run(inst, problem, "bruteforce").objective
        optimum[label] = best
        keep = undominated(problem.graph)  # the dominance reduction keeps the MWIS weight
        kept = SharonGraph.build([problem.graph.vertices[i] for i in keep], problem.graph.starts)
        assert kept.weight_of(bruteforce(kept)) == pytest.approx(best)
        for method, params in EXACT_GRAPH[1:]:
            assert _run(inst, problem, method, params).objective == pytest.approx(best), (label, method)
        if len(problem.graph) <= 14:
            assert _run(inst, problem, "exhaustive").objective == pytest.approx(best)
        for method, params in (("cpsat-compact", {}), ("milp-compact", {}), ("cpsat-compact", {"split": False})):
            assert _run(inst, problem, method, params).objective == pytest.approx(best), (label, method, params)
        greedy = solve(inst, "greedy", problem=problem)
        assert greedy.objective <= best + 1e-9
        assert greedy.objective >= greedy.stats["guaranteed_weight"] - 1e-9
    if "original" in optimum and "expanded" in optimum:
        assert optimum["original"] <= optimum["expanded"] + 1e-9
    if "expanded" in optimum and "all" in optimum:
        assert optimum["expanded"] <= optimum["all"] + 1e-9


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CEPOPT_SLOW"), reason="long property run: CEPOPT_SLOW=1 pytest -m slow")
@settings(max_examples=400)
@given(workloads())
def test_exact_methods_agree_many(data):
    """The same property on many more (random) workloads: ``CEPOPT_SLOW=1 pytest -m slow tests/sharon``."""
    test_exact_methods_agree.hypothesis.inner_test(data)
