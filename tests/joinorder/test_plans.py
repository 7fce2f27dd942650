"""Plans: validation, JSON round trip, plan-space counts (spec E9)."""

import math

import pytest

from cepopt.errors import CepoptError
from cepopt.joinorder.plans import (
    Disjunction,
    Order,
    Tree,
    all_orders,
    all_trees,
    interval_trees,
    left_deep,
    plan_from_json,
    plan_to_json,
)


def test_e9_plan_space_counts():
    catalan = {2: 1, 3: 2, 4: 5, 5: 14, 6: 42, 7: 132}
    double_fact = {2: 1, 3: 3, 4: 15, 5: 105, 6: 945, 7: 10395}
    for n in range(2, 8):
        names = [f"e{i}" for i in range(n)]
        assert sum(1 for _ in interval_trees(names)) == catalan[n]
        if n <= 6:
            trees = list(all_trees(names))
            assert len(trees) == double_fact[n]
            assert len({str(t.canonical()) for t in trees}) == double_fact[n]
        if n <= 6:
            assert sum(1 for _ in all_orders(names)) == math.factorial(n)


def test_validation():
    with pytest.raises(CepoptError):
        Order(("a", "a"))
    with pytest.raises(CepoptError):
        Order(())
    with pytest.raises(CepoptError):
        Order(("a", "b"), negations=(("c", 3),))
    with pytest.raises(CepoptError):
        Order(("a", "b"), negations=(("a", 1),))
    with pytest.raises(CepoptError):
        Tree(Tree("a", "b"), "a")
    with pytest.raises(CepoptError):
        Disjunction((Order(("a",)),))
    with pytest.raises(CepoptError):
        Disjunction((Order(("a",)), Tree("a", "b")))


def test_json_round_trip_and_text():
    plans = [
        Order(("c", "a", "d"), negations=(("b", 2),)),
        Tree(Tree("a", "c", ("b",)), "d"),
        Tree(Tree("a", None, ("b",)), "c"),
        Tree("a"),
        Disjunction((Order(("a", "b")), Order(("a", "c")))),
    ]
    for p in plans:
        assert plan_from_json(plan_to_json(p)) == p
    assert str(plans[0]) == "(c,a,NOT b,d)"
    assert str(plans[1]) == "(NSEQ((a,c),NOT b),d)"
    assert str(left_deep(("a", "b", "c"))) == "((a,b),c)"
    assert left_deep(("a", "b", "c")).is_left_deep()
    assert not Tree(Tree("a", "b"), Tree("c", "d")).is_left_deep()
    with pytest.raises(CepoptError):
        plan_from_json({"kind": "nope"})
