"""The join-order cost model in plain arithmetic (ints, floats or Fractions): a second, independent
copy of Cost_ord, Cost_tree, Cost_LDJ, Cost_BJ, latency and next-match (§4, §6) for exact checks of the
spec's worked examples against :mod:`cepopt.joinorder.cost`. Trees are nested pairs of indices.

>>> from fractions import Fraction as F
>>> r, sel = [10, 20, 5], [[1, F(1, 10), 1], [F(1, 10), 1, F(1, 2)], [1, F(1, 2), 1]]
>>> cost_ord(1, r, sel, [0, 1, 2]), cost_tree(1, r, sel, ((0, 1), 2))
(Fraction(80, 1), Fraction(105, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction


def _pm(w, r, sel, members, filters=True):
    v = 1
    for i in members:
        v *= w * r[i] * (sel[i][i] if filters else 1)
    for x, i in enumerate(members):
        for j in members[x + 1:]:
            v *= sel[i][j]
    return v


def cost_ord(w, r, sel, order):
    """Cost_ord(O) = Σ_k W^k ∏ r ∏_{i<=j<=k} sel (§4.1)."""
    order = list(order)
    return sum(_pm(w, r, sel, order[:k]) for k in range(1, len(order) + 1))


def _leafs(t):
    return [t] if isinstance(t, int) else _leafs(t[0]) + _leafs(t[1])


def cost_tree(w, r, sel, t, leaf_filter=True):
    """Cost_tree(T) = Σ_N PM(N), PM(leaf) = W r_i sel_ii, PM(in) = PM(l) PM(r) SEL_LR (§4.2)."""
    if isinstance(t, int):
        return w * r[t] * (sel[t][t] if leaf_filter else 1)
    return cost_tree(w, r, sel, t[0], leaf_filter) + cost_tree(w, r, sel, t[1], leaf_filter) + _pm(
        w, r, sel, _leafs(t), leaf_filter)


def cost_ldj(card, f, order):
    """Cost_LDJ(L) = C_1 + Σ_k C(P_{k-1}, R_{i_k}) (§4.1)."""
    order = list(order)
    size = card[order[0]] * f[order[0]][order[0]]
    total = size
    for k in range(1, len(order)):
        new = order[k]
        fs = f[new][new]
        for j in range(k):
            fs *= f[order[j]][new]
        size = size * card[new] * fs
        total += size
    return total


def cost_bj(card, f, t, leaf_filter=True):
    """Cost_BJ(T) = Σ_N C(N) (§4.2)."""
    total = 0

    def walk(node):
        nonlocal total
        if isinstance(node, int):
            c = card[node] * (f[node][node] if leaf_filter else 1)
            total += c
            return [node], c
        lm, lc = walk(node[0])
        rm, rc = walk(node[1])
        c = lc * rc
        for i in lm:
            for j in rm:
                c *= f[i][j]
        total += c
        return lm + rm, c

    walk(t)
    return total


def lat_ord(w, r, order, last):
    """Cost_ord^lat(O) = Σ_{T_i ∈ Succ_O(last)} W r_i (§6.1)."""
    order = list(order)
    return sum(w * r[i] for i in order[order.index(last) + 1:])


def lat_tree(w, r, sel, t, last, leaf_filter=True):
    """Cost_tree^lat(T) = Σ_{N ∈ Anc_T(last)} PM(sibling(N)), leaf included [R-LAT]."""
    def pm(node):
        if isinstance(node, int):
            return w * r[node] * (sel[node][node] if leaf_filter else 1)
        return _pm(w, r, sel, _leafs(node), leaf_filter)

    def walk(node):
        if isinstance(node, int):
            return 0
        left, right = node
        if last in _leafs(left):
            return pm(right) + walk(left)
        if last in _leafs(right):
            return pm(left) + walk(right)
        return 0

    return walk(t)


def _m(w, r, sel, members):
    v = w * min(r[i] for i in members)
    for x, i in enumerate(members):
        for j in members[x:]:
            v *= sel[i][j]
    return v


def next_ord(w, r, sel, order, paper_literal=False):
    """Cost_ord^next(O) = Σ_k m[k] (× W when ``paper_literal``), §6.2 [R-NEXT]."""
    order = list(order)
    total = sum(_m(w, r, sel, order[:k]) for k in range(1, len(order) + 1))
    return total * w if paper_literal else total


def next_tree(w, r, sel, t):
    """Cost_tree^next(T) = Σ_N W min r ∏_{i<=j in N} sel (§6.2)."""
    if isinstance(t, int):
        return _m(w, r, sel, [t])
    return next_tree(w, r, sel, t[0]) + next_tree(w, r, sel, t[1]) + _m(w, r, sel, _leafs(t))


def from_jqpg(cards: Sequence[float], f: Sequence[Sequence[float]]) -> tuple[float, list[float]]:
    """The CEP side of a JQPG instance (spec §3.2): ``W = max |R_i|``, ``r_i = |R_i| / W``; sel = f."""
    cards = list(cards)
    if not cards or min(cards) <= 0:
        raise ValueError("cardinalities must be > 0")
    w = max(cards)
    if all(isinstance(c, int | Fraction) for c in cards):
        return w, [Fraction(c) / w for c in cards]  # exact
    return w, [c / w for c in cards]
