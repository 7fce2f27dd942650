"""Window DP: a large-neighbourhood local search for orders (the start plan of ``milp-order``, issue 22).

The cost of a prefix depends on its *set* only (spec §4.1), so reordering the events of w consecutive
positions p .. p+w-1 changes the prefixes inside the window and no other. The best reordering is a
DP-LD over the window's events alone: with B the events before the window, ``ln PM(B ∪ T) = ln PM(B) +
Σ_{x∈T} (a_x + Σ_{j∈B} b_xj) + Σ_{edges in T} b``, a join-order problem of w events whose rates absorb
the edges into B (:func:`cepopt.joinorder.dp_ld_fast.dp_ld_fast`, 2^w masks). Windows half overlap and
slide from the front to the back, sweep after sweep, until a sweep changes nothing: the result is
optimal under every window's reordering (a local optimum, not a proof).

Plain throughput cost only (:func:`cepopt.joinorder.dp_ld_fast.fast_applies`); with latency, the
windows holding the latency's last event are left as they are (their reordering changes the latency
term, which the window DP does not price). Next-match and [R-SEQ-EXACT] orders are returned unchanged.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from cepopt.clock import now
from cepopt.joinorder.cost import log_order_variable
from cepopt.joinorder.dp_ld_fast import dp_ld_fast
from cepopt.joinorder.problem import Conjunct

__all__ = ["window_dp"]


def _window_conjunct(conj: Conjunct, before: list[int], events: list[int]) -> Conjunct:
    """The w-event problem of reordering ``events`` after the prefix ``before`` (module docstring)."""
    idx = np.asarray(events, dtype=np.intp)
    edges_in = conj.b[np.ix_(idx, np.asarray(before, dtype=np.intp))].sum(axis=1) if before else 0.0
    return dataclasses.replace(
        conj, names=tuple(conj.names[i] for i in events), types=tuple(conj.types[i] for i in events),
        kleene=tuple(conj.kleene[i] for i in events), lc=conj.lc[idx] + edges_in, lf=conj.lf[idx].copy(),
        b=conj.b[np.ix_(idx, idx)].copy(), alpha=0.0, last=None, negations=(), order_blocks=())


def window_dp(conj: Conjunct, order: list[int], *, width: int = 16, max_sweeps: int = 20,
              deadline: float | None = None) -> list[int]:
    """``order`` improved window by window (module docstring); never worse than ``order``."""
    n = conj.n
    if conj.next_match or conj.order_blocks or n <= 1:
        return list(order)
    w = min(width, n)
    starts = sorted(set(range(0, n - w + 1, max(1, w // 2))) | {n - w})
    best = list(order)
    best_log = log_order_variable(conj, best)
    for _ in range(max_sweeps):
        changed = False
        for p in starts:
            if deadline is not None and now() > deadline:
                return best
            events = best[p:p + w]
            if conj.has_latency and conj.last in events:
                continue
            sub, _ = dp_ld_fast(_window_conjunct(conj, best[:p], events))
            cand = best[:p] + [events[i] for i in sub] + best[p + w:]
            val = log_order_variable(conj, cand)
            if val < best_log - 1e-12 * max(1.0, abs(best_log)):
                best, best_log, changed = cand, val, True
        if not changed:
            break
    return best
