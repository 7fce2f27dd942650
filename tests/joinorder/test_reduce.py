"""Reductions (§5): DNF (E8), Kleene rewrite in log space (E4), negation placement (E7), SEQ order
predicates, statistics lookup."""

import math

import pytest

from cepopt.errors import CepoptError
from cepopt.joinorder.cost import log_cost
from cepopt.joinorder.methods import FAMILY
from cepopt.joinorder.plans import Order, Tree
from cepopt.joinorder.problem import build_query
from cepopt.joinorder.reduce import conjuncts, dnf
from cepopt.model import Statistics
from cepopt.registry import solve
from cepopt.syntax import format_pattern, parse_pattern, parse_query

RATES = {t: 1.0 for t in "ABCDEFG"}


def test_e8_dnf():
    out = [format_pattern(c) for c in dnf(parse_pattern("AND(A, B, OR(C, D))"))]
    assert out == ["AND(A, B, C)", "AND(A, B, D)"]
    out = [format_pattern(c) for c in dnf(parse_pattern("SEQ(A, OR(B, C), D)"))]
    assert out == ["SEQ(A, B, D)", "SEQ(A, C, D)"]
    with pytest.raises(CepoptError):
        dnf(parse_pattern("SEQ(A, KL(SEQ(B, C)))"))


def test_e8_disjunction_cost_is_the_sum():
    q = parse_query("PATTERN AND(A a, B b, OR(C c, D d)) WITHIN 1")
    stats = Statistics(rates={"A": 2, "B": 3, "C": 4, "D": 5})
    p = build_query(q, stats)
    assert len(p.conjuncts) == 2
    plan = FAMILY.baseline_plan(p)
    # (a,b,c): 2 + 6 + 24 ; (a,b,d): 2 + 6 + 30
    assert math.isclose(math.exp(log_cost(p, plan)), 32 + 38)


def test_e7_negation_placement():
    q = parse_query("PATTERN SEQ(A a, NOT(B b), C c, D d) WITHIN 10")
    p = build_query(q, Statistics(rates=RATES), seq_temporal="none")
    conj = p.single
    assert conj.names == ("a", "c", "d")
    from cepopt.joinorder.negation import order_plan, tree_plan

    idx = {"a": 0, "c": 1, "d": 2}
    assert str(order_plan(conj, [idx[x] for x in "dca"])) == "(d,c,a,NOT b)"
    assert str(order_plan(conj, [idx[x] for x in "cad"])) == "(c,a,NOT b,d)"
    assert str(order_plan(conj, [idx[x] for x in "adc"])) == "(a,d,c,NOT b)"
    assert str(tree_plan(conj, ((0, 1), 2))) == "(NSEQ((a,c),NOT b),d)"
    assert str(tree_plan(conj, ((0, 2), 1))) == "NSEQ(((a,d),c),NOT b)"
    # The check adds no cost, and a check placed too early is rejected.
    base = math.exp(log_cost(p, Order(("c", "a", "d"), (("b", 2),))))
    assert math.isclose(base, 10 + 100 + 1000)
    with pytest.raises(CepoptError):
        log_cost(p, Order(("c", "a", "d"), (("b", 1),)))
    with pytest.raises(CepoptError):
        log_cost(p, Order(("c", "a", "d")))
    assert math.isclose(math.exp(log_cost(p, Tree(Tree("a", "c", ("b",)), "d"))), 30 + 100 + 1000)


def test_negation_at_sequence_end_depends_on_everything():
    cs = conjuncts(parse_pattern("SEQ(A a, B b, NOT(C c))"))
    assert cs[0].negated[0].dep == frozenset({"a", "b"})
    q = parse_query("PATTERN AND(A a, B b, D d, NOT(C c)) WHERE c.x = b.x WITHIN 1")
    p = build_query(q, Statistics(rates=RATES))
    assert p.single.negations == (("c", 0b010),)  # dep = the events sharing a condition
    sol = solve_plan(q, "dp-b")
    assert "NOT c" in str(sol.plan)


def solve_plan(q, method):
    from cepopt.instance import Instance
    from cepopt.model import Workload

    inst = Instance("joinorder", Workload((q,)), Statistics(rates=RATES))
    return solve(inst, method)


def test_kleene_rewrite_in_log_space():
    q = parse_query("PATTERN AND(A a, KL(B b), C c) WITHIN 1200")
    p = build_query(q, Statistics(rates={"A": 1, "B": 45, "C": 2}))
    conj = p.single
    assert conj.kleene == (False, True, False)
    assert math.isclose(conj.lc[1], 45 * 1200 * math.log(2))  # 2^54000: far beyond a double
    sol = solve_plan(q, "dp-ld")
    assert math.isfinite(sol.objective) and sol.plan.events[-1] == "b"
    ne = build_query(parse_query("PATTERN AND(A a, KL(B b)) WITHIN 1"), Statistics(rates={"A": 1, "B": 1}),
                     kleene_nonempty=True)
    assert math.isclose(math.exp(ne.single.lc[1]), 1.0)  # 2^1 - 1


def test_sequence_order_predicates():
    q = parse_query("PATTERN SEQ(A a, B b, NOT(C c), D d) WITHIN 1")
    stats = Statistics(rates=RATES)
    adj = build_query(q, stats).single
    assert math.isclose(math.exp(adj.b[0, 1]), 0.5) and math.isclose(math.exp(adj.b[1, 2]), 0.5)
    assert adj.b[0, 2] == 0.0
    allp = build_query(q, stats, seq_temporal="all_pairs", seq_selectivity=0.25).single
    assert math.isclose(math.exp(allp.b[0, 2]), 0.25)
    none = build_query(q, stats, seq_temporal="none").single
    assert (none.b == 0).all()


def test_selectivities_from_statistics_and_annotations():
    q = parse_query("PATTERN AND(A a, B b, C c) WHERE a.x < b.x SEL 0.2 AND b.y = c.y AND a.z > 3 SEL 0.5 "
                    "WITHIN 1")
    p = build_query(q, Statistics(rates=RATES, selectivities={("b", "c"): 0.1}))
    conj = p.single
    assert math.isclose(math.exp(conj.b[0, 1]), 0.2)  # the condition's own selectivity
    assert math.isclose(math.exp(conj.b[1, 2]), 0.1)  # the statistics
    assert math.isclose(math.exp(conj.lf[0]), 0.5)  # a filter
    p2 = build_query(q, Statistics(rates=RATES, selectivities={("a", "b"): 0.3}))
    assert math.isclose(math.exp(p2.single.b[0, 1]), 0.3)  # statistics win


def test_user_errors():
    q = parse_query("PATTERN AND(A a, B b) WITHIN 1")
    with pytest.raises(CepoptError, match="params.strategy"):
        build_query(q, Statistics(rates=RATES), strategy="bogus")
    with pytest.raises(CepoptError, match="params.nope"):
        build_query(q, Statistics(rates=RATES), nope=1)
    with pytest.raises(CepoptError, match="rate"):
        build_query(q, Statistics(rates={"A": 1}))
    with pytest.raises(CepoptError, match="rate"):
        build_query(q, Statistics(rates={"A": 1, "B": 0}))
    with pytest.raises(CepoptError, match="params.last"):
        build_query(q, Statistics(rates=RATES), alpha=1, last="zz")
    with pytest.raises(CepoptError, match="params.last"):  # unused with alpha = 0, still checked
        build_query(q, Statistics(rates=RATES), last="zz")
    with pytest.raises(CepoptError, match="params.cost"):
        build_query(q, Statistics(rates=RATES), cost="ldj", strategy="next")


def test_kleene_poisson_prices_expected_subsets():
    """kleene_poisson: base e, so W r' = E[2^N] = e^{rW} for Poisson counts (minus the empty set with
    kleene_nonempty), checked against the Poisson expectation summed directly."""
    q = parse_query("PATTERN AND(A a, KL(B b)) WITHIN 2")
    stats = Statistics(rates={"A": 1, "B": 0.7})
    lam = 0.7 * 2
    expected = sum(2 ** n * math.exp(-lam) * lam ** n / math.factorial(n) for n in range(60))
    both = build_query(q, stats, kleene_nonempty=True, kleene_poisson=True).single
    assert math.isclose(math.exp(both.lc[1]), expected - 1, rel_tol=1e-12)
    assert math.isclose(math.exp(build_query(q, stats, kleene_poisson=True).single.lc[1]), expected, rel_tol=1e-12)
    assert math.isclose(math.exp(build_query(q, stats).single.lc[1]), 2 ** lam)


def test_a_type_pair_selectivity_must_name_one_event_pair():
    q = parse_query("PATTERN SEQ(A a1, B b, A a2) WITHIN 5")
    with pytest.raises(CepoptError, match=r"selectivities.A,B: type A has several variables \(a1, a2\)"):
        build_query(q, Statistics(rates=RATES, selectivities={"A,B": 0.3}))
    by_vars = build_query(q, Statistics(rates=RATES, selectivities={"a1,b": 0.3})).single
    plain = build_query(q, Statistics(rates=RATES)).single
    assert by_vars.b[0, 1] - plain.b[0, 1] == pytest.approx(math.log(0.3))
