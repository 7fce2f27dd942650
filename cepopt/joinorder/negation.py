"""Placing the absence checks of negated events into a plan of the positive part (§5.3, [R-NEG]).

Kolchinsky & Schuster §5.3: plan the positive part, then add the check of a negated event "at the
earliest point possible, when all positive events it depends on are already received": in an order,
right after the last event of ``dep`` (a transition to a rejecting state); in a tree, an NSEQ node
directly above the lowest node whose leaves include ``dep``. The check adds no cost term.

>>> from dataclasses import replace
>>> from cepopt.joinorder.problem import from_arrays
>>> conj = replace(from_arrays(1, [1, 1, 1], [[1] * 3] * 3, names="acd").single,
...                negations=(("b", 0b011),))  # dep(b) = {a, c}
>>> str(order_plan(conj, [1, 0, 2])), str(tree_plan(conj, ((0, 1), 2)))
('(c,a,NOT b,d)', '(NSEQ((a,c),NOT b),d)')
"""

from __future__ import annotations

from typing import Any

from cepopt.joinorder.plans import Order, Tree
from cepopt.joinorder.problem import Conjunct

__all__ = ["order_plan", "tree_plan"]


def order_plan(conj: Conjunct, order: list[int]) -> Order:
    """The Order of names for an index order, each negation checked after its last dependency."""
    negs = []
    for var, dep in conj.negations:
        mask = 0
        for k, i in enumerate(order, start=1):
            mask |= 1 << int(i)
            if dep & ~mask == 0:
                negs.append((var, k))
                break
    return Order(tuple(conj.names[int(i)] for i in order), tuple(negs))


def _mask(t: Any) -> int:
    if isinstance(t, tuple):
        return _mask(t[0]) | _mask(t[1])
    return 1 << int(t)


def tree_plan(conj: Conjunct, t: Any) -> Tree:
    """The Tree of names for an index tree (nested pairs), with NSEQ checks at the lowest node whose
    leaves cover each negation's dependencies (a unary node when that is a single leaf)."""

    def place(node: Any, pending: list[tuple[str, int]]) -> tuple[Any, list[tuple[str, int]]]:
        mask = _mask(node)
        covered = [(v, d) for v, d in pending if d & ~mask == 0]
        here = covered
        if isinstance(node, tuple):
            left, here = place(node[0], here)
            right, here = place(node[1], here)
            built: Any = Tree(left, right, tuple(v for v, _ in here))
        else:
            built = conj.names[int(node)]
            if here:
                built = Tree(built, None, tuple(v for v, _ in here))
        rest = [(v, d) for v, d in pending if (v, d) not in covered]
        return built, rest

    def place_root(node: Any) -> Tree:
        built, _ = place(node, list(conj.negations))
        return built if isinstance(built, Tree) else Tree(built)

    return place_root(t)
