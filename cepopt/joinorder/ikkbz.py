"""IKKBZ: the exact cross-product-free order of an acyclic query graph in polynomial time.

Ibaraki & Kameda (TODS 1984), Krishnamurthy, Boral & Zaniolo (VLDB 1986); the paper's Theorem 5
(spec §2.10): on a tree query, rooted at the first event R of an order that respects the rooted
precedence (every event after its parent, which is what ``cross_products=avoid`` asks of an order on a
tree), ``PM(prefix k) = ∏_{i ≤ k} g_{p_i}`` with ``g_R = w_R`` and ``g_i = w_i sel_{i,parent(i)}``, so
``Cost_ord = C(sequence)`` with ``C(s1 s2) = C(s1) + T(s1) C(s2)``, ``T(s) = ∏ g``: the ASI property,
rank ``(T(s) - 1) / C(s)``. For each root, the KBZ procedure merges the children's chains by ascending
rank and folds a parent into its first child module while the parent's rank is larger (normalisation),
which yields the optimal precedence-respecting sequence; the best root wins. O(n² log n) per root.

Everything in log space: ranks are compared as (sign, ln |rank|) keys, so cardinalities of 10^500 stay
exact. Under ``tree_ld`` (``--param cost=tree`` on an order) the left-deep tree costs
``Σ_i w_i - w_R + Cost_ord``: for a fixed root the same sequence is optimal, and the roots are compared
by the tree cost. Plain throughput cost only (the product form needs it).
"""

from __future__ import annotations

import heapq
import math
import time

from cepopt.joinorder.cost import log_order_objective
from cepopt.joinorder.graph import adjacency, components, members
from cepopt.joinorder.problem import Conjunct

__all__ = ["applies", "ikkbz", "is_tree"]


def is_tree(adj: list[int]) -> bool:
    """Is the query graph connected and acyclic?"""
    edges = sum(bin(m).count("1") for m in adj) // 2
    return len(components(adj)) == 1 and edges == len(adj) - 1


def applies(conj: Conjunct, tree_ld: bool) -> str | None:
    """Why IKKBZ cannot run on ``conj`` (None: it can)."""
    if conj.has_latency or conj.next_match or not conj.pairwise:
        return "plain throughput cost only (no latency, next-match or seq_temporal 'exact')"
    if tree_ld and not conj.leaf_filter:
        return "leaf_filter=false prices a tree's leaves unlike its internal nodes"
    if not is_tree(adjacency(conj.b)):
        return "the query graph is not a tree (connected and acyclic)"
    return None


class _Module:
    """A run of events that stays contiguous in the optimal sequence: ln T, ln C and the events."""

    __slots__ = ("events", "key", "log_c", "log_t")

    def __init__(self, log_t: float, log_c: float, events: list[int]):
        self.log_t, self.log_c, self.events = log_t, log_c, events
        self.key = _rank_key(log_t, log_c)

    def then(self, other: _Module) -> _Module:
        """This module followed by ``other``: T = T1 T2, C = C1 + T1 C2."""
        c = _logaddexp(self.log_c, self.log_t + other.log_c)
        return _Module(self.log_t + other.log_t, c, self.events + other.events)


def _logaddexp(x: float, y: float) -> float:
    hi, lo = (x, y) if x >= y else (y, x)
    return hi + math.log1p(math.exp(lo - hi))


def _rank_key(log_t: float, log_c: float) -> tuple[int, float]:
    """A key that sorts like rank = (T - 1) / C, from the logs."""
    if log_t > 0:
        log_num = log_t + math.log1p(-math.exp(-log_t)) if log_t > 1 else math.log(math.expm1(log_t))
        return 1, log_num - log_c
    if log_t < 0:
        return -1, -(math.log(-math.expm1(log_t)) - log_c)
    return 0, 0.0


def _sequence(root: int, adj: list[int], edge_g) -> list[int]:
    """The optimal precedence-respecting sequence rooted at ``root`` (KBZ)."""
    parent = {root: -1}
    children: dict[int, list[int]] = {root: []}
    visit = [root]
    for v in visit:  # breadth first: parents before children
        for u in members(adj[v]):
            if u not in parent:
                parent[u] = v
                children[v].append(u)
                children[u] = []
                visit.append(u)
    chains: dict[int, list[_Module]] = {}
    for v in reversed(visit):  # children before parents
        merged = list(heapq.merge(*(chains.pop(u) for u in children[v]), key=lambda mod: mod.key))
        if v == root:
            return [root] + [e for mod in merged for e in mod.events]
        g = edge_g(v, parent[v])
        head = _Module(g, g, [v])
        while merged and head.key > merged[0].key:
            head = head.then(merged.pop(0))
        chains[v] = [head] + merged
    raise AssertionError("the root closes the loop")


def ikkbz(conj: Conjunct, *, tree_ld: bool = False, deadline: float | None = None) -> tuple[list[int], float, bool]:
    """The best cross-product-free order of a tree query: (order, ln cost, complete) (:func:`applies`
    first). Past ``deadline`` (after one root at least) the best order of the roots tried so far, with
    ``complete`` False."""
    adj = adjacency(conj.b)
    a = conj.lc + (conj.lf if conj.leaf_filter or not tree_ld else 0.0)

    def edge_g(v: int, p: int) -> float:
        return float(a[v] + conj.b[v, p])

    best: tuple[float, list[int]] | None = None
    for root in range(conj.n):
        if best is not None and deadline is not None and time.perf_counter() > deadline:
            return best[1], best[0], False
        order = _sequence(root, adj, edge_g)
        value = log_order_objective(conj, order, tree_ld)
        if best is None or value < best[0]:
            best = (value, order)
    assert best is not None
    return best[1], best[0], True
