"""Problem option ``fork_accounting`` (specs/gloria.md §10 A6): "edge" (the paper's per-edge accounting,
the default) and "once" (each block's propagation term charged once, split over its successors in
proportion to the queries each carries; cepopt/gloria/cost.py gives the decision and its reasons).

Hand-derived costs on a SEQ fork and on a Kleene cycle's exit; under "once" every exact method finds
the brute-force optimum of random workloads and the evaluator re-scores every plan to the method's own
value; without forks "once" is "edge"; unknown values are user errors.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.formulations.gloria import solve_cpsat_gloria, solve_milp_gloria
from cepopt.gloria.cost import evaluate, plan_from_options, total_cost
from cepopt.gloria.exhaustive import brute_force
from cepopt.gloria.graph import describe_option, pool_graph_is_forest
from cepopt.gloria.methods import candidate_graph
from cepopt.gloria.path_search import search, tree_dp
from cepopt.gloria.plan import Block
from cepopt.gloria.problem import build
from cepopt.instance import Instance
from cepopt.instances import load
from cepopt.model import Statistics
from cepopt.registry import MethodLimitError, solve
from cepopt.syntax import parse_queries
from tests.gloria.test_properties import cost_models, cycle_costs, workloads


def options_of(problem, by_label: dict[str, tuple[Block, ...]]):
    return [by_label[pool.label] for pool in problem.pools]


# --- (2) hand-computed forks ---------------------------------------------------------------------

#: q1, q2 go on to C, q3, q4 to D: Pool(A,B) forks into Pool(B,C) and Pool(B,D).
FORK = Instance("gloria", parse_queries("\n".join([
    "q1: PATTERN SEQ(A, B, C) WITHIN 10", "q2: PATTERN SEQ(A, B, C) WITHIN 10",
    "q3: PATTERN SEQ(A, B, D) WITHIN 10", "q4: PATTERN SEQ(A, B, D) WITHIN 10"])),
    Statistics(rates={"A": 3, "B": 2, "C": 2, "D": 1}))

#: S: share all four at A and REUSE the two halves after the fork.
SHARED = {"A->B#0": (Block(("q1", "q2", "q3", "q4"), "A"),), "B->C#0": (Block(("q1", "q2"), "A"),),
          "B->D#0": (Block(("q3", "q4"), "A"),)}
#: P: share only q3, q4 (no block crosses the fork).
PARTIAL = {"A->B#0": (Block(("q1",)), Block(("q2",)), Block(("q3", "q4"), "A")),
           "B->C#0": (Block(("q1",)), Block(("q2",))), "B->D#0": (Block(("q3", "q4"), "A"),)}


def test_seq_fork_hand_computed():
    """f: A=3, B=2, C=2, D=1, paper cost model (g = 1).

    Plan S:  start f(A)*4 = 12
             A->B => B->C: (q1..q4)^A cut to {q1,q2}, REUSE: propagation f(A)*len(A,A) = 3
             A->B => B->D: (q1..q4)^A cut to {q3,q4}, REUSE: 3
             end C: (q1,q2)^A: f(B)*f(A) + f(C)*f(A)*2 = 6 + 12 = 18
             end D: (q3,q4)^A: f(B)*f(A) + f(D)*f(A)*2 = 6 + 6 = 12
      edge:  12 + 3 + 3 + 18 + 12 = 48
      once:  the block's term 3 is charged once, 2/4 on each successor: 12 + 1.5 + 1.5 + 18 + 12 = 45
    Plan P:  start 12; A->B => B->C: q1, q2 unshared, f(A)*f(B) each = 12; A->B => B->D: (q3,q4)^A, 3;
             end C: f(B)*f(C) per query = 8; end D: 12.  Total 47 under both (no block crosses the fork).
    So "edge" prefers P (47 < 48) and "once" prefers S (45 < 47): the option changes the optimal plan.
    """
    edge, once = build(FORK), build(FORK, fork_accounting="once")
    assert edge.fork_accounting == "edge"
    assert total_cost(edge, options_of(edge, SHARED)) == 48
    assert total_cost(once, options_of(once, SHARED)) == 45
    assert total_cost(edge, options_of(edge, PARTIAL)) == 47
    assert total_cost(once, options_of(once, PARTIAL)) == 47
    ab = next(p.index for p in once.pools if p.label == "A->B#0")
    assert once.share(ab, ("A", "B"), ("q1", "q2", "q3", "q4"), frozenset({"q1", "q2"})) == Fraction(1, 2)
    assert once.share(ab, ("A", "B"), ("q1", "q2", "q3"), frozenset({"q3", "q4"})) == Fraction(1, 3)
    assert edge.share(ab, ("A", "B"), ("q1", "q2", "q3", "q4"), frozenset({"q1", "q2"})) == 1
    for fork_accounting, value, plan in (("edge", 47, PARTIAL), ("once", 45, SHARED)):
        params = {"fork_accounting": fork_accounting}
        for method, extra in (("exhaustive", {}), ("cpsat", {"candidates": "exhaustive"}),
                              ("milp", {"candidates": "exhaustive"})):
            sol = solve(FORK, method, params={**params, **extra})
            assert (sol.status, sol.objective) == ("optimal", value), (fork_accounting, method)
            got = {tp.transition: describe_option(tp.blocks) for tp in sol.plan.transitions}
            assert got == {tuple(label[:-2].split("->")): describe_option(o) for label, o in plan.items()}
        for method in ("gloria", "gloria-safe", "noprune", "greedy"):
            assert solve(FORK, method, params=params).objective >= value


def test_the_option_reaches_the_executors_predicted_cost():
    """``cepopt execute`` builds the problem with build_problem(instance, params) and the Gloria driver
    predicts ``FAMILY.evaluate(problem, plan)``: both follow the option."""
    from cepopt.gloria.methods import FAMILY
    from cepopt.registry import build_problem

    _, problem, method_params = build_problem(FORK, {"fork_accounting": "once", "tie": "share"})
    assert (problem.fork_accounting, method_params) == ("once", {"tie": "share"})
    plan = plan_from_options(problem, options_of(problem, SHARED))
    assert FAMILY.evaluate(problem, plan) == 45.0
    assert FAMILY.evaluate(build_problem(FORK)[1], plan) == 48.0


def test_kleene_exit_hand_computed():
    """A query leaving on several edges: q1 = SEQ(C, SEQ(A,B)+, D), q2 = SEQ(C, SEQ(A,B)+) (spec E1),
    f: A=5, B=10, C=12, D=4, V2. Plan: C->A (q1,q2)^C, the cycle (q1,q2)^A, B->D (q1).

    After A->B the block {q1,q2} feeds three edges that each price B with predecessor A: the cycle's
    B->A (both queries), the exit to B->D (q1) and q2's end at B. Its propagation term is
    f(A)*len(A,A) = 5.
      start f(C)*2 = 24; entry into the cycle (A after C): 12 + f(A)*f(C)*2 = 132
      cycle: B after A (not into X) 5; A after B (into X = A, V2) f(B)*f(A)*2 = 100
      end of q2 at B: 5 + f(B)*f(A)*1 = 55; exit to B->D (SPLIT to q1): 5 + 50 = 55; end of q1 at D:
      f(B)*f(D) = 40
      edge: 24 + 132 + 5 + 100 + 55 + 55 + 40 = 411
      once: the 5 is split 2/4, 1/4, 1/4 over the three edges: 411 - 3*5 + 5 = 401
    (The authors' |S| denominator would split it 2/2, 1/2, 1/2 and still charge it twice: 406.)
    """
    inst = Instance("gloria", parse_queries("q1: PATTERN SEQ(C, SEQ(A, B)+, D) WITHIN 10\n"
                                            "q2: PATTERN SEQ(C, SEQ(A, B)+) WITHIN 10"),
                    Statistics(rates={"A": 5, "B": 10, "C": 12, "D": 4}))
    plan = {"K[A..B]#0": (Block(("q1", "q2"), "A"),), "C->A#0": (Block(("q1", "q2"), "C"),),
            "B->D#0": (Block(("q1",)),)}
    for fork_accounting, value in (("edge", 411), ("once", 401)):
        problem = build(inst, fork_accounting=fork_accounting)
        options = options_of(problem, plan)
        assert total_cost(problem, options) == value
        assert evaluate(problem, plan_from_options(problem, options)) == value
    once = build(inst, fork_accounting="once")
    k = next(p.index for p in once.pools if p.kind == "kleene")
    shares = [once.share(k, ("A", "B"), ("q1", "q2"), s) for s in once.fanout[(k, ("A", "B"))]]
    assert sorted(shares) == [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)] and sum(shares) == 1


def test_start_and_bypass_forks():
    """q1 = SEQ(B+, C) starts in two pools (the cycle of B and B->C): f(B) = 4 is charged once per
    query under "once" (2 + 2), twice under "edge" (4 + 4). q2 = SEQ(A, B+, C) leaves A->B on two edges
    (into the cycle and, bypassing it, into B->C): an unshared query's f(A) f(B) = 12 is split 1/2, 1/2."""
    from cepopt.gloria.cost import pair_cost, start_cost

    inst = Instance("gloria", parse_queries("q1: PATTERN SEQ(B+, C) WITHIN 10\nq2: PATTERN SEQ(A, B+, C) WITHIN 10"),
                    Statistics(rates={"A": 3, "B": 4, "C": 5}))
    edge, once = build(inst), build(inst, fork_accounting="once")
    labels = [p.label for p in once.pools]
    assert [start_cost(edge, p) for p in edge.pools] == [4 if "B" in p.source else 3 for p in edge.pools]
    assert {lab: start_cost(once, p) for lab, p in zip(labels, once.pools, strict=True)} == {
        "K[B..B]#0": 2, "A->B#0": 3, "B->C#0": 2}
    ab = labels.index("A->B#0")
    terms = [t for t in once.terms if t.a == ab]
    assert len(terms) == 2 and all(t.queries == {"q2"} for t in terms)
    opts = {p.index: tuple(Block((q,)) for q in sorted(p.queries)) for p in once.pools}
    for problem, each in ((edge, 12), (once, 6)):
        assert [pair_cost(problem, t, opts[t.a], opts[t.b]) for t in terms] == [each, each]


def test_nested_kleene_table5_once():
    """Table 5 (E4) under "once": B after A is charged once for the cycle's two edges B->A and B->D, and
    D after B once for the cycle's D->C and the end edge. Non-shared: 1204 - 200 - 80 = 924 (+ end 80,
    was 160); (q1..q4)^D, V1: 184 - 20 - 20 = 144 (the D<-B edge 40 and the end's propagation share it)."""
    from cepopt.gloria.cost import cycle_cost, end_cost
    from cepopt.gloria.nodes import kleene_options

    text = "\n".join(f"q{i}: PATTERN SEQ(C, SEQ(A, B)+, D)+ WITHIN 10 min SLIDE 5 min" for i in range(1, 5))
    inst = Instance("gloria", parse_queries(text), Statistics(rates={"A": 5, "B": 10, "C": 12, "D": 4}))
    problem = build(inst, kleene_cycle_cost="V1", fork_accounting="once")
    (pool,) = problem.pools
    got = {(o[0].snapshot or ""): (12 + cycle_cost(problem, pool, o), end_cost(problem, pool, o))
           for o in kleene_options(pool)}
    assert got[""] == (924, 80)
    assert got["D"] == (144, 84)  # end: f(B) f(D) / 2 + f(D) f(D) 4 = 20 + 64


# --- (3) every exact method finds the optimum under "once" --------------------------------------


def _fork_instance(prefix: list[str], tails: list[list[str]], rates: list[int]) -> Instance:
    text = "\n".join(f"q{i}: PATTERN SEQ({', '.join(prefix + tail)}) WITHIN 10" for i, tail in enumerate(tails, 1))
    return Instance("gloria", parse_queries(text), Statistics(rates=dict(zip("ABPCDE", rates, strict=True))))


# A shared SEQ prefix that forks into 2-5 tails (some equal, some ending at the fork).
seq_forks = st.builds(
    lambda prefix, tails, rates, cost_model, cycle: (_fork_instance(prefix, tails, rates), cost_model, cycle),
    st.sampled_from([["A", "B"], ["P", "A", "B"]]),
    st.lists(st.sampled_from([[], ["C"], ["D"], ["C", "E"], ["D", "E"], ["E"]]), min_size=2, max_size=5),
    st.lists(st.integers(1, 9), min_size=6, max_size=6), cost_models, cycle_costs)


@settings(max_examples=60, deadline=None)
@given(st.one_of(workloads, seq_forks))
def test_once_exact_methods_agree_with_brute_force(case):
    inst, cost_model, cycle = case
    params = {"cost_model": cost_model, "kleene_cycle_cost": cycle, "fork_accounting": "once"}
    problem = build(inst, **params)
    try:
        graph = candidate_graph(problem, "exhaustive", max_options=300)
        choice, optimum, proven = brute_force(graph, max_plans=3e5)
    except MethodLimitError:
        return
    assert proven and choice is not None
    # the evaluator re-scores the brute-force plan to its path weight, exactly
    assert evaluate(problem, graph.plan(choice)) == graph.weight(choice)
    assert graph.weight(choice) == pytest.approx(optimum, rel=1e-12)
    # a fork never costs more under "once" (every share is <= 1)
    assert evaluate(build(inst, **{**params, "fork_accounting": "edge"}), graph.plan(choice)) >= optimum - 1e-9
    if pool_graph_is_forest(problem):
        dp = tree_dp(graph)
        assert evaluate(problem, graph.plan(dp)) == pytest.approx(optimum, rel=1e-12)
    limits = {"max_options": 300}
    for method, extra in (("exhaustive", {"max_plans": 3e5}), ("cpsat", {"candidates": "exhaustive"}),
                          ("milp", {"candidates": "exhaustive"})):
        sol = solve(inst, method, time_limit=30, params={**params, **limits, **extra})
        assert sol.status == "optimal", (method, sol.message)
        assert sol.objective == pytest.approx(optimum, rel=1e-9), method
        # the method's own objective is the evaluator's value of its plan
        assert sol.stats["solver_objective"] == pytest.approx(float(evaluate(problem, sol.plan)), rel=1e-9)
    values = {}
    for candidates in ("noprune", "safe", "gloria"):
        try:
            g = candidate_graph(problem, candidates, max_nodes=3000)
            ch, value, proven = brute_force(g, max_plans=3e5)
        except MethodLimitError:
            continue
        assert proven and value >= optimum - 1e-9
        assert evaluate(problem, g.plan(ch)) == g.weight(ch)
        for solver in (solve_cpsat_gloria, solve_milp_gloria):
            got, status, objective, _, _ = solver(g, time_limit=20, seed=0)
            assert status == "optimal"
            assert objective == pytest.approx(value, rel=1e-9)
            assert float(evaluate(problem, g.plan(got))) == pytest.approx(objective, rel=1e-9)
        options, _ = search(g)
        found = total_cost(problem, options)
        assert evaluate(problem, plan_from_options(problem, options)) == found
        if pool_graph_is_forest(problem):
            assert found == pytest.approx(value, rel=1e-12)
        values[candidates] = value
    if "noprune" in values and "safe" in values:
        assert values["safe"] == pytest.approx(values["noprune"], rel=1e-12)  # safe pruning loses nothing
    for method in ("gloria", "greedy"):
        sol = solve(inst, method, params={**params})
        assert sol.objective >= optimum - 1e-9


# --- (4) without forks "once" is "edge" ---------------------------------------------------------


def _chain_instance(queries: list[tuple[int, int]], rates: list[int]) -> Instance:
    chain = ["C0", "C1", "C2", "C3", "C4"]
    heads = ["H0", "H1", "H2"]
    text = "\n".join(f"q{i}: PATTERN SEQ({', '.join(([heads[h]] if h < 3 else []) + chain[start:])}) WITHIN 10"
                     for i, (h, start) in enumerate(queries, 1))
    return Instance("gloria", parse_queries(text), Statistics(rates=dict(zip(chain + heads, rates, strict=True))))


# Queries that all end at C4 and run along one chain from some start, some after a head type of their
# own: joins (as in Fig. 7) but no forks -- every pool's transition feeds exactly one edge.
chains = st.builds(_chain_instance,
                   st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=4),
                   st.lists(st.integers(1, 9), min_size=8, max_size=8))


@settings(max_examples=25, deadline=None)
@given(chains, cost_models)
def test_without_forks_once_equals_edge(inst, cost_model):
    edge = build(inst, cost_model=cost_model)
    once = build(inst, cost_model=cost_model, fork_accounting="once")
    assert all(len(f) == 1 for f in once.fanout.values())
    for candidates in ("noprune", "exhaustive"):
        try:
            g_edge = candidate_graph(edge, candidates, max_options=300)
            g_once = candidate_graph(once, candidates, max_options=300)
        except MethodLimitError:
            continue
        assert g_once.inner == g_edge.inner and g_once.end == g_edge.end and g_once.allowed == g_edge.allowed
    for method in ("gloria", "greedy", "cpsat"):
        a = solve(inst, method, params={"cost_model": cost_model})
        b = solve(inst, method, params={"cost_model": cost_model, "fork_accounting": "once"})
        assert (a.objective, a.plan) == (b.objective, b.plan)


def test_fig7_has_no_forks_and_keeps_its_numbers():
    inst = load("gloria-fig7")
    problem = build(inst, fork_accounting="once")
    assert all(len(f) == 1 for f in problem.fanout.values())
    for method in ("gloria", "gloria-safe", "noprune", "greedy", "exhaustive", "cpsat", "milp"):
        sol = solve(inst, method, params={"fork_accounting": "once"})
        assert sol.objective == inst.expected["optimum"] == 307


# --- (5) unknown values ---------------------------------------------------------------------------


def test_unknown_fork_accounting_is_a_user_error(capsys):
    inst = load("gloria-fig7")
    with pytest.raises(CepoptError, match=r"params\.fork_accounting: must be one of edge, once, got 'twice'"):
        build(inst, fork_accounting="twice")
    with pytest.raises(CepoptError, match=r"params\.fork_accounting: must be one of edge, once"):
        build(inst.replace(params={"fork_accounting": "per-edge"}))
    assert build(inst.replace(params={"fork_accounting": "once"})).fork_accounting == "once"
    with pytest.raises(CepoptError, match=r"params\.fork_accounting"):
        solve(inst, "greedy", params={"fork_accounting": "twice"})
    code = main(["solve", "gloria-fig7", "-m", "greedy", "--param", "fork_accounting=twice"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == ["cepopt: error: params.fork_accounting: must be one of edge, once, "
                                        "got 'twice'"]
