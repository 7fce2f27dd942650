"""DP-LD over connected subsets: the exact cross-product-free order (``cross_products=avoid``).

Selinger's DP-LD (spec §4.5) restricted, as in Moerkotte & Neumann's DPccp (VLDB 2006), to the sets
that induce a connected subgraph of the query graph (:mod:`cepopt.joinorder.graph`): under ``avoid``
every prefix of an order is connected, so

    best(S) = PM(S) + min { best(S \\ {x}) : x ∈ S, S \\ {x} connected, x adjacent to S \\ {x} }

over the connected sets only, built size by size by extending each connected set with a neighbour
(every connected set of size k+1 is a connected set of size k plus a neighbour, so none is missed).
The work is the number of connected sets times the degree: n(n+1)/2 sets on a chain, about n² on a
cycle, but 2^(n-1) on a star and 2^n on a clique, where :func:`dp_ccp_ld` stops at ``max_sets``
(acyclic graphs: :mod:`cepopt.joinorder.ikkbz` is exact in polynomial time). Sets are Python ints,
so n is not bounded by a machine word.

Costs: any set-function cost of the order (Cost_ord, next-match ``m(S)``, the [R-SEQ-EXACT] order
term, the left-deep tree's Cost_tree with ``tree_ld``) through :func:`cepopt.joinorder.cost.log_node`;
no latency term (it depends on where ``last`` lies in the order, not on the sets).
"""

from __future__ import annotations

import math
import time

import numpy as np

from cepopt.joinorder.cost import leaf_log, log_node, logsumexp
from cepopt.joinorder.graph import adjacency, members, neighbours
from cepopt.joinorder.problem import Conjunct

__all__ = ["MAX_SETS", "SetLimit", "dp_ccp_ld", "node_logger"]

#: default limit on the connected sets kept (about 200 bytes each in Python dicts)
MAX_SETS = 2_000_000


class SetLimit(Exception):
    """More connected sets than the limit (``args[0]``: the count reached)."""



def node_logger(conj: Conjunct, *, tree: bool = False):
    """``f(parent_value, parent_mask, x)``: ln PM(parent ∪ {x}) (``parent_value`` = ln PM(parent), or
    None for the empty parent). Incremental (``a_x + Σ_{j∈parent} b_xj``) for the plain pairwise
    any-match cost, else :func:`log_node` on the members."""
    plain = conj.pairwise and not conj.next_match and (conj.leaf_filter or not tree)
    a = (conj.lc + conj.lf).tolist()
    b = conj.b

    def node(parent_value: float | None, parent_mask: int, x: int) -> float:
        if not plain:
            return log_node(conj, members(parent_mask | 1 << x), tree=tree)
        v = a[x] if parent_value is None else parent_value + a[x]
        for j in members(parent_mask):
            v += b[x, j]
        return float(v)

    return node


def dp_ccp_ld(conj: Conjunct, *, tree_ld: bool = False, deadline: float | None = None,
              max_sets: int = MAX_SETS) -> tuple[list[int], float, dict]:
    """The best cross-product-free order: (order, ln cost, stats). ``tree_ld``: scored by the tree cost
    of its left-deep tree (every leaf plus the prefixes of size >= 2). Raises :class:`SetLimit` past
    ``max_sets`` connected sets and :class:`cepopt.joinorder.dp.DpTimeout` past ``deadline``."""
    from cepopt.joinorder.dp import DpTimeout

    if conj.has_latency:
        raise ValueError("dp_ccp_ld: no latency term")
    n = conj.n
    adj = adjacency(conj.b)
    node = node_logger(conj, tree=tree_ld)
    # layer: mask -> (ln best(S) of the variable part, ln PM(S), last event)
    layer: dict[int, tuple[float, float, int]] = {}
    for i in range(n):
        pm = node(None, 0, i)
        layer[1 << i] = (-math.inf if tree_ld else pm, pm, i)
    history = [layer]
    total = n
    for _ in range(1, n):
        nxt: dict[int, tuple[float, float, int]] = {}
        for mask in sorted(layer):
            if deadline is not None and time.perf_counter() > deadline:
                raise DpTimeout
            best, pm, _ = layer[mask]
            for x in members(neighbours(adj, mask)):
                new = mask | 1 << x
                old = nxt.get(new)
                if old is None:
                    nxt[new] = (best, node(pm, mask, x), x)
                elif best < old[0]:
                    nxt[new] = (best, old[1], x)
            if total + len(nxt) > max_sets:  # inside the layer: one layer of a clique is C(n, k) sets
                raise SetLimit(total + len(nxt))
        total += len(nxt)
        layer = {m: (float(np.logaddexp(best, pm)), pm, x) for m, (best, pm, x) in nxt.items()}
        history.append(layer)
    full = (1 << n) - 1
    value = layer[full][0]
    if tree_ld:
        value = float(np.logaddexp(value, logsumexp([leaf_log(conj, i) for i in range(n)])))
    elif conj.paper_literal and conj.next_match:
        value += math.log(conj.window)  # §6.2 as printed: every term times W [R-NEXT]
    order: list[int] = []
    mask = full
    for k in range(n - 1, -1, -1):
        x = history[k][mask][2]
        order.insert(0, x)
        mask ^= 1 << x
    return order, value, {"connected_sets": total}
