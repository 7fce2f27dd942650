"""Brute force: score every plan of the plan space and keep the cheapest (the oracle of the tests).

Orders: all n! permutations; trees: all (2n-3)!! unordered bushy trees (spec E9). Every plan is
scored in one vectorised pass from the subset values PM(S) (the same closed form as the DPs, and
cross-checked against the plan-by-plan cost functions in the tests). Ties go to the first plan
enumerated. Under ``cross_products=avoid`` only the cross-product-free plans count
(:mod:`cepopt.joinorder.graph`). Limits: n <= 9 for orders, n <= 8 for trees.

>>> from cepopt.joinorder.problem import from_arrays
>>> p = from_arrays(1, [10, 20, 5], [[1, .1, 1], [.1, 1, .5], [1, .5, 1]])
>>> best_order(p.single)[0], best_tree(p.single)[0]
([0, 1, 2], ((0, 1), 2))
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

import numpy as np

from cepopt.joinorder.cost import all_node_logs, leaf_log
from cepopt.joinorder.graph import adjacency, connected
from cepopt.joinorder.plans import Tree
from cepopt.joinorder.problem import Conjunct

__all__ = ["MAX_ORDER_N", "MAX_TREE_N", "best_order", "best_tree", "tree_to_indices"]

MAX_ORDER_N = 9
MAX_TREE_N = 8
_TIE = 1e-12


def _lse(a: np.ndarray, axis: int = 1) -> np.ndarray:
    m = a.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _first_min(values: np.ndarray) -> int:
    low = values.min()
    return int(np.flatnonzero(values <= low + _TIE * max(1.0, abs(low)))[0])


def best_order(conj: Conjunct, *, tree_ld: bool = False) -> tuple[list[int], float]:
    """The best of the n! orders under ln(Cost_ord + α lat) (or the left-deep tree cost)."""
    n = conj.n
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    prefix = np.cumsum(np.left_shift(1, perms), axis=1)
    V = all_node_logs(conj, tree=tree_ld)
    leaves = np.array([leaf_log(conj, i) for i in range(n)])
    if tree_ld:
        const = float(_lse(leaves[None, :])[0])
        terms = [np.full((len(perms), 1), const)] + ([V[prefix[:, 1:]]] if n > 1 else [])
    else:
        terms = [V[prefix]]
        if conj.paper_literal and conj.next_match:
            terms = [terms[0] + math.log(conj.window)]
    if conj.has_latency:
        t, la = conj.last, math.log(conj.alpha)
        if not tree_ld:
            full = (1 << n) - 1
            pos = np.argmax(perms == t, axis=1)
            after = full ^ prefix[np.arange(len(perms)), pos]
            lr = np.full(1 << n, -np.inf)
            for h in range(n):
                lr[1 << h:2 << h] = np.logaddexp(lr[:1 << h], conj.lc[h])
            terms.append((la + lr[after])[:, None])
        elif n > 1:
            NV = V.copy()
            NV[1 << np.arange(n)] = leaves
            new = perms[:, 1:]
            has_t = (prefix[:, 1:] >> t) & 1 == 1
            side = np.where(new == t, NV[prefix[:, :-1]], np.where(has_t, leaves[new], -np.inf))
            terms.append(la + side)
    total = _lse(np.concatenate(terms, axis=1))
    if conj.avoid_cross and n > 1:
        # every event after the first has a neighbour among the events before it
        adj = np.array(adjacency(conj.b), dtype=np.int64)
        total[~((adj[perms[:, 1:]] & prefix[:, :-1]) != 0).all(axis=1)] = np.inf
    k = _first_min(total)
    return [int(x) for x in perms[k]], float(total[k])


@lru_cache(maxsize=8)
def _tree_shapes(n: int) -> tuple[np.ndarray, list[Any]]:
    """(internal nodes as (mask, left mask, right mask) per tree, the trees as index pairs)."""
    def gen(items: tuple[int, ...]):
        if len(items) == 1:
            yield items[0], []
            return
        first, rest = items[0], items[1:]
        for r in range(len(rest)):
            for sub in itertools.combinations(rest, r):
                other = tuple(x for x in rest if x not in sub)
                for lt, ln in gen((first, *sub)):
                    for rt, rn in gen(other):
                        lm = sum(1 << i for i in (first, *sub))
                        rm = sum(1 << i for i in other)
                        yield (lt, rt), ln + rn + [(lm | rm, lm, rm)]

    trees, nodes = [], []
    for t, ns in gen(tuple(range(n))):
        trees.append(t)
        nodes.append(ns)
    return np.array(nodes, dtype=np.int64).reshape(len(trees), max(n - 1, 0), 3), trees


def best_tree(conj: Conjunct) -> tuple[Any, float]:
    """The best of the (2n-3)!! unordered bushy trees under ln(Cost_tree + α Cost_tree^lat)."""
    n = conj.n
    leaves = np.array([leaf_log(conj, i) for i in range(n)])
    if n == 1:
        return 0, float(leaves[0])
    nodes, trees = _tree_shapes(n)
    V = all_node_logs(conj, tree=True)
    const = float(_lse(leaves[None, :])[0])
    terms = [np.full((len(trees), 1), const), V[nodes[:, :, 0]]]
    if conj.has_latency:
        t, la = conj.last, math.log(conj.alpha)
        NV = V.copy()
        NV[1 << np.arange(n)] = leaves
        in_left = (nodes[:, :, 1] >> t) & 1 == 1
        in_right = (nodes[:, :, 2] >> t) & 1 == 1
        side = np.where(in_left, NV[nodes[:, :, 2]], np.where(in_right, NV[nodes[:, :, 1]], -np.inf))
        terms.append(la + side)
    total = _lse(np.concatenate(terms, axis=1))
    if conj.avoid_cross:
        # every internal node's leaf set is connected (so its children share an edge)
        adj = adjacency(conj.b)
        ok = np.array([connected(adj, m) for m in range(1 << n)])
        total[~ok[nodes[:, :, 0]].all(axis=1)] = np.inf
    k = _first_min(total)
    return trees[k], float(total[k])


def tree_to_indices(t: Tree | str) -> Any:
    """A Tree over leaves "0", "1", ... as nested index pairs."""
    if isinstance(t, str):
        return int(t)
    if t.right is None:
        return tree_to_indices(t.left)
    return (tree_to_indices(t.left), tree_to_indices(t.right))
