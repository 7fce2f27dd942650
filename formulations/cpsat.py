"""Solve a CP-SAT model with stated parameters and map its status to cepopt's statuses.

Every CP-SAT method goes through :func:`solve_cpsat`, so the parameters that define a method (workers,
seed, time limit, LP-heavy search) are set in one place and reported in the method's stats.

CP-SAT's objective has int64 coefficients: every model turns its float or huge objective into
integers through one :class:`IntScale` (:func:`integer_scale`, :func:`fit_scale`), which also gives
the rounding's objective tolerance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

from cepopt.errors import CepoptError

__all__ = ["CpSatResult", "IntScale", "MAX_INT_SUM", "MAX_SCALING_ERROR", "cpsat_stats", "fit_scale", "integer_scale",
           "require_resolution", "solve_cpsat"]

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


@dataclass
class CpSatResult:
    status: str
    objective: float | None
    bound: float | None
    solver: cp_model.CpSolver
    wall_time: float
    parameters: dict

    def value(self, var) -> int:
        return self.solver.Value(var)


_STATUS = {
    cp_model.OPTIMAL: "optimal",
    cp_model.FEASIBLE: "feasible",
    cp_model.INFEASIBLE: "infeasible",
    cp_model.MODEL_INVALID: "error",
    cp_model.UNKNOWN: "timeout",
}


def solve_cpsat(model: cp_model.CpModel, *, time_limit: float | None, seed: int, workers: int = 2,
                lp_heavy: bool = False, hint: Iterable[tuple] | None = None, log: bool = False,
                extra: dict | None = None) -> CpSatResult:
    """Solve ``model``.

    Parameters: ``workers`` search workers (2 on this project's machines), ``seed`` the random seed,
    ``time_limit`` seconds (None: none). ``lp_heavy`` sets ``linearization_level=2`` and adds the
    ``max_lp`` subsolver: models whose strength lies in LP links (x <= y, fixed charges) stall at a
    10-25 % gap without it (DESIGN.md). ``hint`` is an iterable of (var, value) pairs. A "feasible"
    result that ran out of time has status "feasible"; "timeout" means no solution was found.
    """
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_search_workers = workers
    params.random_seed = int(seed)
    if time_limit is not None:
        params.max_time_in_seconds = float(time_limit)
    if lp_heavy:
        params.linearization_level = 2
        if workers > 1:
            params.extra_subsolvers.append("max_lp")
    params.log_search_progress = log
    for key, value in (extra or {}).items():
        setattr(params, key, value)
    if hint:
        model.ClearHints()
        for var, value in hint:
            model.AddHint(var, value)
    start = time.perf_counter()
    code = solver.Solve(model)
    wall = time.perf_counter() - start
    status = _STATUS.get(code, "error")
    has_solution = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    objective = solver.ObjectiveValue() if has_solution else None
    bound = solver.BestObjectiveBound() if code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN) else None
    used = {"workers": workers, "seed": int(seed), "time_limit": time_limit,
            "linearization_level": params.linearization_level,
            "extra_subsolvers": list(params.extra_subsolvers), **dict(extra or {})}
    return CpSatResult(status, objective, bound, solver, wall, used)


def cpsat_stats(model: cp_model.CpModel, result: CpSatResult) -> dict:
    """Model size and search figures worth reporting in a method's stats."""
    proto = model.Proto()
    return {
        "variables": len(proto.variables),
        "constraints": len(proto.constraints),
        "branches": result.solver.NumBranches(),
        "conflicts": result.solver.NumConflicts(),
        "solver_wall_time": result.wall_time,
        "cpsat_parameters": result.parameters,
    }
