"""ZSTREAM and ZSTREAM-ORD: the best tree over a fixed leaf order (Kolchinsky & Schuster §2.3, §7.1,
after Mei & Madden [35]; spec §4.7, §4.8).

ZSTREAM searches every tree topology whose leaves keep the pattern order (C_{n-1} trees): an interval
(matrix-chain) DP ``best[i][j] = PM(λ_i..λ_j) + min_k best[i][k] + best[k+1][j]`` (+ the latency split
term of §4.10), ties to the smallest k. It is scored with the paper's Cost_tree, not ZStream's own
operator cost model [R-ZS]. ZSTREAM-ORD runs the same DP on GREEDY's leaf order. O(n^3).

>>> from cepopt.joinorder.problem import from_arrays
>>> p = from_arrays(10, [1, 1, 1], [[1, 1, .01], [1, 1, 1], [.01, 1, 1]])
>>> zstream(p.single, [0, 1, 2])[0]
(0, (1, 2))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cepopt.joinorder.cost import leaf_log, log_node
from cepopt.joinorder.problem import Conjunct

__all__ = ["zstream"]

_TIE = 1e-12


def _lae(x: float, y: float) -> float:
    return float(np.logaddexp(x, y))


def zstream(conj: Conjunct, leaf_order: list[int]) -> tuple[Any, float]:
    """The best interval tree over ``leaf_order`` and its log cost."""
    lam = [int(i) for i in leaf_order]
    n = len(lam)
    node = [[0.0] * n for _ in range(n)]  # ln PM of interval i..j (leaf value when i == j)
    best = [[0.0] * n for _ in range(n)]
    cut = [[-1] * n for _ in range(n)]
    for i in range(n):
        node[i][i] = best[i][i] = leaf_log(conj, lam[i])
    for length in range(2, n + 1):
        for i in range(0, n - length + 1):
            j = i + length - 1
            node[i][j] = log_node(conj, lam[i:j + 1], tree=True)
    lat = conj.has_latency
    la = math.log(conj.alpha) if lat else 0.0
    pos_t = lam.index(conj.last) if lat else -1
    for length in range(2, n + 1):
        for i in range(0, n - length + 1):
            j = i + length - 1
            low, arg = math.inf, -1
            for k in range(i, j):
                c = _lae(best[i][k], best[k + 1][j])
                if lat:
                    if i <= pos_t <= k:
                        c = _lae(c, la + node[k + 1][j])
                    elif k + 1 <= pos_t <= j:
                        c = _lae(c, la + node[i][k])
                if c < low - _TIE * max(1.0, abs(low)) or arg < 0:
                    low, arg = c, k
            best[i][j] = _lae(node[i][j], low)
            cut[i][j] = arg

    def tree(i: int, j: int) -> Any:
        if i == j:
            return lam[i]
        k = cut[i][j]
        return (tree(i, k), tree(k + 1, j))

    return tree(0, n - 1), best[0][n - 1]
