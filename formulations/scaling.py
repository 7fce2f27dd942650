"""Scaling an objective so that a solver takes it faithfully, for the CP-SAT and the MILP models.

CP-SAT's objective has int64 coefficients: every CP-SAT model turns its float or huge objective into
integers through one :class:`IntScale` (:func:`integer_scale`, :func:`fit_scale`), which also gives the
rounding's objective tolerance. HiGHS and SCIP take a coefficient of 1e20 as infinite: a MILP objective
summing beyond :data:`MAX_OBJECTIVE` is solved times :func:`milp_scale` (a power of two, exact in floating
point). Either way, a scaled-down objective the solver cannot resolve is refused (:func:`require_resolution`).

No solver is imported here: the MILP path does not load CP-SAT.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from cepopt.errors import CepoptError

__all__ = ["IntScale", "MAX_INT_SUM", "MAX_OBJECTIVE", "MAX_SCALING_ERROR", "coefficient_total", "fit_scale",
           "integer_scale", "milp_scale", "require_resolution"]

#: Largest sum of |integer coefficients| a model may get: CP-SAT refuses (MODEL_INVALID) a linear
#: expression whose range passes int64max / 2 (measured: an objective of 2**62 is refused, 2**61 solves).
MAX_INT_SUM = 2 ** 61

#: A scaled-down objective (CP-SAT below scale 1, a MILP divided by a power of two) is trusted only while
#: its possible error stays within this share of the objective (solve()'s default cross-check tolerance).
MAX_SCALING_ERROR = 1e-6


def require_resolution(error: float, objective: float, solver: str) -> None:
    """Raise CepoptError when a scaled-down objective may be off by ``error``, more than MAX_SCALING_ERROR of
    itself: the coefficients span too wide a range for a faithful model in ``solver``."""
    if error > MAX_SCALING_ERROR * max(abs(objective), 1.0):
        raise CepoptError(f"objective coefficients too far apart for {solver}: scaled down to fit, the objective "
                          f"{objective:.6g} is known only within {error:.3g}; no faithful model")


@dataclass(frozen=True)
class IntScale:
    """Objective coefficients as CP-SAT integers: ``round(value * factor)``; ``exact``: integers taken
    as they are (nothing rounded)."""

    factor: float
    exact: bool = False

    def to_int(self, value) -> int:
        return round(value) if self.factor == 1 else round(float(value) * self.factor)

    def tolerance(self, terms: int, objective: float, floor: float = 1e-9) -> float:
        """Relative tolerance of an objective summed from at most ``terms`` rounded coefficients. Below
        scale 1, a CepoptError when that rounding is not negligible (:func:`require_resolution`)."""
        if self.exact:
            return floor
        error = terms / self.factor  # <= 0.5 / factor per coefficient, doubled as a margin
        if self.factor < 1:
            require_resolution(error, objective, "CP-SAT's 64-bit integers")
        return max(floor, error / max(abs(objective), 1.0))


def coefficient_total(values: Sequence) -> float:
    """Sum of ``|values|`` (a bound on every sum a model forms); a CepoptError when it overflows floats."""
    return _finite_total(sum(abs(float(v)) for v in values))


def _finite_total(total: float) -> float:
    if not math.isfinite(total):
        raise CepoptError("objective coefficients sum beyond floating point: no solver model for them")
    return total


def fit_scale(factor: float, total: float) -> float:
    """``factor``, or the largest power of ten below it that keeps ``total * factor`` (a bound on the
    sums the model forms) within :data:`MAX_INT_SUM`."""
    if _finite_total(total) * factor <= MAX_INT_SUM:
        return factor
    return 10.0 ** math.floor(math.log10(MAX_INT_SUM / total))


def _is_integer(v) -> bool:
    return v.is_integer() if isinstance(v, float) else Fraction(v).denominator == 1


def integer_scale(values: Sequence, target: float = 1e12, max_power: int | None = 12) -> IntScale:
    """How CP-SAT gets ``values`` while their sum fits int64 (:data:`MAX_INT_SUM`): integers exactly (scale
    1), fractions times the power of ten (1 to 10**max_power) that puts the largest near ``target``.
    Beyond int64 (weights of 1e20, 1e300) the finest power of ten below 1 that fits: rounding as little
    as 64-bit integers allow, which :meth:`IntScale.tolerance` accounts for."""
    sizes = [abs(float(v)) for v in values]
    total = coefficient_total(sizes)
    if total > MAX_INT_SUM:
        return IntScale(fit_scale(1, total))
    if all(_is_integer(v) for v in values):
        return IntScale(1, exact=True)
    power = max(0, math.floor(math.log10(target / max(sizes))))
    if max_power is not None:
        power = min(power, max_power)
    return IntScale(fit_scale(10 ** power, total))


#: Largest sum of |objective coefficients| handed to a MILP solver as it is (doubles still resolve units).
MAX_OBJECTIVE = 1e15


def milp_scale(total: float) -> float:
    """1 when ``total`` (the sum of |objective coefficients|) is within :data:`MAX_OBJECTIVE`, else the
    power of two (exact in floating point) that brings it within."""
    return 1 if total <= MAX_OBJECTIVE else 2.0 ** -math.ceil(math.log2(total / MAX_OBJECTIVE))
