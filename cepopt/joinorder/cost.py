"""The join-order cost model: the single evaluator of every plan (Kolchinsky & Schuster §4, §6).

Every quantity is a natural log on a :class:`~cepopt.joinorder.problem.Conjunct`, summed with
``logaddexp``, so ``2^{rW}`` (Kleene, §5.2) never overflows. (A plain-arithmetic copy over Fractions,
for exact checks of the spec's worked examples, lives in the tests: ``tests/joinorder/plain_cost.py``.)

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

A disjunction's cost is the sum of its conjuncts' throughput costs plus α times the *max* of their
latencies (§6.1, §5.4). The family objective is :func:`evaluate` = ``ln(Cost)``; :func:`predict` is
``Cost`` itself, the partial matches the executor counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cepopt.clock import check
from cepopt.errors import CepoptError
from cepopt.joinorder.plans import Disjunction, Order, Tree, left_deep
from cepopt.joinorder.problem import Conjunct, JoinOrderProblem
from cepopt.solution import Objective

__all__ = [
    "OBJECTIVE", "all_node_logs", "combine", "cost_notes", "evaluate", "leaf_log", "left_deep_indices", "log_c_out",
    "log_cost", "log_cost_bj", "log_cost_ldj", "log_cost_ord", "log_cost_tree", "log_lat_ord", "log_lat_tree",
    "log_node", "log_order_objective", "log_order_variable", "log_trpt_lat_tree", "logsumexp", "objective_name",
    "order_logs", "order_term", "plan_indices", "predict", "to_jqpg",
]

NEG_INF = -math.inf

OBJECTIVE = Objective("ln Cost", "natural log of the expected partial matches per window", "min",
                      "partial matches (exp of the objective)")
IdxTree = Any  # int | tuple[IdxTree, IdxTree]


def logsumexp(values: Sequence[float] | np.ndarray) -> float:
    """ln Σ exp(v), -inf for no values.

    >>> round(logsumexp([math.log(80), math.log(25)]), 9) == round(math.log(105), 9)
    True
    """
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


def all_node_logs(conj: Conjunct, *, tree: bool = False, deadline: float | None = None) -> np.ndarray:
    """ln PM(S) for every subset S (bitmask index), 2^n floats, built block by block (spec §4.5); past
    ``deadline`` (a :func:`cepopt.clock.now` value) :class:`~cepopt.clock.TimeLimitReached` (at n = 24
    the table alone takes seconds)."""
    n = conj.n
    out = np.zeros(1 << n)
    use_filter = conj.next_match or conj.leaf_filter or not tree
    add = conj.lf if use_filter else np.zeros(n)
    if conj.next_match:
        low = np.full(1 << n, np.inf)
    for h in range(n):
        check(deadline, "computing the node costs")
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


def log_order_variable(conj: Conjunct, order: Sequence[int]) -> float:
    """ln of the variable part of the order's cost, Σ_{k<n} PM_k + α lat: the cost without the full
    prefix PM(all), which every order pays (compared on the whole cost, a gain in the small early prefixes
    drowns in PM(all)'s rounding: 7e-8 of the variable cost at n = 40, dense, is below 1e-12 of the total)."""
    terms = list(order_logs(conj, order)[:-1])
    if conj.has_latency:
        lat = log_lat_ord(conj, order)
        if lat > -math.inf:
            terms.append(math.log(conj.alpha) + lat)
    return logsumexp(terms)


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


def _refuse_cross_product(conj: Conjunct, kind: str, idx: Any, plan: Order | Tree) -> None:
    """Under ``cross_products=avoid``, a plan outside the cross-product-free space is no plan of the
    problem: every method's plan passes here, so a method that does not search that space refuses."""
    from cepopt.joinorder.graph import adjacency, cross_product_of, names_of

    found = cross_product_of(adjacency(conj.b), kind, idx)
    if found is not None:
        left, right = (names_of(conj.names, m) for m in found)
        raise CepoptError(f"plan {plan} joins {left} and {right} with no predicate between them, a cross "
                          "product, which params.cross_products=avoid forbids (the methods that search "
                          "cross-product-free plans: dp-ccp-ld, ikkbz, dp-ccp, bruteforce)")


def _branch(problem: JoinOrderProblem, conj: Conjunct, plan: Order | Tree) -> tuple[float, float]:
    """(ln trpt, ln lat) of one conjunct's plan under the problem's cost."""
    kind, idx = plan_indices(conj, plan)
    if conj.avoid_cross:
        _refuse_cross_product(conj, kind, idx, plan)
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


def log_order_objective(conj: Conjunct, order: Sequence[int], tree_ld: bool = False) -> float:
    """What order algorithms minimise: ln(Cost_ord + α lat), or with ``tree_ld`` the tree cost of the
    order's left-deep tree (``--param cost=tree`` on an order method)."""
    if tree_ld:
        return log_cost_tree(conj, left_deep_indices(order))
    return log_cost_ord(conj, order)


def left_deep_indices(order: Sequence[int]) -> IdxTree:
    """The left-deep index tree ``((o0, o1), o2), ...`` of an order of event indices."""
    tree: IdxTree = int(order[0])
    for i in order[1:]:
        tree = (tree, int(i))
    return tree


def log_c_out(problem: JoinOrderProblem, plan: Order | Tree | Disjunction) -> float | None:
    """ln C_out: the sum of the plan's join results (its internal nodes, root included, no base relation),
    the database cost of Cluet & Moerkotte; with W = 1 and rates = cardinalities (``cepopt import
    joinorder``) the estimated cardinalities themselves. An order is read as its left-deep tree. None
    for a latency, next-match or multi-conjunct problem (no single join tree), -inf for one event."""
    branches = plan.branches if isinstance(plan, Disjunction) else (plan,)
    if len(branches) != 1 or len(problem.conjuncts) != 1 or problem.alpha > 0 or problem.single.next_match:
        return None
    conj = problem.single
    kind, idx = plan_indices(conj, branches[0])
    if kind == "order":
        idx = left_deep_indices(idx)
    return logsumexp(_internal_logs(conj, idx))


def cost_notes(problem: JoinOrderProblem, plan: Order | Tree | Disjunction) -> list[str]:
    """What ``cepopt solve`` prints beside ln Cost: C_out (:func:`log_c_out`), when defined."""
    value = log_c_out(problem, plan)
    if value is None or value == NEG_INF:
        return []
    shown = f"{math.exp(value):.6g}" if value < 700 else f"e^{value:.6f}"
    return [f"C_out: {shown} (ln C_out {value:.6f}): the sum of the plan's join results, base relations "
            "excluded; with W = 1 and rates = cardinalities, the estimated intermediate cardinalities"]


def _internal_logs(conj: Conjunct, t: IdxTree) -> list[float]:
    out: list[float] = []

    def walk(node: IdxTree) -> list[int]:
        if isinstance(node, int):
            return [node]
        members = walk(node[0]) + walk(node[1])
        out.append(log_node(conj, members, tree=True))
        return members

    walk(t)
    return out


def evaluate(problem: JoinOrderProblem, plan: Order | Tree | Disjunction) -> float:
    """The family objective: :func:`log_cost`, ``ln Cost(plan)``."""
    return log_cost(problem, plan)


def predict(problem: JoinOrderProblem, plan: Order | Tree | Disjunction) -> float:
    """What the executor should measure: ``Cost(plan)``, the partial matches of the nodes the plan's
    cost counts (``inf`` when it exceeds a float)."""
    try:
        return math.exp(log_cost(problem, plan))
    except OverflowError:
        return math.inf


def objective_name(problem: JoinOrderProblem, plan: Order | Tree | Disjunction) -> str:
    """``ln Cost_ord`` or ``ln Cost_tree``: the cost function that scores ``plan`` under the problem's
    ``cost`` parameter (an order scored by its left-deep tree under ``cost=tree``). Order and tree costs
    are different functions: their values are not comparable."""
    branches = plan.branches if isinstance(plan, Disjunction) else (plan,)
    kinds = {"tree" if problem.tree_cost("order" if isinstance(b, Order) else "tree") else "ord" for b in branches}
    return "ln Cost_" + "+".join(sorted(kinds))
