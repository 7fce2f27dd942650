"""The running example (Table 1, Fig. 4, Examples 4-15): every number read from the bundled
instance's "expected" (spec §9.1)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from cepopt.errors import CepoptError
from cepopt.sharon.cost import evaluate as cost_evaluate
from cepopt.sharon.expansion import causing_queries, count_options, enumerate_options
from cepopt.sharon.graph import SharonGraph, Vertex, conflict
from cepopt.sharon.gwmin import guaranteed_weight, gwmin
from cepopt.sharon.patterns import detect_sharable_patterns
from cepopt.sharon.plan import SharonPlan
from cepopt.sharon.plan_finder import find_plan
from cepopt.sharon.problem import build
from cepopt.sharon.reduction import reduce_graph, score_max
from cepopt.solve import compare, solve


def names(labels, indices):
    return sorted(labels[i] for i in indices)


def index(labels, name):
    return next(i for i, n in labels.items() if n == name)


def plan_of(expected, names_):
    c = expected["candidates"]
    return SharonPlan.of((c[n]["pattern"], c[n]["queries"]) for n in names_)


def test_table1_candidates(fig4, expected):
    found = detect_sharable_patterns(fig4.workload)
    want = {tuple(c["pattern"]): frozenset(c["queries"]) for c in expected["candidates"].values()}
    assert found == want


def test_weights_edges_degrees(fig4_problem, expected, labels):
    g = fig4_problem.original
    assert {labels[i]: v.weight for i, v in enumerate(g.vertices)} == expected["weights"]
    assert sorted(tuple(sorted((labels[i], labels[j]))) for i, j in g.edges()) == \
        sorted(tuple(e) for e in expected["edges"])
    assert {labels[i]: g.degree(i) for i in labels} == expected["degrees"]


def test_example5_scores(fig4_problem, expected):
    for key, score in expected["example5_scores"].items():
        assert cost_evaluate(fig4_problem, plan_of(expected, key.split(","))) == score


def test_conflict_definition_checks(fig4_problem, expected, labels):
    g = fig4_problem.original
    v = {labels[i]: g.vertices[i] for i in labels}
    assert not conflict(v["p2"], v["p4"], g.starts)  # Example 5: no overlap in q4
    assert conflict(v["p1"], v["p6"], g.starts)  # caused by q1
    assert not conflict(v["p2"], v["p7"], g.starts)  # no common query
    with pytest.raises(CepoptError, match="overlap"):
        cost_evaluate(fig4_problem, plan_of(expected, ["p1", "p2"]))


def test_example7_greedy_bound_and_score_max(fig4_problem, expected, labels):
    g = fig4_problem.original
    assert guaranteed_weight(g) == Fraction(*expected["greedy_bound"])
    assert round(float(guaranteed_weight(g)), 2) == expected["greedy_bound_rounded"]
    alive = set(range(len(g)))
    assert {labels[i]: score_max(g, i, alive) for i in alive} == expected["score_max"]


def test_reduction_sound_modes(fig4_problem, expected, labels):
    g = fig4_problem.original
    for mode in ("paper", "recompute"):
        for per_component in (False, True):
            remaining, free, pruned, _ = reduce_graph(g, mode=mode, per_component=per_component)
            assert names(labels, pruned) == expected["pruned"]
            assert names(labels, free) == expected["conflict_free"]
            assert names(labels, remaining) == expected["remaining"]
    remaining, _, _, _ = reduce_graph(g)
    left = [(labels[i], labels[j]) for i, j in g.edges() if i in remaining and j in remaining]
    assert sorted(tuple(sorted(e)) for e in left) == sorted(tuple(e) for e in expected["remaining_edges"])
    # recompute mode, pass 2: min on the reduced graph
    assert guaranteed_weight(g, remaining) == expected["recompute_pass2_bound"]
    # per component ([CODE]): component {p1..p6} has min 617/30 and Score_max(p3) = 20 < min
    comp = [i for i in labels if labels[i] != "p7"]
    assert guaranteed_weight(g, comp) == Fraction(*expected["component_bound"])
    assert score_max(g, index(labels, "p3"), set(comp)) == 20


def test_literal_alg2_is_unsound_regression(fig4_problem, expected):
    """Alg. 2 read literally (fixed min, Score_max without F) returns 46 instead of 50 in the paper's
    vertex order (spec §4, T7); the sound modes return 50 in every vertex order."""
    g0 = fig4_problem.original
    lit = expected["literal_alg2"]
    key = {(tuple(c["pattern"]), frozenset(c["queries"])): n for n, c in expected["candidates"].items()}
    by_name = {key[(v.pattern, v.queries)]: v for v in g0.vertices}
    g = SharonGraph.build([by_name[n] for n in lit["order"]], g0.starts)
    remaining, free, _, _ = reduce_graph(g, mode="literal")
    best, _ = find_plan(g, remaining)
    assert sorted(lit["order"][i] for i in free) == lit["conflict_free"]
    assert g.weight_of(best) + g.weight_of(free) == lit["score"] < expected["optimum"]["score"]
    rng = random.Random(0)
    for _ in range(200):
        order = list(lit["order"])
        rng.shuffle(order)
        g = SharonGraph.build([by_name[n] for n in order], g0.starts)
        for mode in ("paper", "recompute"):
            remaining, free, _, _ = reduce_graph(g, mode=mode)
            best, _ = find_plan(g, remaining)
            assert g.weight_of(best) + g.weight_of(free) == expected["optimum"]["score"]


def test_examples_9_10_levels_and_search_space(fig4_problem, expected, labels):
    g = fig4_problem.original
    remaining, free, _, _ = reduce_graph(g)
    best, stats = find_plan(g, remaining)
    assert stats["levels"] == expected["levels"]
    assert stats["plans"] == expected["valid_plans"]
    total = 2 ** len(g) - 1
    pruned_space = 2 ** len(g) - 2 ** len(remaining)
    assert pruned_space == expected["search_space_pruned"]
    assert round(100 * pruned_space / total, 2) == expected["search_space_pruned_percent"]
    assert round(100 * stats["plans"] / total, 2) == expected["valid_percent"]
    invalid = 2 ** len(remaining) - stats["plans"] - 1
    assert invalid == expected["invalid_plans"]
    assert round(100 * invalid / total, 2) == expected["invalid_percent"]
    assert names(labels, list(best) + free) == expected["optimum"]["plan"]


def test_example12_greedy_vs_optimum(fig4, expected, labels, fig4_problem):
    g = fig4_problem.original
    picks = gwmin(g)
    assert [labels[i] for i in picks] == ["p7", "p1"]  # ratio 18 first, then 25/6
    assert names(labels, picks) == expected["greedy"]["plan"]
    sols = {s.method: s for s in compare(fig4, ["greedy", "sharon", "exhaustive", "bruteforce", "cpsat", "milp",
                                                "cpsat-compact", "milp-compact"])}
    assert sols["greedy"].objective == expected["greedy"]["score"]
    assert sols["greedy"].stats["guaranteed_weight"] == pytest.approx(float(Fraction(*expected["greedy_bound"])))
    for name, sol in sols.items():
        if name != "greedy":
            assert sol.status == "optimal", name
            assert sol.objective == expected["optimum"]["score"], name
            assert sol.plan == plan_of(expected, expected["optimum"]["plan"]), name
    gain = 100 * (expected["optimum"]["score"] / expected["greedy"]["score"] - 1)
    assert round(gain, 1) == expected["greedy"]["gain_of_optimum_percent"]


def test_examples_13_15_expansion(fig4, fig4_problem, expected, labels):
    g = fig4_problem.original
    exp = expected["expansion"]
    p1 = index(labels, "p1")
    assert sorted(causing_queries(g, p1)) == exp["p1_causing_queries"]
    counts = {labels[i]: count_options(len(v.queries), len(causing_queries(g, i))) for i, v in enumerate(g.vertices)}
    assert counts.pop("p1") == exp["p1_options"]
    assert set(counts.values()) == {exp["other_options"]}
    assert len(list(enumerate_options(g.vertices[p1].queries, causing_queries(g, p1)))) == exp["p1_options"]
    v = {labels[i]: g.vertices[i] for i in labels}
    p1_13 = Vertex(v["p1"].pattern, frozenset({"q1", "q3"}), 0)
    assert not conflict(p1_13, v["p4"], g.starts) and not conflict(p1_13, v["p5"], g.starts)
    assert all(conflict(p1_13, v[n], g.starts) for n in ("p2", "p3", "p6"))
    p1_12 = Vertex(v["p1"].pattern, frozenset({"q1", "q2"}), 0)
    assert not conflict(p1_12, v["p2"], g.starts) and not conflict(p1_12, v["p3"], g.starts)
    # with rates instead of the injected weights the expansion enumerates 17 options
    params = {k: val for k, val in fig4.params.items() if k != "weights"}
    expanded = build(fig4.replace(params={**params, "expand": True}))
    assert len(expanded.graph) <= exp["vertices_before_filter"]
    assert expanded.expansion_stats["options"] == exp["vertices_before_filter"]
    # injected weights exist only for full candidates: expanding them is a clear error
    with pytest.raises(CepoptError, match="expand=false"):
        _ = build(fig4, expand=True).graph
    with pytest.raises(CepoptError, match="expand=false"):
        solve(fig4, "cpsat-compact", params={"expand": True})


def test_solve_with_param_expand_strings(fig4):
    assert solve(fig4, "sharon", params={"expand": "false"}).objective == 50
    with pytest.raises(CepoptError, match="params.expand"):
        solve(fig4, "sharon", params={"expand": "maybe"})


@pytest.mark.parametrize("backend", ["highs", "scip", "cbc"])
def test_milp_backends(fig4, expected, backend):
    for method in ("milp", "milp-compact"):
        sol = solve(fig4, method, params={"backend": backend}, time_limit=30)
        assert sol.status == "optimal" and sol.objective == expected["optimum"]["score"]
