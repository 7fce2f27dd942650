"""Solve a CP-SAT model with stated parameters and map its status to cepopt's statuses.

Every CP-SAT method goes through :func:`solve_cpsat`, so the parameters that define a method (workers,
seed, time limit, LP-heavy search) are set in one place and reported in the method's stats.

CP-SAT's objective has int64 coefficients: every model turns its float or huge objective into
integers through one :class:`~cepopt.formulations.scaling.IntScale` (:mod:`cepopt.formulations.scaling`),
which also gives the rounding's objective tolerance.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from ortools.sat.python import cp_model

__all__ = ["CpSatResult", "cpsat_stats", "solve_cpsat"]


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
