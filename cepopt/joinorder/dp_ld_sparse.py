"""Sparse, bounded DP-LD: the exact order optimum beyond the dense DP's 2^n memory (issue 22).

DP-LD (spec §4.5) over the prefix *sets* of one size at a time, but only the sets that can still lie on
an order cheaper than a known one (``ub``, the log of a good order's variable cost, e.g. milp-order's
window-DP start). A set T survives when a lower bound on the whole variable cost of every order with
prefix T, ``best(T) ⊕ Σ_{j>|T|} lb_j(T)`` (``⊕`` in log space, :func:`dp_ld_sparse_kernels.completion_bounds`),
stays <= ub. Every set of an optimal order survives with its exact DP value (the bound is admissible,
and a pruned set's orders all cost more than ub >= the optimum), so the minimum over the last layer is
the optimum and the backtracked order an optimal one: a proof by DP, not by the MILP. Every order passes
through one set of each layer, so the least bound of a layer is a lower bound on the optimum: when it
meets ub to ``gap`` the incumbent is optimal to that precision.

Dominance is DP's own (two orders of one set: the cheaper one is kept). The cut bites when W is small
and selectivities strong (``hard``, ``small-window``: few sets stay under the incumbent); on ``dense``
and ``paper`` the layers grow like C(n, k) and the search stops at its ``max_sets`` / deadline: it then
returns the best known order with a *valid* lower bound (every order passes through one set of the
last completed layer: the minimum of their bounds, or ub).

Plain throughput cost only (:func:`cepopt.joinorder.dp_ld_fast.fast_applies`); variable cost = Σ of the
prefixes 1..n-1 (PM(all) is paid by every order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from cepopt.clock import now
from cepopt.joinorder.problem import Conjunct

__all__ = ["SparseResult", "sparse_dp_ld"]

#: default limit on the sets of one layer (about 100 bytes a set at its peak, extensions included: 4 M
#: sets ~ 0.4 GB)
MAX_SETS = 4_000_000
#: a layer that keeps more than this share of all sets of its size (and more than NO_CUT_MIN sets) shows
#: that the cut does not bite (``dense``, ``paper``): the search stops early rather than run into max_sets
NO_CUT_SHARE = 0.3
NO_CUT_MIN = 5_000
#: parent sets expanded between two looks at the deadline
_CHUNK = 100_000


@dataclass
class SparseResult:
    """``order``: an optimal order when ``proven``, else None; ``value``: its log variable cost (or ub);
    ``lower``: a proven lower bound on the log variable cost of every order."""

    order: list[int] | None
    value: float
    lower: float
    proven: bool
    stats: dict = field(default_factory=dict)


def _kernels():
    from cepopt.joinorder import dp_ld_sparse_kernels as k  # imports numba: only when the DP runs

    return k.expand_layer, k.best_per_set, k.completion_bounds, k.byte_tables


def sparse_dp_ld(conj: Conjunct, ub: float, *, incumbent: list[int] | None = None, gap: float = 0.0,
                 deadline: float | None = None, max_sets: int = MAX_SETS, stop_early: bool = True,
                 direction: str = "forward") -> SparseResult:
    """The exact order optimum among orders of log variable cost <= ``ub`` (module docstring).
    ``incumbent``: an order of cost ``ub``; with ``gap`` > 0 it is returned as proven when a layer's lower
    bound comes within ``gap`` of ub (ln UB - ln LB <= gap: optimal to that precision, the MILP's own
    criterion; on ``small-window`` the prefix costs after the first events fall below 1e-9 of the total,
    and no exact cut can tell the remaining orders apart). ``stop_early``: give up when a layer keeps a
    large share of all sets (NO_CUT_SHARE). ``direction="backward"``: the same search over the *suffix*
    sets (:func:`_reversed`), which bites where the last prefixes dominate the cost (``dense``: W large)."""
    n = conj.n
    if n <= 1 or ub == math.inf:
        raise ValueError("sparse_dp_ld needs n >= 2 and a finite ub")
    a = np.asarray(conj.lc + conj.lf, dtype=np.float64)
    b = np.asarray(conj.b, dtype=np.float64)
    if direction == "forward":
        return _search(a, b, ub, incumbent, gap, deadline, max_sets, stop_early)
    if direction != "backward":
        raise ValueError(f"direction must be forward or backward, got {direction!r}")
    a_rev, offset = _reversed(a, b)
    res = _search(a_rev, b, ub - offset, None if incumbent is None else incumbent[::-1], gap, deadline, max_sets,
                  stop_early)
    res.stats["direction"] = "backward"
    if res.order is None:
        return SparseResult(None, ub, min(res.lower + offset, ub), res.proven, res.stats)
    order = res.order[::-1]
    return SparseResult(order, ub if order == incumbent else res.value + offset, min(res.lower + offset, ub),
                        res.proven, res.stats)


def _reversed(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """The problem of the reversed order: prefix n - j of an order is all ∖ R_j, R_j its last j events,
    and ``ln PM(all ∖ R) = ln PM(all) + Σ_{x∈R} a'_x + Σ_{edges in R} b`` with ``a'_x = -(a_x + Σ_i b_xi)``.
    So the variable cost of an order is PM(all) times the variable cost of the reversed order in the
    problem (a', b): returns (a', ln PM(all))."""
    return -(a + b.sum(axis=1)), float(a.sum() + np.triu(b, 1).sum())


def _search(a: np.ndarray, b: np.ndarray, ub: float, incumbent: list[int] | None, gap: float,
            deadline: float | None, max_sets: int, stop_early: bool) -> SparseResult:
    """The layer-by-layer search on log rates ``a`` and edge logs ``b`` (module docstring)."""
    n = len(a)
    expand, dedupe, bounds, byte_tables = _kernels()
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    tab = byte_tables(b, n)
    half = a + 0.5 * b.sum(axis=1)
    full_gain = a + b.sum(axis=1)
    lall = float(a.sum() + np.triu(b, 1).sum())
    margin = ub + 1e-9 * max(1.0, abs(ub))
    masks = np.zeros(1, dtype=np.int64)
    vals = np.array([-np.inf])
    pms = np.zeros(1)
    layers: list[tuple[np.ndarray, np.ndarray]] = []
    lower = -math.inf
    sizes: list[int] = []
    stats: dict = {"layer_sets": sizes}
    start = now()
    max_out = 4 * max_sets  # extensions of one layer before deduplication
    for k in range(1, n):
        if deadline is not None and now() > deadline:
            stats.update(stopped="time", layer=k, time_s=now() - start)
            return SparseResult(None, ub, min(lower, ub), False, stats)
        parts, total = [], 0
        for lo in range(0, len(masks), _CHUNK):  # in chunks, so that the deadline is looked at often
            hi = lo + _CHUNK
            *part, count = expand(masks[lo:hi], vals[lo:hi], pms[lo:hi], a, tab, n, margin, max_out - total)
            total += count
            stop = "max_sets" if total > max_out else None
            if stop is None and deadline is not None and now() > deadline:
                stop = "time"
            if stop is not None:
                stats.update(stopped=stop, layer=k, time_s=now() - start)
                return SparseResult(None, ub, min(lower, ub), False, stats)
            parts.append(part)
        keys, tv, tp, tl = (np.concatenate([p[i] for p in parts]) for i in range(4))
        keys, tv, tp, tl = dedupe(keys, tv, tp, tl, np.argsort(keys, kind="stable"))
        lb = bounds(keys, tv, tp, a, tab, half, full_gain, lall, n)
        keep = lb <= margin
        keys, tv, tp, tl, lb = keys[keep], tv[keep], tp[keep], tl[keep], lb[keep]
        if len(keys) == 0:
            raise ValueError("sparse_dp_ld: ub is below the optimum (no order survives the cut)")
        # every order passes through one set of this layer: the least bound is a bound on all of them
        lower = max(lower, float(lb.min()))
        if incumbent is not None and ub - lower <= gap:
            stats.update(closed_by_gap=ub - lower, layer=k, time_s=now() - start)
            return SparseResult(list(incumbent), ub, min(lower, ub), True, stats)
        masks, vals, pms = keys, tv, tp
        layers.append((masks, tl))
        sizes.append(len(masks))
        if stop_early and len(masks) > NO_CUT_MIN and len(masks) > NO_CUT_SHARE * math.comb(n, k) and k < n - 1:
            stats.update(stopped="no_cut", layer=k, time_s=now() - start)
            return SparseResult(None, ub, min(lower, ub), False, stats)
    best = int(np.argmin(vals))
    value = float(vals[best])
    order = _backtrack(layers, int(masks[best]), n)
    stats.update(time_s=now() - start, max_layer=max(sizes), total_sets=sum(sizes))
    return SparseResult(order, value, value, True, stats)


def _backtrack(layers: list[tuple[np.ndarray, np.ndarray]], mask: int, n: int) -> list[int]:
    """The order behind ``mask`` (a set of the last layer): each layer's best last event, then the rest."""
    order: list[int] = []
    for masks, last in reversed(layers):
        x = int(last[int(np.searchsorted(masks, mask))])
        order.insert(0, x)
        mask ^= 1 << x
    full = (1 << n) - 1
    seen = sum(1 << x for x in order)
    order.append((full ^ seen).bit_length() - 1)
    return order
