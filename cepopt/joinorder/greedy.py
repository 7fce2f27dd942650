"""GREEDY: build the order one event at a time, each time taking the event that minimises the cost
function (Kolchinsky & Schuster §7.1, after Swami [47]; spec §4.3 [R-GREEDY]).

The next event x minimises the next prefix's ``PM(S ∪ {x})`` (``m(S ∪ {x})`` under next-match), plus
``α W Σ_{i∉S∪{x}} r_i`` when x is the latency's last event. Ties go to the smallest index. O(n^2).
With ``adj`` (neighbour bitmasks of the query graph, :func:`cepopt.joinorder.graph.adjacency`) every
next event is a neighbour of the prefix where one is left: an order without cross products on a
connected graph (the fallback of the cross_products=avoid methods).
With ``seq_temporal="exact"`` the growth of the prefix also carries the change of the [R-SEQ-EXACT]
order term, ``ln P(S ∪ {x}) - ln P(S)`` (e.g. 1/(k+1) for an event extending a chain of k).

>>> from cepopt.joinorder.problem import from_arrays
>>> p = from_arrays(1, [10, 20, 5], [[1, .1, 1], [.1, 1, .5], [1, .5, 1]])
>>> greedy(p.single)
[2, 0, 1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from cepopt.joinorder.cost import order_term
from cepopt.joinorder.graph import neighbours
from cepopt.joinorder.problem import Conjunct

__all__ = ["greedy"]

_TIE = 1e-12


def greedy(conj: Conjunct, *, adj: Sequence[int] | None = None) -> list[int]:
    n = conj.n
    chosen: list[int] = []
    free = np.ones(n, dtype=bool)
    growth = conj.lf.copy()  # Σ of ln sel between x and the chosen events, plus x's filter
    low = math.inf  # min ln(W r) of the prefix (next-match)
    lat_log = None
    singles = np.left_shift(np.int64(1), np.arange(n, dtype=np.int64))
    mask = 0
    if conj.has_latency:
        lat_log = math.log(conj.alpha)
    while len(chosen) < n:
        if conj.next_match:
            score = growth + np.minimum(conj.lc, low)
        else:
            score = growth + conj.lc
        if conj.order_blocks:
            score = score + order_term(conj, mask | singles) - order_term(conj, [mask])[0]
        if lat_log is not None and free[conj.last]:
            rest = free.copy()
            rest[conj.last] = False
            if rest.any():
                lr = conj.lc[rest]
                m = lr.max()
                extra = lat_log + m + math.log(np.exp(lr - m).sum())
                score = score.copy()
                score[conj.last] = np.logaddexp(score[conj.last], extra)
        score = np.where(free, score, np.inf)
        if adj is not None and chosen:
            near = _bits(neighbours(adj, mask), n)
            if near.any():
                score = np.where(near, score, np.inf)
        best = score.min()
        x = int(np.flatnonzero(score <= best + _TIE * max(1.0, abs(best)))[0])
        chosen.append(x)
        free[x] = False
        mask |= 1 << x
        growth = growth + conj.b[x]
        low = min(low, float(conj.lc[x]))
    return chosen


def _bits(mask: int, n: int) -> np.ndarray:
    """bool[n]: the events of ``mask``."""
    return np.array([(mask >> i) & 1 for i in range(n)], dtype=bool)
