"""II, Iterative Improvement (II-RANDOM, II-GREEDY): local search over orders (Kolchinsky & Schuster
§7.1, after Swami [47]; spec §4.4 [R-II]).

Moves are *swap* (exchange two positions, C(n,2) moves) and *3-cycle* (rotate three positions left or
right, 2·C(n,3) moves). From the start order, the neighbourhood is scanned (in a seeded random order, or
in the fixed order swaps-then-cycles) and the first strictly improving move is taken
(``c_new < c_old (1 - 1e-12)`` in cost space); the search stops at a true local minimum, after
``max_evals`` evaluations or at the deadline. ``restarts`` > 1 restarts from random orders and keeps
the best. ``mode="random_walk"`` tries ``max_evals`` random moves, keeping the improving ones.

>>> from cepopt.joinorder.problem import from_arrays
>>> p = from_arrays(1, [10, 20, 5], [[1, .1, 1], [.1, 1, .5], [1, .5, 1]])
>>> ii(p.single, [2, 0, 1], neighbour_order="fixed")
[0, 1, 2]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from cepopt.clock import now
from cepopt.errors import CepoptError
from cepopt.joinorder.cost import log_order_objective
from cepopt.joinorder.problem import Conjunct

__all__ = ["apply_move", "ii", "moves"]

_TIE = math.log1p(-1e-12)  # c_new < c_old (1 - 1e-12), in log space


def moves(n: int) -> list[tuple]:
    """Swaps (i, j) for i < j, then 3-cycles (i, j, k, 'L'|'R') for i < j < k."""
    out: list[tuple] = [(i, j) for i, j in itertools.combinations(range(n), 2)]
    for i, j, k in itertools.combinations(range(n), 3):
        out.append((i, j, k, "L"))
        out.append((i, j, k, "R"))
    return out


def apply_move(order: list[int], mv: tuple) -> list[int]:
    new = list(order)
    if len(mv) == 2:
        i, j = mv
        new[i], new[j] = new[j], new[i]
    else:
        i, j, k, d = mv
        if d == "L":
            new[i], new[j], new[k] = order[j], order[k], order[i]
        else:
            new[i], new[j], new[k] = order[k], order[i], order[j]
    return new


def ii(conj: Conjunct, start: list[int], *, seed: int = 0, neighbour_order: str = "random",
       restarts: int = 1, max_evals: int | None = None, time_limit: float | None = None,
       mode: str = "local_min", tree_ld: bool = False) -> list[int]:
    """Iterative improvement from ``start``; returns the best local minimum found."""
    if neighbour_order not in ("random", "fixed"):
        raise CepoptError(f"neighbour_order must be 'random' or 'fixed', got {neighbour_order!r}")
    if mode not in ("local_min", "random_walk"):
        raise CepoptError(f"mode must be 'local_min' or 'random_walk', got {mode!r}")
    if int(restarts) < 1:
        raise CepoptError(f"restarts must be >= 1, got {restarts!r}")
    rng = np.random.default_rng(seed)
    deadline = None if time_limit is None else now() + time_limit
    n = conj.n

    def cost(o: list[int]) -> float:
        return log_order_objective(conj, o, tree_ld)

    all_moves = moves(n)
    best: tuple[float, list[int]] | None = None
    evals = 0
    for rep in range(int(restarts)):
        order = list(start) if rep == 0 else [int(x) for x in rng.permutation(n)]
        c = cost(order)
        evals += 1
        if mode == "random_walk":
            budget = max_evals if max_evals is not None else 100 * n
            while evals < budget and all_moves and not _late(deadline):
                cand = apply_move(order, all_moves[int(rng.integers(len(all_moves)))])
                cc = cost(cand)
                evals += 1
                if cc < c + _TIE:
                    order, c = cand, cc
        else:
            order, c, evals = _descend(order, c, cost, all_moves, rng, neighbour_order, evals,
                                       max_evals, deadline)
        if best is None or c < best[0] + _TIE:
            best = (c, order)
        if _late(deadline) or (max_evals is not None and evals >= max_evals):
            break
    assert best is not None
    return best[1]


def _late(deadline: float | None) -> bool:
    return deadline is not None and now() > deadline


def _descend(order: list[int], c: float, cost: Callable[[list[int]], float], all_moves: list[tuple],
             rng: np.random.Generator, neighbour_order: str, evals: int, max_evals: int | None,
             deadline: float | None) -> tuple[list[int], float, int]:
    while True:
        seq = all_moves
        if neighbour_order == "random":
            seq = [all_moves[i] for i in rng.permutation(len(all_moves))]
        improved = False
        for mv in seq:
            cand = apply_move(order, mv)
            cc = cost(cand)
            evals += 1
            if cc < c + _TIE:
                order, c, improved = cand, cc, True
                break
            if (max_evals is not None and evals >= max_evals) or (evals % 256 == 0 and _late(deadline)):
                return order, c, evals
        if not improved:
            return order, c, evals
