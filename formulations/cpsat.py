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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from cepopt.clock import now
from cepopt.formulations.convert import BIG, to_cpsat
from cepopt.formulations.export import offer_export
from cepopt.formulations.linear import ModelResult, certify, unit_of
from cepopt.formulations.native import check_seed, check_time_limit, native_output_to_stderr, settings

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


class _Progress(cp_model.CpSolverSolutionCallback):
    """Tells the session's progress hook each incumbent and each new bound, mapped to the model's units."""

    def __init__(self, hook, primal, dual):
        super().__init__()
        self._hook, self._primal = hook, primal
        self.dual = lambda value: hook("dual", dual(value))

    def on_solution_callback(self) -> None:
        self._hook("primal", self._primal(self.ObjectiveValue()))


def _run(solver: cp_model.CpSolver, model: cp_model.CpModel, units=None) -> tuple[int, float]:
    """Solve; with a progress hook in the settings and ``units`` = (primal map, bound map) from CP-SAT's
    scaled objective to the model's, the hook hears every incumbent and bound (a model whose CP-SAT
    objective is not the method's objective passes no ``units``, and the hook hears nothing)."""
    hook = settings().progress
    callback = None
    if hook is not None and units is not None:
        hook("start", None)
        callback = _Progress(hook, *units)
        solver.best_bound_callback = callback.dual
    start = now()
    with native_output_to_stderr():
        code = solver.Solve(model, callback)
    return code, now() - start


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
    bound = solver.BestObjectiveBound() if code == cp_model.OPTIMAL or _has_bound(code, solver.ResponseProto()) \
        else None
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


def _margin(model, scale) -> float:
    """What rounding the objective may move it by, in scaled units: 0.5 per coefficient times the
    variable's largest magnitude."""
    if scale.exact:
        return 0.0
    total = 0.0
    for c, lb, ub in zip(model.objective, model.lb, model.ub, strict=True):
        if c:
            total += 0.5 * max(abs(float(lb if lb is not None else BIG)), abs(float(ub if ub is not None else BIG)))
    return total


def solve_model_cpsat(model, *, time_limit: float | None, seed: int, workers: int = 2, lp_heavy: bool = False,
                      extra: Mapping | None = None, hint: Sequence | None = None, log: bool = False):
    """Solve a :class:`~cepopt.formulations.model.Model` with CP-SAT (:func:`~cepopt.formulations.model.solve`)."""
    start = now()
    cp, scale = to_cpsat(model)
    proto = cp.Proto()
    if hint is not None:
        proto.solution_hint.vars.extend(range(len(hint)))
        proto.solution_hint.values.extend([round(v) for v in hint])
    if time_limit is not None:
        # the limit covers writing the proto (5.6 s for 380k variables at 10,000 Sharon queries)
        time_limit = time_limit - (now() - start)
        if time_limit <= 0:
            out = ModelResult("timeout", backend="cpsat", exact=scale.exact,
                              message="time limit reached while writing the CP-SAT model",
                              stats={"variables": len(proto.variables), "constraints": len(proto.constraints)})
            out.wall_time = now() - start
            return out
    solver = cp_model.CpSolver()
    used = _parameters(solver, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy, log=log,
                       extra=dict(extra or {}))
    units = (lambda v: v / scale.factor + float(model.constant), lambda v: _bound(model, scale, v)[0])
    code, wall = _run(solver, cp, units if proto.objective.vars else None)
    response = solver.ResponseProto()
    status = _STATUS.get(code, "error")
    stats = {"variables": len(proto.variables), "constraints": len(proto.constraints),
             "branches": response.num_branches, "conflicts": response.num_conflicts, "solver_wall_time": wall,
             "cpsat_parameters": used, "weight_scale": scale.factor}
    out = ModelResult(status, backend="cpsat", exact=scale.exact, stats=stats)
    if _has_bound(code, response) and proto.objective.vars:
        out.bound, out.bound_margin = _bound(model, scale, solver.BestObjectiveBound())
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        x = list(response.solution)
        out.x = x
        out.objective = model.value(x)
        inner_obj = sum(scale.to_int(model.objective[i]) * x[i] for i in range(len(x)) if model.objective[i])
        out.solver_objective = inner_obj / scale.factor + float(model.constant)
        if code == cp_model.OPTIMAL:  # CP-SAT's proof is exact in its integers: the bound is the optimum
            out.bound, out.bound_margin = (out.objective, 0.0) if scale.exact else \
                _bound(model, scale, float(inner_obj))
        if status == "optimal" and not scale.exact and not certify(out.objective, out.bound, unit_of(model),
                                                                   model.sense):
            out.status = "feasible"
            out.message = ("optimal for the objective rounded to 64-bit integers (scale "
                           f"{scale.factor:g}); not proven for the exact one")
    elif code == cp_model.MODEL_INVALID:
        out.message = f"CP-SAT: invalid model ({cp.Validate()[:200]})"
    out.wall_time = now() - start
    return out


def _has_bound(code, response) -> bool:
    """Does CP-SAT's response carry a proven objective bound? A solve stopped before the model was loaded
    (a time limit shorter than the load: 200k variables, 0.3 s) answers UNKNOWN with the proto's default
    bound 0, which is no bound at all (it once proved a 20,000-query Sharon plan "optimal")."""
    if code == cp_model.FEASIBLE:
        return True
    return code == cp_model.UNKNOWN and response.deterministic_time > 0


def _bound(model, scale, scaled: float):
    """(a bound valid for the exact objective, its margin) from CP-SAT's bound on the scaled objective
    (a double: widened by two of its ulps, then by the rounding of the coefficients)."""
    margin = _margin(model, scale) + 2 * math.ulp(scaled)
    value = scaled + margin if model.sense == "max" else scaled - margin
    if scale.exact:  # integers: round outwards to an exact int
        value = math.ceil(value) if model.sense == "max" else math.floor(value)
        return value + model.constant, margin
    return value / scale.factor + model.constant, margin / scale.factor
