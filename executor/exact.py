"""Exact integers for the compiled trend kernels: residue lanes combined by the Chinese remainder theorem.

A kernel value (a count, a COUNT(E), a SUM) is a vector of float64 *lanes*. Lane 0 is a float
*shadow*: the same recurrence on the absolute values (attributes as |value|), an upper bound of every
result's magnitude within a relative error far below 2^-40 while it stays in the float range. Lanes
1..P hold the value modulo distinct primes p < 2^26, so that a product of two residues is an exact
float (< 2^52): addition and multiplication modulo p are exact float operations (:func:`lanes_for`,
:func:`moduli`). Only the results are reconstructed (:func:`crt`); intermediate values may wrap: the
map from integers to residues is a ring homomorphism, and every kernel operation is a sum or a product.
The number of lanes comes from a proven bound on the results (:func:`needed_lanes`): the shadow's
while it is below 2^1000, beyond that the log-space GRETA bound of :mod:`cepopt.executor.trend_bound`,
which neither overflows nor underflows; a kernel run with too few lanes is run again with enough
(:func:`cepopt.executor.trend_inputs.exact_run`), so counts are exact at any size.

Attributes enter SUM exactly: a float attribute is ``mant * 2^exp`` with an integer mantissa; over one
kernel call every value of a column is an integer multiple of ``2^emin`` (the smallest exponent), so
SUM is an exact integer in units of ``2^emin`` (:func:`attribute_lanes`), turned back into the float it
rounds to (:func:`scaled_value`, correctly rounded by Python's int / int division).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LANE_BITS", "AttrColumn", "attribute_lanes", "crt", "is_prime", "lanes_for", "largest_primes", "moduli",
           "needed_lanes", "scaled_value"]

#: primes below 2^26: a product of two residues is below 2^52, exact in a float64
PRIME_LIMIT = 1 << 26
#: bits of one residue lane (every prime is above 2^25)
LANE_BITS = 25
#: per limit, the largest primes below it found so far (descending)
_PRIMES: dict[int, list[int]] = {}


def is_prime(n: int) -> bool:
    """Miller-Rabin with the bases 2, 3, 5, 7, 11: deterministic below 2.1e12 (every modulus here)."""
    if n < 2 or n % 2 == 0:
        return n == 2
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7, 11):  # deterministic for n < 2.1e12
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def largest_primes(limit: int, count: int) -> list[int]:
    """The ``count`` largest primes below ``limit`` (more are found when needed): the moduli of the
    trend lanes (below 2^26) and of the sequence kernel's passes (below 2^31, executor/aseq.py)."""
    found = _PRIMES.setdefault(limit, [])
    cand = found[-1] - 2 if found else limit - 1
    while len(found) < count:
        if is_prime(cand):
            found.append(cand)
        cand -= 2
    return found[:count]


def _primes(count: int) -> list[int]:
    return largest_primes(PRIME_LIMIT, count)


def moduli(lanes: int) -> np.ndarray:
    """The moduli of ``lanes`` residue lanes, with 0 first for the shadow lane: float64[1 + lanes]."""
    return np.array([0.0] + [float(p) for p in _primes(lanes)], dtype=np.float64)


def lanes_for(bits: float) -> int:
    """Residue lanes whose product exceeds 2^bits (at least one)."""
    have, lanes = 0.0, 0
    while have < bits or lanes == 0:
        lanes += 1
        have += math.log2(_primes(lanes)[-1])
    return lanes


def needed_lanes(bound_log2: float) -> int:
    """Lanes to reconstruct signed values of magnitude up to 2^bound_log2 (one sign bit, one spare)."""
    return lanes_for(max(bound_log2, 0.0) + 2.0)


#: above this many lanes :func:`crt` sums precomputed coefficients (O(lanes) NumPy calls) instead of
#: Garner's digits (O(lanes^2) calls on int64 columns, faster for few lanes)
GARNER_LANES = 24


def crt(residues: np.ndarray) -> list[int]:
    """Signed integers from rows of residues (float64[..., lanes], lanes 1.. of a value; the shadow
    lane excluded): the x with |x| < M/2 congruent to every residue (M: the product of the moduli).
    Up to :data:`GARNER_LANES` lanes, Garner's mixed-radix digits are computed on int64 columns
    (every product is below 2^52), the digits combined as Python ints only when M exceeds int64;
    beyond, x = sum of residue_i * C_i mod M with C_i = (M / p_i) ((M / p_i)^-1 mod p_i)."""
    res = np.asarray(residues, dtype=np.float64)
    lanes = res.shape[-1]
    flat = res.reshape(-1, lanes).astype(np.int64)
    ps = [int(p) for p in moduli(lanes)[1:]]
    big = math.prod(ps)
    if lanes > GARNER_LANES:
        total = np.zeros(len(flat), dtype=object)
        for i, c in enumerate(_crt_coefficients(lanes)):
            total += flat[:, i].astype(object) * c
        total %= big
    else:
        total = _garner(flat, ps, big >= 2 ** 62)
    # big is odd (a product of odd primes): 2x > big iff x > big // 2
    return [x - big if x > big // 2 else x for x in total.tolist()]


def _garner(flat: np.ndarray, ps: list[int], wide: bool) -> np.ndarray:
    """x = a0 + a1 p0 + a2 p0 p1 + ..., the digits from the residues in turn."""
    digits = [flat[:, 0]]
    for i in range(1, len(ps)):
        pi = ps[i]
        x = flat[:, i]
        for j in range(i):
            x = (x - digits[j]) % pi * pow(ps[j], -1, pi) % pi
        digits.append(x)
    total = digits[-1].astype(object) if wide else digits[-1]
    for i in range(len(ps) - 2, -1, -1):
        total = total * ps[i] + (digits[i].astype(object) if wide else digits[i])
    return total


@functools.lru_cache(maxsize=16)
def _crt_coefficients(lanes: int) -> tuple[int, ...]:
    ps = [int(p) for p in moduli(lanes)[1:]]
    big = math.prod(ps)
    return tuple((big // p) * pow(big // p % p, -1, p) for p in ps)


@dataclass
class AttrColumn:
    """An attribute column of one kernel call as exact integers: value = mant * 2^(exp) per row with
    ``present`` rows (not missing), ``emin`` the common unit's exponent, ``is_float`` whether results
    print as floats (a float column), ``rank`` the order of the values (-1 missing) and ``values``
    the distinct values in rank order (MIN/MAX)."""

    mant: np.ndarray          # int64 (object when a mantissa exceeds int64)
    exp: np.ndarray           # int64
    present: np.ndarray       # bool
    emin: int
    is_float: bool
    rank: np.ndarray          # int64
    values: list
    shadow: np.ndarray        # float64 |value|


def _float_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = mant * 2^exp with an odd (or zero) int64 mantissa, vectorized for finite float64."""
    frac, e = np.frexp(x)
    mant = np.ldexp(frac, 53).astype(np.int64)
    exp = e.astype(np.int64) - 53
    nz = mant != 0
    low = np.where(nz, mant & -mant, 1)           # lowest set bit
    tz = np.log2(low.astype(np.float64)).astype(np.int64)
    return np.where(nz, mant >> tz, 0), np.where(nz, exp + tz, 0)


def attribute_column(values: np.ndarray, is_float_dtype: bool) -> AttrColumn:
    """An :class:`AttrColumn` from a column's values (NumPy int or float, or objects)."""
    import pandas as pd

    values = np.asarray(values)
    n = len(values)
    if values.dtype.kind in "iub":
        v = values.astype(np.int64)
        present = np.ones(n, dtype=bool)
        mant, exp, shadow = v, np.zeros(n, dtype=np.int64), np.abs(v.astype(np.float64))
    elif values.dtype.kind == "f":
        v = values.astype(np.float64)
        present = ~np.isnan(v)
        if np.isinf(v[present]).any():
            from cepopt.errors import CepoptError

            raise CepoptError("an aggregated attribute holds an infinite value")
        mant, exp = _float_parts(np.where(present, v, 0.0))
        shadow = np.abs(np.where(present, v, 0.0))
    else:
        present = ~np.asarray(pd.isna(values), dtype=bool) if n else np.zeros(0, dtype=bool)
        mant = np.zeros(n, dtype=object)
        exp = np.zeros(n, dtype=np.int64)
        shadow = np.zeros(n, dtype=np.float64)
        for i in np.flatnonzero(present):
            x = values[i]
            if isinstance(x, float | np.floating):
                fr, e = math.frexp(float(x))
                mi, ei = int(fr * 2 ** 53), e - 53
            else:
                mi, ei = int(x), 0
            mant[i], exp[i] = mi, ei
            shadow[i] = abs(float(x))
        if all(isinstance(m, int) and -2 ** 62 < m < 2 ** 62 for m in mant):
            mant = mant.astype(np.int64)
    nzp = present & (mant != 0)
    emin = int(exp[nzp].min()) if nzp.any() else 0
    emin = min(emin, 0)
    rank, distinct = _ranks(values, present)
    return AttrColumn(mant, exp, present, emin, is_float_dtype, rank, distinct, shadow)


def _ranks(values: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, list]:
    rank = np.full(len(values), -1, dtype=np.int64)
    if not present.any():
        return rank, []
    if values.dtype.kind in "iubf":
        uniq, inv = np.unique(values[present], return_inverse=True)
        rank[present] = inv
        return rank, [u.item() for u in uniq]
    present_vals = [values[i] for i in np.flatnonzero(present)]
    distinct = sorted(set(present_vals))
    pos = {v: j for j, v in enumerate(distinct)}
    rank[present] = [pos[v] for v in present_vals]
    return rank, [v.item() if hasattr(v, "item") else v for v in distinct]


def attribute_lanes(col: AttrColumn, mods: np.ndarray, out: np.ndarray | None = None,
                    chunk: int = 64) -> np.ndarray:
    """float64[rows, lanes] (into ``out`` when given): lane 0 the shadow |value|, lane i the value in
    units of 2^emin mod p_i (0 where missing). Int64 mantissas are reduced ``chunk`` lanes at a time
    (vectorized over rows and lanes, temporaries of rows x chunk)."""
    n = len(col.present)
    if out is None:
        out = np.zeros((n, len(mods)), dtype=np.float64)
    out[:, 0] = col.shadow
    if len(mods) == 1:
        return out
    shift = np.where(col.present, col.exp - col.emin, 0)
    if col.mant.dtype == object:
        for i in np.flatnonzero(col.present):
            big = int(col.mant[i]) << int(shift[i])
            for j in range(1, len(mods)):
                out[i, j] = float(big % int(mods[j]))
        return out
    mant = np.where(col.present, col.mant, 0)[:, None]
    top = int(shift.max()) if n else 0
    small = top == 0 and n and int(np.abs(mant).max()) < PRIME_LIMIT // 2  # |mant| below every prime
    for j0 in range(1, len(mods), chunk):
        ps = mods[j0:j0 + chunk]
        if small:
            out[:, j0:j0 + len(ps)] = np.where(mant < 0, mant + ps, mant)
            continue
        ps = ps.astype(np.int64)
        pow2 = np.ones((top + 1, len(ps)), dtype=np.int64)   # 2^s mod p per shift s and lane
        for s in range(1, top + 1):
            pow2[s] = pow2[s - 1] * 2 % ps
        out[:, j0:j0 + len(ps)] = mant % ps * pow2[shift] % ps
    return out


def scaled_value(units: int, emin: int, as_float: bool) -> Any:
    """An exact SUM in units of 2^emin as the result value: an int when it is one and the column is
    not a float column, else the float it rounds to (+-inf past the float range, as IEEE rounds)."""
    if emin >= 0:
        exact = units << emin
        return _float(exact, 1) if as_float else exact
    den = 1 << -emin
    if not as_float and units % den == 0:
        return units // den
    return _float(units, den)


def _float(num: int, den: int) -> float:
    try:
        return num / den
    except OverflowError:
        return math.inf if num > 0 else -math.inf
