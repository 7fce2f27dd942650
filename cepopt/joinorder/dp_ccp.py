"""DPccp: the exact cross-product-free bushy tree by csg-cmp-pair enumeration (``cross_products=avoid``).

Moerkotte & Neumann, *Analysis of two existing and one new dynamic programming algorithm for the
generation of optimal bushy join trees without cross products* (VLDB 2006). Under ``avoid`` every node
of a tree is a connected set whose two children are connected, disjoint and joined by an edge: a
*csg-cmp pair*. DP-B (spec §4.6) restricted to those pairs,

    best(S) = PM(S) + min { best(S1) + best(S2) : (S1, S2) a csg-cmp pair with S1 ∪ S2 = S },

does work proportional to the number of pairs instead of 3^n: (n³ - n)/6 on a chain, about n³/2 on a
cycle, but (n - 1) 2^(n-2) on a star and (3^n - 2^(n+1) + 1)/2 on a clique. The pairs come from the
paper's EnumerateCsg / EnumerateCmp (each unordered pair once) and are processed by increasing size of
their union, so both halves are final when a pair is used. Past ``max_pairs`` the search stops.

Star graphs: a connected set without the centre is a single event, so every cross-product-free tree
is left-deep above a two-event join with the centre: :func:`star_centre` detects them and the method
solves them exactly as orders (:mod:`cepopt.joinorder.ikkbz` under the tree cost).

Tree cost (Cost_tree, any set function through :func:`cepopt.joinorder.cost.log_node`); no latency
term. Sets are Python ints, so n is not bounded by a machine word.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from cepopt.joinorder.cost import leaf_log, log_node
from cepopt.joinorder.graph import adjacency, members, neighbours
from cepopt.joinorder.problem import Conjunct

__all__ = ["MAX_PAIRS", "PairLimit", "ccp_pairs", "dp_ccp", "star_centre"]

#: default limit on the csg-cmp pairs enumerated
MAX_PAIRS = 5_000_000


class PairLimit(Exception):
    """More csg-cmp pairs than the limit."""



def _submasks(mask: int) -> Iterator[int]:
    """The non-empty subsets of ``mask``."""
    sub = mask
    while sub:
        yield sub
        sub = (sub - 1) & mask


def _csg_rec(adj: list[int], s: int, x: int) -> Iterator[int]:
    """EnumerateCsgRec: the connected supersets of ``s`` grown through neighbours outside ``x``."""
    nb = neighbours(adj, s) & ~x
    if not nb:
        return
    subs = list(_submasks(nb))
    for sub in subs:
        yield s | sub
    for sub in subs:
        yield from _csg_rec(adj, s | sub, x | nb)


def _csgs(adj: list[int]) -> Iterator[int]:
    """EnumerateCsg: every connected set once."""
    n = len(adj)
    for i in range(n - 1, -1, -1):
        yield 1 << i
        yield from _csg_rec(adj, 1 << i, (1 << (i + 1)) - 1)


def _cmps(adj: list[int], s1: int) -> Iterator[int]:
    """EnumerateCmp: the connected complements of ``s1`` (adjacent, disjoint, larger smallest event)."""
    low = (s1 & -s1).bit_length() - 1
    x = ((1 << (low + 1)) - 1) | s1
    nb = neighbours(adj, s1) & ~x
    for i in sorted(members(nb), reverse=True):
        yield 1 << i
        yield from _csg_rec(adj, 1 << i, x | (nb & ((1 << (i + 1)) - 1)))


def ccp_pairs(adj: list[int], max_pairs: int = MAX_PAIRS, deadline: float | None = None) -> list[tuple[int, int]]:
    """Every csg-cmp pair (S1, S2) once; :class:`PairLimit` past ``max_pairs``."""
    from cepopt.joinorder.dp import DpTimeout

    out: list[tuple[int, int]] = []
    for s1 in _csgs(adj):
        for s2 in _cmps(adj, s1):
            out.append((s1, s2))
            if len(out) & 4095 == 0:  # one csg can have 2^(n-2) complements: look inside the loop
                if len(out) > max_pairs:
                    raise PairLimit(len(out))
                if deadline is not None and time.perf_counter() > deadline:
                    raise DpTimeout
    if len(out) > max_pairs:
        raise PairLimit(len(out))
    return out


def star_centre(adj: list[int]) -> int | None:
    """The centre of a star graph (one event adjacent to all others, no other edge; n >= 4), else None."""
    n = len(adj)
    if n < 4:
        return None
    full = (1 << n) - 1
    for c in range(n):
        if adj[c] == full ^ (1 << c) and all(adj[i] == 1 << c for i in range(n) if i != c):
            return c
    return None


def dp_ccp(conj: Conjunct, *, deadline: float | None = None, max_pairs: int = MAX_PAIRS):
    """The best cross-product-free bushy tree: (tree as nested index pairs, ln Cost_tree, stats).
    Raises :class:`PairLimit` past ``max_pairs`` and :class:`cepopt.joinorder.dp.DpTimeout` past
    ``deadline``."""
    from cepopt.joinorder.dp import DpTimeout

    if conj.has_latency:
        raise ValueError("dp_ccp: no latency term")
    n = conj.n
    if n == 1:
        return 0, leaf_log(conj, 0), {"ccp_pairs": 0}
    pairs = ccp_pairs(adjacency(conj.b), max_pairs, deadline)
    pairs.sort(key=lambda p: (p[0] | p[1]).bit_count())
    best: dict[int, float] = {1 << i: leaf_log(conj, i) for i in range(n)}
    children: dict[int, float] = {}  # ln of the cheapest pair of subtrees of each set so far
    split: dict[int, tuple[int, int]] = {}
    pending: list[int] = []
    size = 0

    def settle() -> None:  # the sets of one size are final once every pair of that size is seen
        for t in pending:
            best[t] = float(np.logaddexp(log_node(conj, members(t), tree=True), children[t]))
        pending.clear()

    for k, (s1, s2) in enumerate(pairs):
        if deadline is not None and k % 4096 == 0 and time.perf_counter() > deadline:
            raise DpTimeout
        s = s1 | s2
        if s.bit_count() != size:
            settle()
            size = s.bit_count()
        v = float(np.logaddexp(best[s1], best[s2]))
        old = children.get(s)
        if old is None:
            pending.append(s)
        if old is None or v < old:
            children[s] = v
            split[s] = (s1, s2)
    settle()

    def tree(mask: int):
        if mask & (mask - 1) == 0:
            return mask.bit_length() - 1
        left, right = split[mask]
        a, b = tree(left), tree(right)
        return (a, b) if _low(left) < _low(right) else (b, a)

    full = (1 << n) - 1
    return tree(full), best[full], {"ccp_pairs": len(pairs), "connected_sets": len(children) + n}


def _low(mask: int) -> int:
    return (mask & -mask).bit_length() - 1
