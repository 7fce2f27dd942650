"""Solve a model block by block (exact decomposition).

Two variables are linked when some row holds both; the connected components of that relation
(*blocks*) share no row, so the model is the sum of independent models, one per block: the optimum is
the sum of the block optima, the bound the sum of the block bounds, and the result is proven optimal
only if every block is. Blocks of at most ``ENUMERATE`` binary variables (a candidate in conflict with
nobody, two rival candidates, ...) are solved by enumerating their 2^k vectors in exact arithmetic; the
others go to the solver, each with the time that is left (a model that is one block but for a few
variables goes to it whole: :data:`WHOLE_SHARE`). A block the time limit leaves unsolved keeps
its start (the model's hint, else all-zero when that is feasible) and the trivial bound of its
variables' ranges, so the whole model still has a solution and a valid bound.

The model is a :class:`~cepopt.formulations.model.Model`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import product

from cepopt.clock import now
from cepopt.formulations.linear import ModelResult

__all__ = ["ENUMERATE", "WHOLE_SHARE", "blocks", "solve_by_blocks"]

#: blocks of at most this many variables are enumerated (2^3 = 8 vectors)
ENUMERATE = 3

#: a model whose largest block holds all but at most this share of its variables is solved whole:
#: copying the block out costs Python time per nonzero (1.6 s of CPU for 387,577 of 387,583 variables,
#: 2.2 million nonzeros) and saves the solver nothing
WHOLE_SHARE = 0.01


def blocks(n: int, rows: Sequence[tuple]) -> list[list[int]]:
    """Connected components of the variables 0..n-1 under "appear in one row"; ``rows`` are (cols, ...)
    tuples. Largest first (ties: smallest first member)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if n == 0:
        return []
    # link each row's columns to its first column
    firsts, others = [], []
    for row in rows:
        cols = row[0]
        if len(cols) > 1:
            firsts.extend([cols[0]] * (len(cols) - 1))
            others.extend(cols[1:])
    graph = coo_matrix((np.ones(len(firsts)), (np.asarray(firsts, dtype=np.int64), np.asarray(others, dtype=np.int64))),
                       shape=(n, n))
    count, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")
    parts = np.split(order, np.flatnonzero(np.diff(labels[order])) + 1)
    return sorted((p.tolist() for p in parts), key=lambda b: (-len(b), b[0]))


def _row_ok(cols, coefs, lo, hi, x) -> bool:
    s = sum(c * x[j] for j, c in zip(cols, coefs, strict=True))
    return (lo is None or s >= lo) and (hi is None or s <= hi)


def _enumerate(sub) -> tuple[list[int] | None, object]:
    """Best feasible 0-1 vector of a tiny binary model (exact arithmetic), or (None, None) if none."""
    best, best_x = None, None
    better = (lambda a, b: a > b) if sub.sense == "max" else (lambda a, b: a < b)
    for x in product((0, 1), repeat=len(sub.names)):
        if all(_row_ok(*row, x) for row in sub.rows):
            value = sub.value(x)
            if best is None or better(value, best):
                best, best_x = value, list(x)
    return best_x, best


def _trivial_bound(sub):
    """The objective's best over the variables' boxes (None when a box is open on the good side)."""
    total = sub.constant
    for c, lb, ub in zip(sub.objective, sub.lb, sub.ub, strict=True):
        if not c:
            continue
        good = ub if (c > 0) == (sub.sense == "max") else lb
        if good is None:
            return None
        total += c * good
    return total


def _start(sub) -> list | None:
    """A feasible vector for an unsolved block: its hint, else all-zero, when feasible."""
    for x in (sub.hint, [0] * len(sub.names)):
        if x is not None and all((lb is None or lb <= v) and (ub is None or v <= ub)
                                 for v, lb, ub in zip(x, sub.lb, sub.ub, strict=True)) \
                and all(_row_ok(*row, x) for row in sub.rows):
            return list(x)
    return None


def _row_blocks(model, parts) -> dict[int, list[int]]:
    where = {}
    for b, members in enumerate(parts):
        for i in members:
            where[i] = b
    out: dict[int, list[int]] = {}
    for r, row in enumerate(model.rows):
        if row[0]:
            out.setdefault(where[row[0][0]], []).append(r)
    return out


def solve_by_blocks(model, solve: Callable, *, time_limit: float | None, deadline: float | None = None):
    """Solve ``model`` block by block; ``solve(sub_model, time_left)`` solves one block and returns a
    :class:`~cepopt.formulations.model.ModelResult`. Returns the whole model's ModelResult; its stats gain
    ``blocks``, ``largest_block`` and ``enumerated_variables``, plus the solver stats of the largest
    block. ``deadline`` (a ``now()`` value) overrides ``time_limit``."""
    start = now()
    if deadline is None and time_limit is not None:
        deadline = start + time_limit
    n = len(model.names)
    parts = blocks(n, model.rows)
    stats: dict = {"blocks": len(parts), "largest_block": len(parts[0]) if parts else 0, "enumerated_variables": 0}
    if len(parts) > 1 and n - len(parts[0]) <= WHOLE_SHARE * n:
        parts = [list(range(n))]
    row_block = _row_blocks(model, parts) if len(parts) > 1 else {}
    x = [0] * n
    out = ModelResult("optimal", objective=model.constant, bound=model.constant, x=x, exact=True)
    binary = model.is_binary()
    for b, members in enumerate(parts):
        sub = model if len(parts) == 1 else model.submodel(members, row_block.get(b, []))
        if binary and len(members) <= ENUMERATE:
            bx, value = _enumerate(sub)
            stats["enumerated_variables"] += len(members)
            res = ModelResult("optimal" if bx is not None else "infeasible", value, value, bx, exact=True)
        else:
            left = None if deadline is None else deadline - now()
            if left is None:
                res = solve(sub, None)
            else:
                res = solve(sub, max(left, 0.01)) if left > 0 else ModelResult("timeout")
            if b == 0:
                stats.update(res.stats)
            if res.status in ("error", "infeasible"):  # no answer for the whole model
                return ModelResult(res.status, message=res.message, stats={**res.stats, **stats})
            if res.x is None:  # no solution in time: a feasible start and the trivial bound
                bx = _start(sub)
                if bx is None:
                    return ModelResult("timeout", message=res.message, stats={**res.stats, **stats})
                res = ModelResult("timeout", sub.value(bx), _best_bound(res.bound, _trivial_bound(sub), sub.sense),
                                  bx, message=res.message)
        for i, xi in zip(members, res.x, strict=True):
            x[i] = xi
        out.objective += res.objective - sub.constant
        out.bound = None if out.bound is None or res.bound is None else out.bound + res.bound - sub.constant
        out.exact = out.exact and res.exact
        out.bound_margin += res.bound_margin
        if res.status != "optimal":
            out.status = "feasible"
        if res.message and not out.message:
            out.message = res.message
    out.stats = stats
    return out


def _best_bound(a, b, sense: str):
    if a is None or b is None:
        return a if b is None else b
    return min(a, b) if sense == "max" else max(a, b)
