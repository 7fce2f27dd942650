"""The numba kernels of :mod:`cepopt.joinorder.dp_ld_fast` (a module of their own: importing it loads numba)."""

from __future__ import annotations

import math
import types

import numba
import numpy as np

__all__ = ["half_table", "run_parallel", "run_serial"]


@numba.njit(cache=True)
def half_table(c, b, lo_bit, width):
    """ln PM of every subset of the events lo_bit .. lo_bit + width - 1 (edges inside only)."""
    out = np.zeros(1 << width)
    for m in range(1, 1 << width):
        h = 63
        while not (m >> h) & 1:
            h -= 1
        prev = m ^ (1 << h)
        v = out[prev] + c[lo_bit + h]
        rest = prev
        while rest:
            low = rest & -rest
            j = 0
            while (low >> j) != 1:
                j += 1
            v += b[lo_bit + h, lo_bit + j]
            rest ^= low
        out[m] = v
    return out


def _run(c, b, n, L, best, ub, his, VL, VH):
    """Fill best[] for every mask whose high half is in ``his`` (one popcount layer of high halves:
    they depend on lower layers only, so they run in parallel); returns the masks cut by ub."""
    inf = np.inf
    cuts = np.zeros(len(his), dtype=np.int64)
    for t in numba.prange(len(his)):
        hi = his[t]
        whi = np.zeros(L)
        for i in range(L):
            s = 0.0
            for j in range(n - L):
                if (hi >> j) & 1:
                    s += b[i, L + j]
            whi[i] = s
        cross = np.zeros(1 << L)
        for m in range(1, 1 << L):
            low = m & -m
            i = 0
            while (low >> i) != 1:
                i += 1
            cross[m] = cross[m ^ low] + whi[i]
        base = hi << L
        vh = VH[hi]
        cut = 0
        for lo in range(1 << L):
            S = base | lo
            if S == 0:
                best[0] = -inf
                continue
            v = VL[lo] + vh + cross[lo]
            if v > ub:
                best[S] = inf
                cut += 1
                continue
            cur = inf
            rest = S
            while rest:
                bit = rest & -rest
                p = best[S ^ bit]
                if p < cur:
                    cur = p
                rest ^= bit
            if cur == -inf:
                val = v
            elif cur == inf:
                val = inf
            else:
                hi_v = v if v > cur else cur
                lo_v = cur if v > cur else v
                val = hi_v + math.log1p(math.exp(lo_v - hi_v))
            if val > ub:
                val = inf
                cut += 1
            best[S] = val
        cuts[t] = cut
    return cuts.sum()



def _renamed(fn, name: str):
    """``fn`` under another name. Numba names a kernel's cache files by the function's name and line, and
    its index does not tell a parallel compilation from a serial one: under one name the two variants
    overwrite each other's entry, and a process loads the serial code for the parallel kernel."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = name
    return copy


run_serial = numba.njit(cache=True)(_run)
run_parallel = numba.njit(parallel=True, cache=True)(_renamed(_run, "_run_parallel"))
