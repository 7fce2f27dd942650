"""Solve a 0-1 program block by block (exact decomposition).

Two variables are linked when some row holds both; the connected components of that relation
(*blocks*) share no row, so the program is the sum of independent programs, one per block: the
optimum is the sum of the block optima, the bound the sum of the block bounds, and the result is
proven optimal only if every block is. Blocks of at most ``ENUMERATE`` variables (a candidate in
conflict with nobody, two rival candidates, ...) are solved by enumerating their 2^k vectors; the
others go to the solver, each with the time that is left.

The model is any object with ``names``, ``objective`` (maximised) and ``rows`` = [(coefs {index:
coef}, rhs)] meaning sum coef x <= rhs over 0-1 x (:class:`cepopt.formulations.sharon.LinearModel`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import product

__all__ = ["ENUMERATE", "blocks", "solve_by_blocks"]

#: blocks of at most this many variables are enumerated (2^3 = 8 vectors)
ENUMERATE = 3


def blocks(n: int, rows: Sequence[tuple[dict[int, int], int]]) -> list[list[int]]:
    """Connected components of the variables 0..n-1 under "appear in one row" (union-find)."""
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for coefs, _ in rows:
        it = iter(coefs)
        first = find(next(it, -1)) if coefs else -1
        for j in it:
            r = find(j)
            if r != first:
                parent[r] = first
    out: dict[int, list[int]] = {}
    for i in range(n):
        out.setdefault(find(i), []).append(i)
    return sorted(out.values(), key=lambda b: (-len(b), b[0]))


def _enumerate(objective: Sequence, rows: Sequence[tuple[dict[int, int], int]]) -> tuple[list[int], object]:
    """Best feasible 0-1 vector of a tiny program (all-zero is feasible for our <= rows, rhs >= 0)."""
    best, best_x = None, None
    for x in product((0, 1), repeat=len(objective)):
        if all(sum(c * x[i] for i, c in coefs.items()) <= rhs for coefs, rhs in rows):
            value = sum(c for c, xi in zip(objective, x, strict=True) if xi)
            if best is None or value > best:
                best, best_x = value, list(x)
    return best_x, best


def solve_by_blocks(model, solve: Callable, *, time_limit: float | None, hint: Sequence[int] | None = None,
                    make: Callable | None = None):
    """Solve ``model`` block by block.

    ``solve(sub_model, time_limit, hint)`` solves one block and returns (x or None, status, objective,
    bound, stats); ``make(names, objective, rows)`` builds a sub-model (default: the model's class).
    Returns (x or None, status, objective, bound, stats) for the whole model; stats gain ``blocks``,
    ``largest_block`` and ``enumerated_variables``, plus the solver stats of the largest block.
    """
    start = time.perf_counter()
    n = len(model.names)
    parts = blocks(n, model.rows)
    row_block: dict[int, list] = {}
    where = {}
    for b, members in enumerate(parts):
        for k, i in enumerate(members):
            where[i] = (b, k)
    for coefs, rhs in model.rows:
        if coefs:
            b = where[next(iter(coefs))][0]
            row_block.setdefault(b, []).append(({where[i][1]: c for i, c in coefs.items()}, rhs))
    make = make or (lambda names, objective, rows: type(model)(names, objective, rows))
    x = [0] * n
    objective, bound, statuses = 0, 0, []
    stats: dict = {"blocks": len(parts), "largest_block": len(parts[0]) if parts else 0, "enumerated_variables": 0}
    for b, members in enumerate(parts):
        rows = row_block.get(b, [])
        obj = [model.objective[i] for i in members]
        if len(members) <= ENUMERATE:
            bx, value = _enumerate(obj, rows)
            stats["enumerated_variables"] += len(members)
            status, bbound, bstats = "optimal", value, {}
        else:
            left = None if time_limit is None else max(time_limit - (time.perf_counter() - start), 0.01)
            sub = make([model.names[i] for i in members], obj, rows)
            bhint = None if hint is None else [hint[i] for i in members]
            bx, status, value, bbound, bstats = solve(sub, left, bhint)
            if status in ("error", "infeasible"):  # the solver failed: no answer for the whole model
                stats.update(bstats)
                return None, status, None, None, stats
            if bx is None:  # no solution in time: the all-zero vector is feasible (rows are <= with rhs >= 0)
                bx, value, status = [0] * len(members), 0, "timeout"
        if b == 0:
            stats.update(bstats)
        for i, xi in zip(members, bx, strict=True):
            x[i] = xi
        objective += value
        bound = None if bound is None or bbound is None else bound + bbound
        statuses.append(status)
    status = "optimal" if all(s == "optimal" for s in statuses) else "feasible"
    return x, status, objective, bound, stats
