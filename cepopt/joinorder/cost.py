"""The join-order cost model: the single evaluator of every plan (Kolchinsky & Schuster §4, §6).

Two layers:

1. **Log space, on a** :class:`~cepopt.joinorder.problem.Conjunct` (what the library uses). Every
   quantity is a natural log, summed with ``logaddexp``, so ``2^{rW}`` (Kleene, §5.2) never overflows.

   - ``PM(S) = exp(Σ_{i∈S} ln(W r_i sel_ii) + Σ_{i<j∈S} ln sel_ij + ln P(S))``: the expected partial
     matches of the events S in a window (§4.1); it depends only on the set S. ``P(S)`` is the
     [R-SEQ-EXACT] order term (``seq_temporal="exact"``; 1 otherwise, the temporal predicates then
     being pairwise factors of ``sel``): the probability that i.i.d. timestamps of S respect the
     pattern's order, computed by :func:`order_term` alone, which every subset evaluator below
     (:func:`log_node`, :func:`all_node_logs`, :func:`order_logs`, hence the tree walks, the DPs,
     brute force, II, ZSTREAM) and GREEDY's growth go through.
   - Cost_ord(O) = Σ_k PM(first k of O) (§4.1, Eq. of Cost_ord); Cost_tree(T) = Σ over every node N
     of T (leaves and root included) of PM(leaves(N)) (§4.2), leaves ``W r_i sel_ii`` [R-FILT].
   - Cost_LDJ and Cost_BJ (§4.1, §4.2) computed on the JQPG side of the reduction (Theorem 1):
     ``|R_i| = W r_i``, ``f = sel``; they equal Cost_ord and Cost_tree (tested, spec §3.3).
   - Latency (§6.1): Cost_ord^lat(O) = Σ_{i after last in O} W r_i; Cost_tree^lat(T) = Σ over internal
     nodes P containing ``last`` of PM(child of P without ``last``) [R-LAT]. Cost = trpt + α lat.
   - Next-match (§6.2): PM replaced by ``m(S) = W min_{i∈S} r_i ∏ sel`` [R-NEXT].

2. **Plain arithmetic** (``cost_ord``, ``cost_tree``, ``cost_ldj``, ``cost_bj``, ``lat_ord``,
   ``lat_tree``, ``next_ord``, ``next_tree``) over ints, floats or :class:`fractions.Fraction`, for
   exact tests of the spec's worked examples. Trees there are nested pairs of indices.

A disjunction's cost is the sum of its conjuncts' throughput costs plus α times the *max* of their
latencies (§6.1, §5.4). The family objective is ``log_cost = ln(Cost)``.

>>> from fractions import Fraction as F
>>> r, sel = [10, 20, 5], [[1, F(1, 10), 1], [F(1, 10), 1, F(1, 2)], [1, F(1, 2), 1]]
>>> cost_ord(1, r, sel, [0, 1, 2]), cost_tree(1, r, sel, ((0, 1), 2))
(Fraction(80, 1), Fraction(105, 1))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from cepopt.errors import CepoptError
from cepopt.joinorder.plans import Disjunction, Order, Tree, left_deep
from cepopt.joinorder.problem import Conjunct, JoinOrderProblem

__all__ = [
    "all_node_logs", "cost_bj", "cost_ldj", "cost_ord", "cost_tree", "lat_ord", "lat_tree", "leaf_log",
    "order_term",
    "log_order_objective", "log_trpt_lat_tree",
    "log_cost", "log_cost_bj", "log_cost_ldj", "log_cost_ord", "log_cost_tree", "log_lat_ord",
    "log_lat_tree", "log_node", "logsumexp", "next_ord", "next_tree", "order_logs", "plan_indices",
    "to_jqpg", "from_jqpg", "combine",
]

NEG_INF = -math.inf
IdxTree = Any  # int | tuple[IdxTree, IdxTree]


def logsumexp(values: Sequence[float] | np.ndarray) -> float:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return NEG_INF
    m = float(v.max())
    if m == NEG_INF:
        return NEG_INF
    return m + math.log(float(np.exp(v - m).sum()))


def combine(log_trpt: float, log_lat: float, alpha: float) -> float:
    """ln(trpt + α lat)."""
    if alpha <= 0 or log_lat == NEG_INF:
        return log_trpt
    return float(np.logaddexp(log_trpt, math.log(alpha) + log_lat))


# ---------------------------------------------------------------------------------------------
# Log space on a Conjunct
# ---------------------------------------------------------------------------------------------

_ORDER_CHUNK = 1 << 16  # masks per vector operation when pricing all 2^n subsets
_POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(x).astype(np.intp)
    v = np.ascontiguousarray(x, dtype=np.int64)
    return _POP8[v.view(np.uint8).reshape(*v.shape, 8)].sum(axis=-1)


def order_term(conj: Conjunct, masks: Sequence[int] | np.ndarray) -> np.ndarray:
    """ln P(S) for each bitmask S: the probability that i.i.d. timestamps of the events of S respect
    the pattern's SEQ order restricted to S ([R-SEQ-EXACT], ``seq_temporal="exact"``; 0 otherwise).

    The order is series-parallel (SEQ = series, AND = parallel; :func:`cepopt.joinorder.reduce.seq_blocks`),
    so ``P(S) = e(order|S) / |S|! = ∏ over SEQ operators of ∏_c |S∩c|! / |S∩∪c|!`` (c its elements):
    1/k! for a chain of k events of S. This is the one implementation of the term.

    >>> from cepopt.joinorder.problem import from_arrays
    >>> c = from_arrays(1, [1] * 4, [[1] * 4] * 4, seq=[[[0], [1, 2], [3]]]).single  # SEQ(a, AND(b, c), d)
    >>> [round(float(np.exp(v)), 6) for v in order_term(c, [0b0111, 0b1111, 0b0110])]  # 1/3, 1/12, 1
    [0.333333, 0.083333, 1.0]
    """
    m = np.asarray(masks, dtype=np.int64)
    out = np.zeros(m.shape)
    if not conj.order_blocks:
        return out
    lnfact = np.array([math.lgamma(k + 1) for k in range(conj.n + 1)])
    for block in conj.order_blocks:
        union = 0
        for child in block:
            union |= child
            if child & (child - 1):  # |S∩c|! is 1 for a single event
                out += lnfact[_popcount(m & child)]
        out -= lnfact[_popcount(m & union)]
    return out


def _mask(members: Sequence[int]) -> int:
    mask = 0
    for i in members:
        mask |= 1 << int(i)
    return mask


def log_node(conj: Conjunct, members: Sequence[int], *, tree: bool = False) -> float:
    """ln PM(S) (ln m(S) under next-match). ``tree`` with ``leaf_filter=False`` drops the filters
    (the paper-literal any-match tree cost, §4.2); next-match keeps them [R-NEXT]."""
    idx = np.asarray(members, dtype=np.intp)
    v = conj.b[np.ix_(idx, idx)].sum() / 2.0
    if conj.order_blocks:
        v += order_term(conj, [_mask(members)])[0]
    if conj.next_match:
        v += conj.lc[idx].min() + conj.lf[idx].sum()
    else:
        v += conj.lc[idx].sum()
        if conj.leaf_filter or not tree:
            v += conj.lf[idx].sum()
    return float(v)


def leaf_log(conj: Conjunct, i: int) -> float:
    """ln PM(leaf i) of a tree: ``W r_i sel_ii`` (``W r_i`` with ``leaf_filter=False``, the paper-literal
    any-match leaf of §4.2). Under next-match a leaf is ``m({i}) = W r_i sel_ii`` whatever the flag:
    §6.2 prices every node, leaves included, by one formula with the filters [R-NEXT], as
    :func:`all_node_logs` and :func:`log_node` do for the internal nodes."""
    return float(conj.lc[i] + (conj.lf[i] if conj.leaf_filter or conj.next_match else 0.0))


def all_node_logs(conj: Conjunct, *, tree: bool = False) -> np.ndarray:
    """ln PM(S) for every subset S (bitmask index), 2^n floats, built block by block (spec §4.5)."""
    n = conj.n
    out = np.zeros(1 << n)
    use_filter = conj.next_match or conj.leaf_filter or not tree
    add = conj.lf if use_filter else np.zeros(n)
    if conj.next_match:
        low = np.full(1 << n, np.inf)
    for h in range(n):
        size = 1 << h
        base = np.arange(size, dtype=np.int64)
        bh = np.zeros(size)
        for j in range(h):
            if conj.b[h, j] != 0.0:
                bh += conj.b[h, j] * ((base >> j) & 1)
        out[size:2 * size] = out[:size] + add[h] + bh
        if conj.next_match:
            low[size:2 * size] = np.minimum(low[:size], conj.lc[h])
        else:
            out[size:2 * size] += conj.lc[h]
    if conj.next_match:
        out[1:] += low[1:]
    if conj.order_blocks:
        for lo in range(0, 1 << n, _ORDER_CHUNK):
            hi = min(lo + _ORDER_CHUNK, 1 << n)
            out[lo:hi] += order_term(conj, np.arange(lo, hi, dtype=np.int64))
    return out


def order_logs(conj: Conjunct, order: Sequence[int]) -> np.ndarray:
    """ln PM(k) (ln m[k]) of each prefix of ``order``."""
    p = np.asarray(order, dtype=np.intp)
    rows = np.tril(conj.b[np.ix_(p, p)], -1).sum(axis=1)
    logs = np.cumsum(conj.lf[p] + rows)
    if conj.order_blocks:
        logs = logs + order_term(conj, np.cumsum(np.left_shift(np.int64(1), p.astype(np.int64))))
    if conj.next_match:
        logs = logs + np.minimum.accumulate(conj.lc[p])
        if conj.paper_literal:
            logs = logs + math.log(conj.window)
    else:
        logs = logs + np.cumsum(conj.lc[p])
    return logs


def log_lat_ord(conj: Conjunct, order: Sequence[int]) -> float:
    """ln Cost_ord^lat: Σ of W r_i over the events after ``last`` in the order (§6.1)."""
    if conj.last is None:
        return NEG_INF
    order = list(order)
    pos = order.index(conj.last)
    return logsumexp(conj.lc[order[pos + 1:]])


def log_cost_ord(conj: Conjunct, order: Sequence[int]) -> float:
    """ln(Cost_ord(O) + α Cost_ord^lat(O))."""
    return combine(logsumexp(order_logs(conj, order)), log_lat_ord(conj, order), conj.alpha)


def _tree_walk(conj: Conjunct, t: IdxTree, terms: list[float], lat: list[float]) -> tuple[list[int], float]:
    if isinstance(t, int | np.integer):
        v = leaf_log(conj, int(t))
        terms.append(v)
        return [int(t)], v
    lm, lv = _tree_walk(conj, t[0], terms, lat)
    rm, rv = _tree_walk(conj, t[1], terms, lat)
    members = lm + rm
    v = log_node(conj, members, tree=True)
    terms.append(v)
    if conj.last is not None:
        if conj.last in lm:
            lat.append(rv)
        elif conj.last in rm:
            lat.append(lv)
    return members, v


def log_trpt_lat_tree(conj: Conjunct, t: IdxTree) -> tuple[float, float]:
    terms: list[float] = []
    lat: list[float] = []
    _tree_walk(conj, t, terms, lat)
    return logsumexp(terms), logsumexp(lat)


def log_cost_tree(conj: Conjunct, t: IdxTree) -> float:
    """ln(Cost_tree(T) + α Cost_tree^lat(T)) for a tree of indices."""
    trpt, lat = log_trpt_lat_tree(conj, t)
    return combine(trpt, lat, conj.alpha)


def log_lat_tree(conj: Conjunct, t: IdxTree) -> float:
    return log_trpt_lat_tree(conj, t)[1]


# ---------------------------------------------------------------------------------------------
# JQPG side (Theorem 1)
# ---------------------------------------------------------------------------------------------


def to_jqpg(conj: Conjunct) -> tuple[np.ndarray, np.ndarray]:
    """(ln |R_i|, ln f) with ``|R_i| = W r_i`` and ``f_ij = sel_ij`` (diagonal: filters), spec §3.1.
    A join query has pairwise selectivities only: a conjunct with the [R-SEQ-EXACT] order term has no
    JQPG side (the problem builder already refuses cost ldj/bj for it)."""
    if not conj.pairwise:
        raise CepoptError("seq_temporal 'exact' is not pairwise: the conjunct has no join-query "
                          "(JQPG) side (Theorems 1-2); use cost auto, ord or tree")
    f = conj.b.copy()
    np.fill_diagonal(f, conj.lf)
    return conj.lc.copy(), f


def from_jqpg(cards: Sequence[float], f: Sequence[Sequence[float]]) -> tuple[float, list[float]]:
    """The CEP side of a JQPG instance (spec §3.2): ``W = max |R_i|``, ``r_i = |R_i| / W``; sel = f."""
    cards = list(cards)
    if not cards or min(cards) <= 0:
        raise CepoptError("cardinalities must be > 0")
    w = max(cards)
    if all(isinstance(c, int | Fraction) for c in cards):
        return w, [Fraction(c) / w for c in cards]  # exact
    return w, [c / w for c in cards]


def log_cost_ldj(log_cards: np.ndarray, log_f: np.ndarray, order: Sequence[int]) -> float:
    """ln Cost_LDJ(L) = ln(C_1 + Σ_k C(P_{k-1}, R_{i_k})) (§4.1), C(S,T) = |S||T| f_{S,T}."""
    order = list(order)
    size = log_cards[order[0]] + log_f[order[0], order[0]]
    terms = [size]
    for k in range(1, len(order)):
        new = order[k]
        f_st = sum(log_f[order[j], new] for j in range(k)) + log_f[new, new]
        size = size + log_cards[new] + f_st
        terms.append(size)
    return logsumexp(terms)


def log_cost_bj(log_cards: np.ndarray, log_f: np.ndarray, t: IdxTree, leaf_filter: bool = True) -> float:
    """ln Cost_BJ(T) = ln Σ_N C(N) (§4.2): leaves ``|R_i| f_ii`` [R-FILT], nodes ``|L||R| f_{L,R}``."""
    terms: list[float] = []

    def walk(node: IdxTree) -> tuple[list[int], float]:
        if isinstance(node, int | np.integer):
            c = log_cards[node] + (log_f[node, node] if leaf_filter else 0.0)
            terms.append(c)
            return [int(node)], c
        lm, lc = walk(node[0])
        rm, rc = walk(node[1])
        c = lc + rc + sum(log_f[i, j] for i in lm for j in rm)
        terms.append(c)
        return lm + rm, c

    walk(t)
    return logsumexp(terms)


# ---------------------------------------------------------------------------------------------
# Plans of names -> indices, validation, the family objective
# ---------------------------------------------------------------------------------------------


def _tree_indices(conj: Conjunct, node: str | Tree) -> IdxTree:
    if isinstance(node, str):
        return conj.index(node)
    kids = [_tree_indices(conj, c) for c in node.children()]
    return kids[0] if node.right is None else (kids[0], kids[1])


def plan_indices(conj: Conjunct, plan: Order | Tree) -> tuple[str, Any]:
    """("order", [indices]) or ("tree", nested index pairs), after checking that the plan covers the
    conjunct's positive events exactly and places every negation check after its dependencies."""
    leaves = plan.leaves()
    if sorted(leaves) != sorted(conj.names):
        raise CepoptError(f"plan {plan} must contain each positive event once: {', '.join(conj.names)}")
    needed = {v for v, _ in conj.negations}
    dep = dict(conj.negations)
    if isinstance(plan, Order):
        got = {v for v, _ in plan.negations}
        if got != needed:
            raise CepoptError(f"plan {plan} must check the negated events {sorted(needed)}, got {sorted(got)}")
        idx = [conj.index(e) for e in plan.events]
        for v, k in plan.negations:
            mask = 0
            for i in idx[:k]:
                mask |= 1 << i
            if dep[v] & ~mask:
                raise CepoptError(f"plan {plan}: the absence of {v!r} is checked before the events it depends on")
        return "order", idx
    got = set(plan.all_negations())
    if got != needed:
        raise CepoptError(f"plan {plan} must check the negated events {sorted(needed)}, got {sorted(got)}")
    for node in plan.nodes():
        if node.negations:
            mask = 0
            for leaf in node.leaves():
                mask |= 1 << conj.index(leaf)
            for v in node.negations:
                if dep[v] & ~mask:
                    raise CepoptError(f"plan {plan}: the absence of {v!r} is checked below the events "
                                      "it depends on")
    return "tree", _tree_indices(conj, plan)


def _branch(problem: JoinOrderProblem, conj: Conjunct, plan: Order | Tree) -> tuple[float, float]:
    """(ln trpt, ln lat) of one conjunct's plan under the problem's cost."""
    kind, idx = plan_indices(conj, plan)
    tree_cost = problem.tree_cost(kind)
    if kind == "order" and tree_cost:
        idx = _tree_indices(conj, left_deep([conj.names[i] for i in idx]))
        kind = "tree"
    if kind == "order":
        if problem.cost == "ldj":
            cards, f = to_jqpg(conj)
            trpt = log_cost_ldj(cards, f, idx)
        else:
            trpt = logsumexp(order_logs(conj, idx))
        return trpt, log_lat_ord(conj, idx)
    trpt, lat = log_trpt_lat_tree(conj, idx)
    if problem.cost == "bj":
        cards, f = to_jqpg(conj)
        trpt = log_cost_bj(cards, f, idx, conj.leaf_filter)
    return trpt, lat


def log_cost(problem: JoinOrderProblem, plan: Order | Tree | Disjunction) -> float:
    """The family objective: ``ln Cost(plan)`` (Σ over conjuncts of the throughput cost, plus α times
    the max latency)."""
    branches = plan.branches if isinstance(plan, Disjunction) else (plan,)
    if len(branches) != len(problem.conjuncts):
        raise CepoptError(f"the pattern has {len(problem.conjuncts)} DNF conjunct(s); the plan has "
                          f"{len(branches)} branch(es)")
    parts = [_branch(problem, c, p) for c, p in zip(problem.conjuncts, branches, strict=True)]
    trpt = logsumexp([t for t, _ in parts])
    lat = max(lat for _, lat in parts)
    return combine(trpt, lat, problem.alpha)


# ---------------------------------------------------------------------------------------------
# Plain arithmetic (exact with Fractions)
# ---------------------------------------------------------------------------------------------


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


def log_order_objective(conj: Conjunct, order: Sequence[int], tree_ld: bool = False) -> float:
    """What order algorithms minimise: ln(Cost_ord + α lat), or with ``tree_ld`` the tree cost of the
    order's left-deep tree (``--param cost=tree`` on an order method)."""
    if tree_ld:
        t: IdxTree = int(order[0])
        for i in order[1:]:
            t = (t, int(i))
        return log_cost_tree(conj, t)
    return log_cost_ord(conj, order)
