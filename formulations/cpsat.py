"""CP-SAT: solve a model with stated parameters and map its status to cepopt's statuses.

Every CP-SAT method goes through :func:`solve_cpsat` (a ``CpModel``) or :func:`solve_model_cpsat` (a
:class:`~cepopt.formulations.model.Model`), so the parameters that define a method (workers, seed, time
limit, LP-heavy search) are set in one place and reported in the method's stats; the seed and time limit
are checked first (:mod:`cepopt.formulations.native`), the solver's output goes to stderr and its log
there too when asked.

CP-SAT's objective has int64 coefficients: a Model's objective becomes integers through one
:class:`~cepopt.formulations.scaling.IntScale` (:mod:`cepopt.formulations.scaling`): exactly when its
coefficients are integers whose sum fits (the proof is then exact), else rounded, with the bound widened
by the rounding (``bound_margin``) and the proof left to :func:`~cepopt.formulations.model.certify`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

from cepopt.errors import CepoptError

__all__ = ["CpSatResult", "cpsat_stats", "solve_cpsat", "solve_model_cpsat", "to_cpsat"]


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


def _parameters(solver: cp_model.CpSolver, *, time_limit, seed, workers, lp_heavy, log, extra) -> dict:
    from cepopt.formulations.native import check_seed, check_time_limit

    check_time_limit(time_limit)
    seed = check_seed(seed, solver="CP-SAT")
    params = solver.parameters
    params.num_search_workers = workers
    params.random_seed = seed
    if time_limit is not None:
        params.max_time_in_seconds = float(time_limit)
    if lp_heavy:
        params.linearization_level = 2
        if workers > 1:
            params.extra_subsolvers.append("max_lp")
    params.log_search_progress = bool(log)
    for key, value in (extra or {}).items():
        setattr(params, key, value)
    return {"workers": workers, "seed": seed, "time_limit": time_limit,
            "linearization_level": params.linearization_level,
            "extra_subsolvers": list(params.extra_subsolvers), **dict(extra or {})}


def _run(solver: cp_model.CpSolver, model: cp_model.CpModel) -> tuple[int, float]:
    from cepopt.formulations.native import native_output_to_stderr

    start = time.perf_counter()
    with native_output_to_stderr():
        code = solver.Solve(model)
    return code, time.perf_counter() - start


def solve_cpsat(model: cp_model.CpModel, *, time_limit: float | None, seed: int, workers: int = 2,
                lp_heavy: bool = False, hint: Iterable[tuple] | None = None, log: bool | None = None,
                extra: dict | None = None) -> CpSatResult:
    """Solve ``model``.

    Parameters: ``workers`` search workers (2 on this project's machines), ``seed`` the random seed
    (32-bit), ``time_limit`` seconds (None: none). ``lp_heavy`` sets ``linearization_level=2`` and adds the
    ``max_lp`` subsolver: models whose strength lies in LP links (x <= y, fixed charges) stall at a
    10-25 % gap without it (DESIGN.md). ``hint`` is an iterable of (var, value) pairs. ``log`` shows
    CP-SAT's search log on stderr (None: the session's setting). A "feasible" result ran out of time
    with a solution; "timeout" means no solution was found.
    """
    from cepopt.formulations.native import offer_export, settings

    solver = cp_model.CpSolver()
    used = _parameters(solver, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy,
                       log=settings().log if log is None else log, extra=extra)
    if hint:
        model.ClearHints()
        for var, value in hint:
            model.AddHint(var, value)
    offer_export(model, "cpsat")
    code, wall = _run(solver, model)
    status = _STATUS.get(code, "error")
    has_solution = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    objective = solver.ObjectiveValue() if has_solution else None
    bound = solver.BestObjectiveBound() if code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN) else None
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


# ------------------------------------------------------------------------------------------ Model -> CP-SAT
_BIG = 2**62  # stands for an absent bound (CP-SAT's domains are int64)


def _int_bound(value, up: bool) -> int:
    if value is None:
        return _BIG if up else -_BIG
    return math.floor(value) if up else math.ceil(value)


def _int_row(coefs: Sequence, lo, hi) -> tuple[list[int], object, object]:
    """A row with integer coefficients: fractional ones times the lcm of their denominators (exact)."""
    if all(isinstance(c, int) or (isinstance(c, float) and c.is_integer()) for c in coefs):
        return [int(c) for c in coefs], lo, hi
    fr = [Fraction(c) for c in coefs]
    m = math.lcm(*(f.denominator for f in fr))
    if m > 2**20:
        raise CepoptError("CP-SAT takes integer constraint coefficients: a row's fractions need a multiplier "
                          f"of {m}; use a MILP backend")
    return ([int(f * m) for f in fr], None if lo is None else Fraction(lo) * m,
            None if hi is None else Fraction(hi) * m)


def to_cpsat(model) -> tuple[cp_model.CpModel, object]:
    """The CP-SAT model of a :class:`~cepopt.formulations.model.Model` and the objective's IntScale.
    Rows of ones over binaries with upper side 1 become native at-most-one constraints; the rest stay
    linear (as an implication, x <= y would not reach the LP relaxation when presolve is off)."""
    from cepopt.formulations.scaling import integer_scale

    if not all(model.integer):
        raise CepoptError(f"CP-SAT takes integer variables only: model {model.name!r} has continuous ones "
                          "(use a MILP backend)")
    m = cp_model.CpModel()
    proto = m.Proto()
    lbs = [_int_bound(v, False) for v in model.lb]
    ubs = [_int_bound(v, True) for v in model.ub]
    binary = [lb == 0 and ub == 1 for lb, ub in zip(lbs, ubs, strict=True)]
    for name, lb, ub in zip(model.names, lbs, ubs, strict=True):
        var = proto.variables.add()
        var.name = name
        var.domain.extend([lb, ub])
    for cols, coefs, lo, hi in model.rows:
        ct = proto.constraints.add()
        if hi == 1 and (lo is None or lo <= 0) and all(c == 1 for c in coefs) and all(binary[j] for j in cols):
            ct.at_most_one.literals.extend(cols)
            continue
        ints, lo, hi = _int_row(coefs, lo, hi)
        ct.linear.vars.extend(cols)
        ct.linear.coeffs.extend(ints)
        low = sum(min(c * lbs[j], c * ubs[j]) for j, c in zip(cols, ints, strict=True))
        high = sum(max(c * lbs[j], c * ubs[j]) for j, c in zip(cols, ints, strict=True))
        ct.linear.domain.extend([max(_int_bound(lo, False), -_BIG, low) if lo is not None else max(low, -_BIG),
                                 min(_int_bound(hi, True), _BIG, high) if hi is not None else min(high, _BIG)])
    scale = integer_scale(model.objective)
    ints = [scale.to_int(c) for c in model.objective]
    nz = [i for i, c in enumerate(ints) if c]
    sign = -1 if model.sense == "max" else 1
    # maximise = minimise the negated objective with scaling factor -1 (as CpModel.maximize writes it)
    proto.objective.vars.extend(nz)
    proto.objective.coeffs.extend([sign * ints[i] for i in nz])
    proto.objective.scaling_factor = float(sign)
    return m, scale


def _margin(model, scale) -> float:
    """What rounding the objective may move it by, in scaled units: 0.5 per coefficient times the
    variable's largest magnitude."""
    if scale.exact:
        return 0.0
    total = 0.0
    for c, lb, ub in zip(model.objective, model.lb, model.ub, strict=True):
        if c:
            total += 0.5 * max(abs(float(lb if lb is not None else _BIG)), abs(float(ub if ub is not None else _BIG)))
    return total


def solve_model_cpsat(model, *, time_limit: float | None, seed: int, workers: int = 2, lp_heavy: bool = False,
                      extra: Mapping | None = None, hint: Sequence | None = None, log: bool = False):
    """Solve a :class:`~cepopt.formulations.model.Model` with CP-SAT (:func:`~cepopt.formulations.model.solve`)."""
    from cepopt.formulations.model import ModelResult, certify, unit_of

    start = time.perf_counter()
    cp, scale = to_cpsat(model)
    proto = cp.Proto()
    if hint is not None:
        proto.solution_hint.vars.extend(range(len(hint)))
        proto.solution_hint.values.extend([round(v) for v in hint])
    solver = cp_model.CpSolver()
    used = _parameters(solver, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy, log=log,
                       extra=dict(extra or {}))
    code, wall = _run(solver, cp)
    response = solver.ResponseProto()
    status = _STATUS.get(code, "error")
    stats = {"variables": len(proto.variables), "constraints": len(proto.constraints),
             "branches": response.num_branches, "conflicts": response.num_conflicts, "solver_wall_time": wall,
             "cpsat_parameters": used, "weight_scale": scale.factor}
    out = ModelResult(status, backend="cpsat", exact=scale.exact, stats=stats)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN) and proto.objective.vars:
        # the inner (integer) bound: exact, where the double BestObjectiveBound() rounds beyond 2**53
        inner = response.inner_objective_lower_bound
        if abs(inner) < 2**62:
            margin = _margin(model, scale)
            scaled = -inner + margin if model.sense == "max" else inner - margin
            out.bound = (Fraction(scaled) / Fraction(scale.factor) if scale.exact else scaled / scale.factor)
            out.bound = _tidy(out.bound) + model.constant
            out.bound_margin = margin / scale.factor
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        x = list(response.solution)
        out.x = x
        out.objective = model.value(x)
        inner_obj = sum(scale.to_int(model.objective[i]) * x[i] for i in range(len(x)) if model.objective[i])
        out.solver_objective = inner_obj / scale.factor + float(model.constant)
        if not proto.objective.vars:
            out.bound = out.objective if code == cp_model.OPTIMAL else None
        if status == "optimal" and not scale.exact and not certify(out.objective, out.bound, unit_of(model),
                                                                   model.sense):
            out.status = "feasible"
            out.message = ("optimal for the objective rounded to 64-bit integers (scale "
                           f"{scale.factor:g}); not proven for the exact one")
    elif code == cp_model.MODEL_INVALID:
        out.message = f"CP-SAT: invalid model ({cp.Validate()[:200]})"
    out.wall_time = time.perf_counter() - start
    return out


def _tidy(value):
    """An exact Fraction bound as an int when it is one."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value
