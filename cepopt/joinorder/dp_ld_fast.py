"""DP-LD compiled (numba), one pass over the masks in increasing order, with an exact upper-bound cut
(issue 22: n = 26 in seconds).

Same recursion as :func:`cepopt.joinorder.dp.dp_ld` (spec §4.5): ``best[S] = PM(S) ⊕ min_{x∈S}
best[S∖{x}]`` in log space (``⊕`` = logaddexp). ``S∖{x} < S``, so increasing mask order is a valid
order of evaluation, and no popcount layers (a 2^n index array) are needed: memory is the one array
``best`` (8 bytes a subset, 0.5 GB at n = 26).

High halves of one popcount are independent (they depend on lower popcounts only): they run in parallel
(``prange``). ``ln PM(S)`` is not stored either: a mask is split into a high and a low half, ``ln PM(S) = VL[low] +
VH[high] + cross(low, high)``, where the cross term of the edges between the halves is a table over the
low half rebuilt once per high half (O(2^n) in all).

**Upper-bound cut.** ``ub`` is the log cost of a known order (a good heuristic's). An order with S as a
prefix costs at least ``PM(S) ⊕ best[S∖x]`` for its last x, so a mask with ``PM(S) > ub`` or a value above
``ub`` never lies on an optimal order: it is set to +inf without its min being taken. The masks of an
optimal order keep their exact values, so the optimum and its order are exact.

Throughput cost only (Cost_ord of the any-match strategy without latency or the [R-SEQ-EXACT] order
term); :func:`cepopt.joinorder.dp.dp_ld` covers the rest. Ties go to the smallest last element, as there.
"""

from __future__ import annotations

import math
import time

import numpy as np

from cepopt.clock import now
from cepopt.joinorder.dp import DpTimeout, popcount_layers
from cepopt.joinorder.problem import Conjunct

__all__ = ["dp_ld_fast", "fast_applies", "warm_kernels"]

_TIE = 1e-12
#: from this n on the layers run on every core (by default)
_PARALLEL_N = 20
_KERNEL: tuple | None = None


def fast_applies(conj: Conjunct, tree_ld: bool = False) -> bool:
    """Does the compiled DP model this conjunct's cost (plain Cost_ord)?"""
    return not (tree_ld or conj.has_latency or conj.next_match or conj.order_blocks)


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        from cepopt.joinorder import dp_ld_kernels as k  # imports numba: only when a DP runs

        _KERNEL = (k.half_table, k.run_serial, k.run_parallel)
    return _KERNEL


def warm_kernels(n: int = 2) -> float:
    """Load (or compile) the kernels that :func:`dp_ld_fast` runs for ``n`` events, on a 2-event instance,
    before a caller's deadline starts; the seconds it took."""
    from cepopt.joinorder.problem import from_arrays

    start = time.perf_counter()
    dp_ld_fast(from_arrays(1, [1.0, 2.0], [[1, .5], [.5, 1]]).single, parallel_from=0 if n >= _PARALLEL_N else 3)
    return time.perf_counter() - start


def dp_ld_fast(conj: Conjunct, *, ub: float = math.inf, deadline: float | None = None,
               stats: dict | None = None, parallel_from: int = _PARALLEL_N) -> tuple[list[int], float]:
    """The optimal order and its log cost ln Cost_ord (plain throughput cost, :func:`fast_applies`).
    ``ub``: the log cost of a known order, or larger (inf: no cut); an order must cost at most ``ub``
    (a margin of 1e-9 is added, so the known order itself survives). From ``parallel_from`` events on, the
    layers run on every core."""
    n = conj.n
    if n == 1:
        return [0], float(conj.a[0])
    half_table, serial, parallel = _kernel()
    run = parallel if n >= parallel_from else serial
    c = np.ascontiguousarray(conj.lc + conj.lf, dtype=np.float64)
    b = np.ascontiguousarray(conj.b, dtype=np.float64)
    L = min(n - 1, max(1, (n + 1) // 2))
    VL = half_table(c, b, 0, L)
    VH = half_table(c, b, L, n - L)
    best = np.empty(1 << n)
    margin = ub + 1e-9 * max(1.0, abs(ub)) if math.isfinite(ub) else math.inf
    his, starts = popcount_layers(n - L)
    cut = 0
    for k in range(n - L + 1):  # high halves by popcount: each layer depends on the ones below
        if deadline is not None and now() > deadline:
            raise DpTimeout
        cut += run(c, b, n, L, best, margin, his[starts[k]:starts[k + 1]].astype(np.int64), VL, VH)
    full = (1 << n) - 1
    if not math.isfinite(best[full]):
        raise ValueError("dp_ld_fast: ub is below the optimum (no order survives the cut)")
    if stats is not None:
        stats["masks_cut"] = stats.get("masks_cut", 0) + int(cut)
    return _reconstruct(best, n), float(best[full])


def _reconstruct(best: np.ndarray, n: int) -> list[int]:
    order: list[int] = []
    S = (1 << n) - 1
    while S & (S - 1):
        cands = [(float(best[S ^ (1 << x)]), x) for x in range(n) if S >> x & 1]
        low = min(v for v, _ in cands)
        x = next(x for v, x in cands if v <= low + _TIE * max(1.0, abs(low)))
        order.insert(0, x)
        S ^= 1 << x
    order.insert(0, S.bit_length() - 1)
    return order
