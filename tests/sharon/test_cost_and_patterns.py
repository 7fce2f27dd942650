"""Cost model (Eq. 1-8, spec §9.4 and the closed form of §2.6), detection (Alg. 7), decisions
(repeated types, sharing classes, non-SEQ patterns), plans."""

from __future__ import annotations

import math

import pytest

from cepopt.errors import CepoptError
from cepopt.instance import Instance
from cepopt.model import Kleene, Query, Seq, Statistics, Type, Window, Workload
from cepopt.sharon.cost import CostModel
from cepopt.sharon.cost import evaluate as cost_evaluate
from cepopt.sharon.cost import predict as cost_predict
from cepopt.sharon.patterns import detect, detect_sharable_patterns, query_types
from cepopt.sharon.plan import SharonPlan
from cepopt.sharon.problem import SharonProblem
from cepopt.solve import solve
from cepopt.syntax import parse_queries

WINDOW = Window(10)


def workload(*patterns: str, window: Window = WINDOW) -> Workload:
    return Workload(tuple(Query(Seq(tuple(Type(t) for t in p.split())), window) for p in patterns))


SPEC94 = workload("A B C", "A B D", "E A B C")
RATES94 = Statistics(rates={"A": 2, "B": 3, "C": 1, "D": 1, "E": 1})


def test_spec_9_4_both_required():
    pr = SharonProblem.from_workload(SPEC94, RATES94, expand=False)
    assert detect_sharable_patterns(SPEC94) == {
        ("A", "B"): frozenset({"q1", "q2", "q3"}), ("A", "B", "C"): frozenset({"q1", "q3"}),
        ("B", "C"): frozenset({"q1", "q3"})}
    c = pr.cost
    assert [c.nonshared(q) for q in ("q1", "q2", "q3")] == [12, 12, 7]
    ab = [("q1", 0), ("q2", 0), ("q3", 1)]
    assert c.shared(("A", "B"), ab) == 16 and c.bvalue(("A", "B"), ab) == 15
    assert c.bvalue(("A", "B", "C"), [("q1", 0), ("q3", 1)]) == 6
    assert c.bvalue(("B", "C"), [("q1", 1), ("q3", 2)]) == 0  # non-beneficial: pruned (R1)
    assert [(v.pattern, v.weight) for v in pr.original.vertices] == [(("A", "B"), 15), (("A", "B", "C"), 6)]
    assert pr.original.edges() == [(0, 1)]
    sol = solve(Instance("sharon", SPEC94, RATES94), "sharon", params={"expand": False})
    assert sol.objective == 15 and sol.plan == SharonPlan.of([(("A", "B"), {"q1", "q2", "q3"})])
    assert sol.stats["pruned"] == 1 and sol.stats["conflict_free"] == 1


def test_spec_9_4_missing_as_one():
    pr = SharonProblem.from_workload(SPEC94, RATES94, expand=False, comb="missing_as_one")
    c = pr.cost
    assert c.bvalue(("A", "B"), [("q1", 0), ("q2", 0), ("q3", 1)]) == 11
    assert c.bvalue(("A", "B", "C"), [("q1", 0), ("q3", 1)]) == 4
    assert c.bvalue(("B", "C"), [("q1", 1), ("q3", 2)]) == -9


@pytest.mark.parametrize("r,k,n,L", [(1, 3, 4, 2), (2, 4, 6, 3), (3, 2, 7, 2), (1, 5, 5, 3)])
def test_closed_form_interior(r, k, n, L):
    """All rates r, k queries of length n, p of length L interior in all: BValue = r^2((k-1)L - k r)."""
    types = {f"q{i}": tuple(f"X{i}_{j}" for j in range(1)) + tuple(f"P{j}" for j in range(L)) +
             tuple(f"Y{i}_{j}" for j in range(n - L - 1)) for i in range(k)}
    rates = {t: r for seq in types.values() for t in seq}
    c = CostModel(types, rates)
    p = tuple(f"P{j}" for j in range(L))
    assert c.bvalue(p, [(q, 1) for q in types]) == r * r * ((k - 1) * L - k * r)
    # p as a prefix of every query: no Comb (both_required) so BValue = (k-1) L r^2 > 0
    types2 = {q: p + seq[L + 1:] + ("Z",) for q, seq in types.items()}
    c2 = CostModel(types2, {**rates, "Z": r})
    assert c2.bvalue(p, [(q, 0) for q in types2]) == (k - 1) * L * r * r


def test_conflict_includes_containment_in_the_middle():
    """Spec A6: (B,C) strictly inside (A,B,C,D) in a common query is a conflict (Def. 6 misses it)."""
    from cepopt.sharon.graph import Vertex, conflict

    pr = SharonProblem.from_workload(workload("A B C D", "A B C D E", "X B C"), Statistics(
        rates={t: 1 for t in "ABCDEX"}), expand=False)
    outer = Vertex(("A", "B", "C", "D"), frozenset({"q1", "q2"}), 1)
    inner = Vertex(("B", "C"), frozenset({"q1", "q3"}), 1)
    assert conflict(outer, inner, pr.starts) and conflict(inner, outer, pr.starts)
    assert not conflict(outer, Vertex(("B", "C"), frozenset({"q3"}), 1), pr.starts)
    with pytest.raises(CepoptError, match="overlap"):
        cost_evaluate(pr, SharonPlan.of([(outer.pattern, outer.queries), (inner.pattern, inner.queries)]))


def test_rates_per_window_preferred():
    st = Statistics(rates={"A": 100, "B": 100, "C": 100}, events_per_window={"A": 1, "B": 2, "C": 3})
    pr = SharonProblem.from_workload(workload("A B C", "A B C"), st, expand=False)
    assert pr.cost.rates == {"A": 1, "B": 2, "C": 3}


def test_missing_rate_and_non_seq_are_errors():
    with pytest.raises(CepoptError, match="no rate"):
        SharonProblem.from_workload(workload("A B", "A B"), Statistics(rates={"A": 1}))
    w = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), Window(5)),))
    with pytest.raises(CepoptError, match="SEQ patterns of plain event types"):
        query_types(w)


def test_repeated_event_type_decision():
    """§7.3/§6.3: a query may repeat a type (costs count each position); a sub-pattern occurring
    twice in one query is not shared by that query."""
    w = workload("A B A B C", "A B C", "X A B C", "A B A D")
    found = detect_sharable_patterns(w)
    assert found[("A", "B")] == frozenset({"q2", "q3", "q4"})  # not q1: (A,B) occurs twice there
    assert found[("B", "C")] == frozenset({"q1", "q2", "q3"})
    assert found[("A", "B", "A")] == frozenset({"q1", "q4"})
    st = Statistics(rates={t: 1 for t in "ABCDX"})
    pr = SharonProblem.from_workload(w, st, expand=True)
    assert pr.cost.nonshared("q1") == 1 * 5
    with pytest.raises(CepoptError, match="does not occur exactly once"):
        cost_evaluate(pr, SharonPlan.of([(("A", "B"), {"q1", "q2"})]))
    inst = Instance("sharon", w, st)
    for method in ("bruteforce", "sharon", "cpsat-compact"):
        sol = solve(inst, method)
        assert sol.status == "optimal"
    assert SharonPlan.position(("A", "B", "A", "B", "C"), ("B", "C")) == 3


def test_sharing_classes_do_not_mix():
    text = """
    q1: PATTERN SEQ(A, B, C) WITHIN 10
    q2: PATTERN SEQ(A, B, D) WITHIN 10
    q3: PATTERN SEQ(A, B, C) WITHIN 20
    q4: PATTERN SEQ(A, B, E) WITHIN 20
    """
    w = parse_queries(text)
    found = detect(query_types(w), {q.name: int(q.window.length) for q in w})
    assert found[(10, ("A", "B"))] == frozenset({"q1", "q2"})
    assert found[(20, ("A", "B"))] == frozenset({"q3", "q4"})
    with pytest.raises(CepoptError, match="per class"):
        detect_sharable_patterns(w)
    st = Statistics(rates={t: 1 for t in "ABCDE"})
    pr = SharonProblem.from_workload(w, st, expand=False)
    with pytest.raises(CepoptError, match="different windows"):
        cost_evaluate(pr, SharonPlan.of([(("A", "B"), {"q1", "q3"})]))
    sol = solve(Instance("sharon", w, st), "cpsat")
    assert len(sol.plan) == 2 and sol.objective == 2 * pr.original.vertices[0].weight


def test_detection_on_500_queries():
    """Its speed is benchmarked (tests/sharon/test_patterns_bench.py, pytest -m bench), not asserted here."""
    import random

    rng = random.Random(1)
    types = {f"q{i}": tuple(rng.choice("ABCDEFGHIJKLMNOP") for _ in range(10)) for i in range(500)}
    found = detect(types)
    assert found and all(len(qs) >= 2 for qs in found.values())


def test_plan_json_round_trip_and_segments():
    plan = SharonPlan.of([(("C", "D"), ["q2", "q1"]), (("A", "B"), ["q1", "q3"])])
    assert SharonPlan.from_json(plan.to_json()) == plan
    assert plan.shared[0][0] == ("A", "B")
    assert plan.segments("q1", ("A", "B", "X", "C", "D", "Y")) == [
        (0, 2, ("A", "B")), (2, 3, None), (3, 5, ("C", "D")), (5, 6, None)]
    assert SharonPlan.empty().to_json() == [] and not SharonPlan.empty()
    with pytest.raises(CepoptError):
        SharonPlan.from_json([{"pattern": 3}])


def test_predicted_cost_and_baseline():
    from cepopt.solve import family

    fam = family("sharon")
    pr = SharonProblem.from_workload(SPEC94, RATES94, expand=False)
    base = fam.baseline_plan(pr)
    assert cost_predict(pr, base) == pr.cost.total_nonshared() == 12 + 12 + 7
    plan = SharonPlan.of([(("A", "B"), {"q1", "q2", "q3"})])
    assert cost_predict(pr, plan) == pr.cost.total_nonshared() - 15
    assert fam.evaluate(pr, plan) == 15 and fam.sense == "max" and "expand" in fam.problem_options
    assert fam.plan_from_json(pr, fam.plan_to_json(plan)) == plan


def test_bad_params():
    inst = Instance("sharon", SPEC94, RATES94, params={"nope": 1})
    with pytest.raises(CepoptError, match="params.nope"):
        solve(inst, "greedy")
    inst = Instance("sharon", SPEC94, RATES94)
    with pytest.raises(CepoptError, match="subsets=all needs expand"):
        solve(inst, "greedy", params={"expand": False, "subsets": "all"})
    with pytest.raises(CepoptError, match="params.comb"):
        solve(inst, "greedy", params={"comb": "x"})
    # the cuts option is checked whatever the backend, though only CP-SAT and SCIP use it
    for method, extra in (("cpsat", {}), ("milp", {}), ("milp", {"backend": "highs"})):
        with pytest.raises(CepoptError, match="params.cuts"):
            solve(inst, method, params={"cuts": "maybe", **extra})


def test_fractional_rates_are_scaled_for_cpsat():
    """CP-SAT needs integers: weights are scaled by a power of 10, rounded, and the scale reported."""
    w = workload("A B C D", "A B C E", "X A B C", "B C D", "Y B C D")
    st = Statistics(rates={"A": 0.7, "B": 0.35, "C": 1.25, "D": 0.5, "E": 0.9, "X": 0.3, "Y": 0.45})
    inst = Instance("sharon", w, st)
    best = solve(inst, "bruteforce")
    for method in ("cpsat", "cpsat-compact", "milp", "milp-compact"):
        sol = solve(inst, method)
        assert sol.objective == pytest.approx(best.objective, rel=1e-9), method
    sol = solve(inst, "cpsat", params={"lp_nodes": 0})  # the LP tree (on by default) needs no scaling
    assert sol.stats["weight_scale"] > 1 and sol.stats["objective_tolerance"] < 1e-6


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), -float("inf"), 10 ** 400])
def test_weights_must_be_finite(weight):
    """A NaN weight used to be silently dropped (NaN > 0 is false), inf gave ``optimal inf``, a huge
    int an OverflowError."""
    inst = Instance("sharon", SPEC94, RATES94, params={"expand": False, "weights": {"A,B": weight}})
    for method in ("sharon", "cpsat"):
        with pytest.raises(CepoptError, match=r"^params.weights.A,B: expected a finite number"):
            solve(inst, method)


@pytest.mark.parametrize("comb", ["both_required", "missing_as_one"])
def test_rates_whose_costs_overflow_are_refused(comb):
    """Eq. 5 cubes 1e200 to inf and inf - inf is nan: every method reported optimal 0."""
    st = Statistics(rates={t: 1e200 for t in "ABCDE"})
    with pytest.raises(CepoptError, match=r"^statistics: costs overflow: rates too large"):
        SharonProblem.from_workload(SPEC94, st, comb=comb)
    big = CostModel(query_types(SPEC94), {t: 1e90 for t in "ABCDE"}, comb)  # large, finite: priced
    assert math.isfinite(big.bvalue(("A", "B", "C"), [("q1", 0), ("q3", 1)]))
