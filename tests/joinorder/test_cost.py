"""The cost model (§4, §6): the worked examples E1, E5, E10 and the identities of spec §3.3."""

import itertools
import math
from fractions import Fraction as F

import numpy as np
from hypothesis import given, settings

from cepopt.joinorder import cost as C
from cepopt.joinorder.bruteforce import tree_to_indices
from cepopt.joinorder.plans import all_trees

from . import plain_cost as P
from .conftest import close, cost_instances, problem_of

E1 = (1, [10, 20, 5], [[1, F(1, 10), 1], [F(1, 10), 1, F(1, 2)], [1, F(1, 2), 1]])
NAMES = "abc"


def _order(text):
    return [NAMES.index(x) for x in text.split(",")]


def test_e1_order_costs_latency_and_next_exact():
    w, r, sel = E1
    table = {  # order: (Cost_ord, Cost^lat last=C, Σ m[k])
        "a,b,c": (80, 0, F(45, 4)), "a,c,b": (110, 20, F(61, 4)), "b,a,c": (90, 0, F(85, 4)),
        "b,c,a": (120, 10, F(91, 4)), "c,a,b": (105, 30, F(41, 4)), "c,b,a": (105, 30, F(31, 4)),
    }
    for text, (c, lat, nxt) in table.items():
        o = _order(text)
        assert P.cost_ord(w, r, sel, o) == c
        assert P.lat_ord(w, r, o, 2) == lat
        assert P.next_ord(w, r, sel, o) == nxt
        assert P.cost_ldj([w * x for x in r], sel, o) == c
    # The paper-literal next-match factor W: W=2, r halved -> same Cost_ord, doubled literal values.
    r2 = [F(5), F(10), F(5, 2)]
    assert P.cost_ord(2, r2, sel, [0, 1, 2]) == 80
    assert P.next_ord(2, r2, sel, [2, 1, 0], paper_literal=True) == 2 * F(31, 4)


def test_e1_log_space_matches_exact_with_alpha():
    w, r, sel = E1
    half = problem_of(w, r, sel, alpha=0.5, last=2).single
    one = problem_of(w, r, sel, alpha=1.0, last=2).single
    nxt = problem_of(w, r, sel, strategy="next").single
    for o in itertools.permutations(range(3)):
        c, lat = P.cost_ord(w, r, sel, o), P.lat_ord(w, r, o, 2)
        assert close(math.exp(C.log_cost_ord(half, o)), float(c + F(1, 2) * lat))
        assert close(math.exp(C.log_cost_ord(one, o)), float(c + lat))
        assert close(math.exp(C.log_cost_ord(nxt, o)), float(P.next_ord(w, r, sel, o)))


def test_e1_trees():
    w, r, sel = E1
    for t, (c, lat) in {((0, 1), 2): (105, 20), ((0, 2), 1): (135, 30), (0, (1, 2)): (135, 30)}.items():
        assert P.cost_tree(w, r, sel, t) == c
        assert P.lat_tree(w, r, sel, t, 2) == lat
        assert P.cost_bj([w * x for x in r], sel, t) == c
    # Identity 5: Cost_tree(LD(O)) = Cost_ord(O) + Σ_{i != p1} w_i
    assert P.cost_tree(w, r, sel, ((0, 1), 2)) == 80 + 20 + 5


def test_e5_jqpg_to_cpg():
    cards, f = [100, 10, 1000], [[1, F(1, 100), 1], [F(1, 100), 1, F(1, 1000)], [1, F(1, 1000), 1]]
    w, r = P.from_jqpg(cards, f)
    assert w == 1000 and r == [F(1, 10), F(1, 100), 1]
    assert P.cost_ldj(cards, f, [1, 0, 2]) == 30 == P.cost_ord(w, r, f, [1, 0, 2])
    assert P.cost_bj(cards, f, ((0, 1), 2)) == 1130 == P.cost_tree(w, r, f, ((0, 1), 2))


def test_e10_asi():
    def c(seq):
        total, prod = 0, 1
        for x in seq:
            prod *= x
            total += prod
        return total

    def t(seq):
        return math.prod(seq)

    def rank(seq):
        return F(t(seq) - 1, c(seq))

    assert rank([2]) == F(1, 2) and rank([3]) == F(2, 3)
    assert c([2, 3]) == 8 and c([3, 2]) == 9
    rng = np.random.default_rng(0)
    for _ in range(300):
        a, u, v, b = ([int(x) for x in rng.integers(1, 9, size=int(rng.integers(lo, 3)))]
                      for lo in (0, 1, 1, 0))
        assert (c(a + u + v + b) <= c(a + v + u + b)) == (rank(u) <= rank(v))
        assert c(a + u) == c(a) + t(a) * c(u)


@settings(max_examples=15, deadline=None)
@given(cost_instances(2, 5, exact=True))
def test_identities_exact(inst):
    """Spec §3.3 identities 1, 2, 3 and 5 in exact rational arithmetic."""
    w, r, sel = inst
    n = len(r)
    cards = [w * x for x in r]
    w2, r2 = P.from_jqpg(cards, sel)
    for o in itertools.permutations(range(n)):
        c = P.cost_ord(w, r, sel, o)
        assert c == P.cost_ldj(cards, sel, o) == P.cost_ord(w2, r2, sel, o)  # 1, 3
        ld = o[0]
        for x in o[1:]:
            ld = (ld, x)
        wsum = sum(w * r[i] * sel[i][i] for i in o[1:])
        assert P.cost_tree(w, r, sel, ld) == c + wsum  # 5
    for t in all_trees([str(i) for i in range(n)]):
        idx = tree_to_indices(t)
        c = P.cost_tree(w, r, sel, idx)
        assert c == P.cost_bj(cards, sel, idx) == P.cost_tree(w2, r2, sel, idx)  # 2, 3
        assert P.cost_tree(w, r, sel, idx, leaf_filter=False) == P.cost_bj(cards, sel, idx, leaf_filter=False)


@settings(max_examples=40, deadline=None)
@given(cost_instances(2, 6))
def test_log_space_equals_plain_arithmetic(inst):
    w, r, sel = inst
    n = len(r)
    conj = problem_of(w, r, sel).single
    lcards, lf = C.to_jqpg(conj)
    rng = np.random.default_rng(n)
    for _ in range(5):
        o = [int(x) for x in rng.permutation(n)]
        ref = P.cost_ord(w, r, sel, o)
        assert close(math.exp(C.log_cost_ord(conj, o)), ref)
        assert close(math.exp(C.log_cost_ldj(lcards, lf, o)), ref)
    for t in itertools.islice(all_trees([str(i) for i in range(n)]), 20):
        idx = tree_to_indices(t)
        ref = P.cost_tree(w, r, sel, idx)
        assert close(math.exp(C.log_cost_tree(conj, idx)), ref)
        assert close(math.exp(C.log_cost_bj(lcards, lf, idx)), ref)
    nodes = C.all_node_logs(conj)
    for mask in range(1, 1 << n):
        members = [i for i in range(n) if mask >> i & 1]
        assert close(nodes[mask], C.log_node(conj, members), rel=1e-12) or abs(nodes[mask]) < 1e-9
