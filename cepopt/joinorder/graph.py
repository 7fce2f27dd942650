"""The query graph of a conjunct and the cross-product rule (``--param cross_products=allowed|avoid``).

The query graph has an edge {i, j} where the pair carries a predicate of selectivity below 1
(``b[i, j] < 0``: every condition on the pair, the pairwise temporal predicates of a SEQ included;
the non-pairwise [R-SEQ-EXACT] order term adds no edge). Joining two sets with no edge between them is a
cross product. CEP evaluation allows them (every method of the paper enumerates all subsets, [R-CROSS]);
database optimizers usually avoid them. Under ``avoid`` a plan is valid when

- order: every prefix induces a connected subgraph (each event, after the first, has a neighbour
  among the events before it);
- tree: every node's leaf set induces a connected subgraph (so its two children share an edge).

Both are the textbook cross-product-free plan spaces (Moerkotte & Neumann, VLDB 2006). They are empty
when the graph is disconnected: the problem builder refuses ``avoid`` then.

Sets are Python ints (bitmasks), so any n works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cepopt.errors import CepoptError

__all__ = ["CROSS_PRODUCTS", "adjacency", "check_connected", "components", "connected", "cross_product_of",
           "members", "names_of", "neighbours"]

CROSS_PRODUCTS = ("allowed", "avoid")


def adjacency(b: np.ndarray) -> list[int]:
    """Neighbour bitmask of every event: j is a neighbour of i when ``b[i, j] < 0``."""
    n = len(b)
    out = []
    for i in range(n):
        mask = 0
        for j in np.flatnonzero(np.asarray(b[i]) < 0).tolist():
            if j != i:
                mask |= 1 << j
        out.append(mask)
    return out


def members(mask: int) -> list[int]:
    """The events of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def neighbours(adj: Sequence[int], mask: int) -> int:
    """The events outside ``mask`` adjacent to one of it."""
    out = 0
    m = mask
    while m:
        low = m & -m
        out |= adj[low.bit_length() - 1]
        m ^= low
    return out & ~mask


def _reach(adj: Sequence[int], start: int, within: int) -> int:
    """The events of ``within`` reachable from event ``start`` inside ``within``."""
    seen = 1 << start
    frontier = seen
    while frontier:
        frontier = neighbours(adj, seen) & within & ~seen
        seen |= frontier
    return seen


def connected(adj: Sequence[int], mask: int) -> bool:
    """Does ``mask`` (non-empty) induce a connected subgraph?"""
    if mask == 0:
        return False
    return _reach(adj, (mask & -mask).bit_length() - 1, mask) == mask


def components(adj: Sequence[int]) -> list[int]:
    """The connected components of the graph, as bitmasks in order of their smallest event."""
    left = (1 << len(adj)) - 1
    out = []
    while left:
        comp = _reach(adj, (left & -left).bit_length() - 1, left)
        out.append(comp)
        left &= ~comp
    return out


def cross_product_of(adj: Sequence[int], kind: str, plan: Any) -> tuple[int, int] | None:
    """The first join of ``plan`` (``kind`` "order": a list of indices; "tree": nested index pairs) whose
    two inputs share no edge, as (left set, right set); None when the plan has no cross product."""
    if kind == "order":
        seen = 0
        for k, x in enumerate(plan):
            if k and not adj[x] & seen:
                return seen, 1 << x
            seen |= 1 << x
        return None
    found: list[tuple[int, int]] = []

    def walk(t: Any) -> int:
        if isinstance(t, int):
            return 1 << t
        left, right = walk(t[0]), walk(t[1])
        if not found and not neighbours(adj, left) & right:
            found.append((left, right))
        return left | right

    walk(plan)
    return found[0] if found else None


def names_of(names: Sequence[str], mask: int) -> str:
    """The events of ``mask`` as ``{a, b}``."""
    return "{" + ", ".join(v for i, v in enumerate(names) if mask >> i & 1) + "}"


def check_connected(names: Sequence[str], b: np.ndarray) -> None:
    """Refuse ``avoid`` on a disconnected query graph: no plan joins its components without a cross
    product."""
    comps = components(adjacency(b))
    if len(comps) > 1:
        parts = ", ".join(names_of(names, c) for c in comps)
        raise CepoptError(f"params.cross_products: 'avoid' needs a connected query graph (pairs with a "
                          f"predicate of selectivity < 1); its components are {parts}: every plan joins them "
                          "by a cross product (use cross_products=allowed)")
